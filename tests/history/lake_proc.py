"""Child processes of the lake tests (run as `python -m tests.history.lake_proc MODE ...`).

publisher DB LAKE TAG ROUNDS N READY   once READY exists: ROUNDS times, record N tool calls of session TAG
                                       (ids TAG-c0, TAG-c1, ... over two dates) into its own history file
                                       DB and publish it to LAKE; print the rows each publish reported
querier LAKE STOP READY                query the (existing) lake in a loop (touching READY after the first query)
                                       until STOP exists; print queries, errors, and any query that saw a
                                       tool call twice or fewer rows than an earlier query
recorder DB TAG ROUNDS N DONE          ROUNDS times record N tool calls of session TAG into DB (a store
                                       opened and closed each round), then touch DONE
republisher DB LAKE DONE               publish DB to LAKE again and again until a publish that started
                                       after DONE existed; print the tool calls each publish reported
crash DB LAKE POINT                    publish DB to LAKE but die (os._exit, like a SIGKILL: no cleanup)
                                       at POINT: `claimed` (watermark pending, nothing written),
                                       `written` (temporary parts written, none renamed), `placed-one` (one
                                       part renamed into place, the rest not) or `placed` (every part in
                                       place, the watermark not yet moved)
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from synapse_nb.history import lake
from synapse_nb.history.reader import History, history
from synapse_nb.history.store import HistoryStore
from tests.history.history_events import tool_call

WAIT = 60.0
DAY1 = dt.datetime(2026, 11, 22, 23, 0, 0)


def when(i: int) -> dt.datetime:
    """Tool call `i`'s start: even ones on one date, odd ones on the next (two partitions per publish)."""
    return DAY1 + dt.timedelta(hours=2 * (i % 2), seconds=i)


def record_round(db: str, tag: str, first: int, n: int) -> None:
    """Record tool calls `first` .. `first + n - 1` of session TAG into DB, in one store opened and closed
    for this round (as a kernel that stops and starts between rounds)."""
    with HistoryStore.open(db, strict=True) as store:
        for i in range(first, first + n):
            store.record(tool_call(tag, i, when=when(i)))


def publisher(db: str, dest: str, tag: str, rounds: int, n: int, ready: str) -> None:
    deadline = time.monotonic() + WAIT
    while not Path(ready).exists():  # start together with the querier
        if time.monotonic() > deadline:
            raise TimeoutError("the querier never started")
        time.sleep(0.01)
    reports: list[dict[str, int]] = []
    for r in range(rounds):
        record_round(db, tag, r * n, n)
        reports.append(History(db).publish(dest).rows)
    print(json.dumps(reports), flush=True)


def querier(dest: str, stop: str, ready: str) -> None:
    queries, errors, bad = 0, [], []
    last = 0
    lake_history = history(dest)  # the test made the (empty) lake first
    while not Path(stop).exists():
        try:
            row = lake_history.sql(
                "SELECT count(*) AS n, count(DISTINCT tool_call_id) AS ids FROM tool_calls"
            ).iloc[0]
            n, ids = int(row.n), int(row.ids)
            if n != ids or n < last:
                bad.append({"n": n, "ids": ids, "last": last})
            last = n
            queries += 1
        except Exception:
            errors.append(traceback.format_exc())
        Path(ready).touch()
    print(json.dumps({"queries": queries, "errors": errors, "bad": bad, "last": last}), flush=True)


def recorder(db: str, tag: str, rounds: int, n: int, done: str) -> None:
    for r in range(rounds):
        record_round(db, tag, r * n, n)
    Path(done).touch()


def republisher(db: str, dest: str, done: str) -> None:
    reports: list[int] = []
    while True:
        last = Path(done).exists()
        reports.append(History(db).publish(dest).rows["tool_calls"])
        if last:
            break
    print(json.dumps(reports), flush=True)


def crash(db: str, dest: str, point: str) -> None:
    def die(*_args: Any, **_kwargs: Any) -> None:
        os._exit(17)

    if point == "claimed":
        lake._write = die  # type: ignore[assignment]
    elif point == "written":
        lake._place = die  # type: ignore[assignment]
    elif point == "placed-one":
        real = os.replace
        done: list[object] = []

        def replace_once(src: Any, dst: Any) -> None:
            if done:
                os._exit(17)
            done.append(dst)
            real(src, dst)

        lake.os.replace = replace_once  # type: ignore[assignment]
    elif point == "placed":
        lake._commit = die  # type: ignore[assignment]
    else:
        raise SystemExit(f"unknown crash point {point}")
    History(db).publish(dest)
    raise SystemExit("publish finished: the crash point was never reached")


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "publisher":
        publisher(args[0], args[1], args[2], int(args[3]), int(args[4]), args[5])
    elif mode == "querier":
        querier(args[0], args[1], args[2])
    elif mode == "recorder":
        recorder(args[0], args[1], int(args[2]), int(args[3]), args[4])
    elif mode == "republisher":
        republisher(args[0], args[1], args[2])
    elif mode == "crash":
        crash(args[0], args[1], args[2])
    else:
        raise SystemExit(f"unknown mode {mode}")
