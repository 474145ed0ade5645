"""Child processes of the lake tests and bench row 13c (run as `python -m tests.history.lake_proc MODE ...`);
LAKE is a lake config .json (catalog, warehouse, s3), as a team would write one.

publisher DB LAKE TAG ROUNDS N READY   once READY exists: ROUNDS times, record N tool calls of session TAG
                                       (ids TAG-c0, TAG-c1, ... over two dates) into its own history file
                                       DB and publish it to LAKE; print the rows each publish reported
recorder DB TAG ROUNDS N DONE          ROUNDS times record N tool calls of session TAG into DB (a store
                                       opened and closed each round), then touch DONE
republisher DB LAKE DONE               publish DB to LAKE again and again until a publish that started
                                       after DONE existed; print the tool calls each publish reported
crash DB LAKE POINT                    publish DB to LAKE but die (os._exit, like a SIGKILL: no cleanup) in
                                       the catalog's commit: `before-commit` (data files written, the
                                       commit not made) or `after-commit` (committed, nothing after)
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from synapse_nb.history.reader import History
from synapse_nb.history.store import HistoryStore
from tests.history.history_events import tool_call

WAIT = 120.0
DAY1 = dt.datetime(2026, 11, 22, 23, 0, 0)


def when(i: int) -> dt.datetime:
    """Tool call `i`'s start: even ones on one date, odd ones on the next (two partitions per publish)."""
    return DAY1 + dt.timedelta(hours=2 * (i % 2), seconds=i)


def record_round(db: str, tag: str, first: int, n: int) -> None:
    with HistoryStore.open(db, strict=True) as store:
        for i in range(first, first + n):
            store.record(tool_call(tag, i, when=when(i)))


def publisher(db: str, dest: str, tag: str, rounds: int, n: int, ready: str) -> None:
    deadline = time.monotonic() + WAIT
    while not Path(ready).exists():  # start together
        if time.monotonic() > deadline:
            raise TimeoutError("never told to start")
        time.sleep(0.01)
    reports: list[dict[str, int]] = []
    for r in range(rounds):
        record_round(db, tag, r * n, n)
        reports.append(History(db).publish(dest).rows)
    print(json.dumps(reports), flush=True)


def recorder(db: str, tag: str, rounds: int, n: int, done: str) -> None:
    for r in range(rounds):
        record_round(db, tag, r * n, n)
    Path(done).touch()


def republisher(db: str, dest: str, done: str) -> None:
    reports: list[int] = []
    while True:
        last = Path(done).exists()
        if Path(db).exists():
            reports.append(History(db).publish(dest).rows["tool_calls"])
        if last:
            break
    print(json.dumps(reports), flush=True)


def crash(db: str, dest: str, point: str) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    real = SqlCatalog.commit_table

    def commit(self: SqlCatalog, *args: Any, **kwargs: Any) -> Any:
        if point == "before-commit":
            os._exit(17)
        result = real(self, *args, **kwargs)
        os._exit(17)
        return result

    SqlCatalog.commit_table = commit  # type: ignore[method-assign]
    History(db).publish(dest)
    raise SystemExit("publish finished: the crash point was never reached")


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "publisher":
        publisher(args[0], args[1], args[2], int(args[3]), int(args[4]), args[5])
    elif mode == "recorder":
        recorder(args[0], args[1], int(args[2]), int(args[3]), args[4])
    elif mode == "republisher":
        republisher(args[0], args[1], args[2])
    elif mode == "crash":
        crash(args[0], args[1], args[2])
    else:
        raise SystemExit(f"unknown mode {mode}")
