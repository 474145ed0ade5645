"""Child processes of the multi-process history tests (run as `python -m tests.history.history_proc MODE ...`).

writer DB TAG N PEER_DIR   once the reader is reading, record N tool calls of session TAG (flushing every
                           25, to contend for the file), mark TAG done, wait for every peer, then print
                           how many calls of each session this process reads
acker DB                   record tool calls forever, printing "ack I" after each record() returns,
                           and "ingested" once the flusher has moved some of them into the file
reader DB STOP_FILE        query counts in a loop (marking `ready` beside STOP_FILE after the first) until
                           STOP_FILE exists; print queries, errors, counts and a final count
driven DB [MIGRATIONS]     a store (knowing only the migrations of MIGRATIONS, default the installed ones)
                           that obeys one command per stdin line and answers one JSON line each:
                           `record TAG FROM TO` (tool calls FROM..TO-1 of session TAG), `flush`, `state`,
                           `read` (tool call ids this process reads, or the error), `close` (then exit)
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path

from synapse_nb.history.reader import History
from synapse_nb.history.store import HistoryStore
from tests.history.history_events import tool_call

WAIT = 60.0  # a generous bound on waiting for the peers; a stuck test fails instead of hanging


def _wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what}")
        time.sleep(0.01)


def writer(db: str, tag: str, n: int, peers: str) -> None:
    done = Path(peers)
    _wait_for(lambda: (done / "ready").exists(), "the reader")
    store = HistoryStore.open(db, strict=True)
    for i in range(n):
        store.record(tool_call(tag, i))
        if i % 25 == 24:
            store.flush()
    (done / f"{tag}.done").touch()
    expected = {p.strip() for p in (done / "tags").read_text().split(",")}
    _wait_for(lambda: all((done / f"{t}.done").exists() for t in expected), "the other writers")
    counts = History(db).sql("SELECT session_id, count(*) AS n FROM tool_calls GROUP BY 1")
    print(json.dumps(dict(zip(counts.session_id, counts.n.astype(int).tolist(), strict=True))), flush=True)
    store.close()


def acker(db: str) -> None:
    store = HistoryStore.open(db, strict=True)
    i, told = 0, False
    while True:
        store.record(tool_call("acked", i))
        sys.stdout.write(f"ack {i}\n")
        if not told and i % 50 == 0 and store.pending_bytes < store.spool_path.stat().st_size:  # type: ignore[union-attr]
            sys.stdout.write("ingested\n")
            told = True
        sys.stdout.flush()
        i += 1


def reader(db: str, stop_file: str) -> None:
    h = History(db)
    queries, errors, counts = 0, [], []
    while not Path(stop_file).exists():
        try:
            counts.append(int(h.sql("SELECT count(*) AS n FROM tool_calls").n[0]))
            queries += 1
            (Path(stop_file).parent / "ready").touch()
        except Exception:
            errors.append(traceback.format_exc())
    final = int(h.sql("SELECT count(*) AS n FROM tool_calls").n[0])
    print(json.dumps({"queries": queries, "errors": errors, "counts": counts, "final": final}), flush=True)


def driven(db: str, migrations: str | None) -> None:
    directory = Path(migrations) if migrations else None
    store = HistoryStore.open(db, migrations=directory)

    def state() -> dict[str, object]:
        spool = store.spool_path
        return {
            "available": store.available,
            "paused": store.paused,
            "problem": store.problem,
            "spool": spool.name if spool is not None else None,
            "spool_bytes": spool.stat().st_size if spool is not None and spool.exists() else None,
        }

    for line in sys.stdin:
        command, *args = line.split()
        answer: dict[str, object] = {}
        if command == "record":
            tag, start, stop = args[0], int(args[1]), int(args[2])
            for i in range(start, stop):
                store.record(tool_call(tag, i))
        elif command == "flush":
            store.wait_open(WAIT)
            store.flush(timeout=WAIT)
            answer = state()
        elif command == "state":
            answer = state()
        elif command == "read":
            try:
                answer = {"ids": sorted(History(db, migrations=directory).tool_calls().tool_call_id)}
            except Exception as exc:
                answer = {"error": f"{type(exc).__name__}: {exc}"}
        elif command == "close":
            store.close(timeout=WAIT)
            answer = state()
        print(json.dumps(answer), flush=True)
        if command == "close":
            return


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "writer":
        writer(args[0], args[1], int(args[2]), args[3])
    elif mode == "acker":
        acker(args[0])
    elif mode == "reader":
        reader(args[0], args[1])
    elif mode == "driven":
        driven(args[0], args[1] if len(args) > 1 else None)
    else:
        raise SystemExit(f"unknown mode {mode}")
