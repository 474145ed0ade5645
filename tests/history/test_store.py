"""The store's life cycle: spools, flushing, closing, rotation, busy files, several stores in one process."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import synapse_nb.history.store as store_module
from synapse_nb import events as ev
from synapse_nb.history.db import HistoryLockTimeout
from synapse_nb.history.reader import History
from synapse_nb.history.spool import spool_dir
from synapse_nb.history.store import HistoryStore
from tests.history.history_events import raw, tool_call


def _count(db: Path, table: str = "tool_calls") -> int:
    ((n,),) = raw(db, f"SELECT count(*) FROM {table}")
    return int(n)


def test_record_appends_to_this_process_spool_and_flush_ingests_it(store: HistoryStore, db_path: Path) -> None:
    assert store.available
    assert store.spool_path is not None
    assert store.spool_path.parent == spool_dir(db_path)
    for i in range(10):
        store.record(tool_call("s", i))
    lines = store.spool_path.read_bytes().splitlines()
    assert len(lines) == 10
    assert json.loads(lines[0])["t"] == "tool_calls"
    assert store.pending_bytes > 0
    store.flush()
    assert store.pending_bytes == 0
    assert _count(db_path) == 10
    store.flush()  # nothing new: nothing doubled
    assert _count(db_path) == 10


def test_close_ingests_and_removes_the_spool_then_record_is_a_no_op(db_path: Path) -> None:
    store = HistoryStore.open(db_path, strict=True)
    store.record(tool_call("s", 1))
    spool = store.spool_path
    store.close()
    store.close()  # idempotent
    assert spool is not None
    assert not spool.exists()
    assert not store.available
    assert _count(db_path) == 1
    store.record(tool_call("s", 2))
    assert _count(db_path) == 1


def test_the_flusher_ingests_without_being_asked(
    store: HistoryStore, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "MIN_INTERVAL", 0.0)  # not 2 s after the open's ingest: not the point here
    done = store._ingested_event  # set after every successful background ingest (the open's too)
    done.clear()
    store.record(tool_call("s", 1))
    assert done.wait(timeout=30)
    assert store.pending_bytes == 0
    assert raw(db_path, "SELECT tool_call_id FROM tool_calls") == [("s-c1",)]


def test_an_ingest_waits_for_a_quiet_moment(
    store: HistoryStore, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events come while a turn runs and stop when it ends, just as the cell finishes: the background
    ingest (DuckDB, ~30 ms of CPU and the GIL) starts only once no event came for QUIET seconds, so it
    never lands on a cell's last output and idle message; a kernel that never goes quiet still ingests
    within MAX_DEFER."""
    monkeypatch.setattr(store_module, "MIN_INTERVAL", 0.0)  # only the batching delay and the quiet rule left
    assert store._flusher_ready.wait(timeout=30)
    assert store._flusher is not None
    flusher = store._flusher
    started: list[float] = []  # time.monotonic() at the start of each background ingest
    run = flusher.run

    def timed_run(**kwargs: object) -> object:
        started.append(time.monotonic())
        return run(**kwargs)  # type: ignore[arg-type]

    flusher.run = timed_run  # type: ignore[method-assign]
    done = store._ingested_event
    done.clear()
    for n in range(1, 4):
        store.record(tool_call("s", n))
    assert done.wait(timeout=30)
    assert started
    assert started[0] >= store._last_event + store_module.QUIET
    assert _count(db_path) == 3
    # the rule itself: still waiting while events come, at once when quiet, never past MAX_DEFER
    quiet, defer = store_module.QUIET, store_module.MAX_DEFER
    assert store_module.quiet_wait(100.0, 100.0, 99.0) == pytest.approx(quiet)
    assert store_module.quiet_wait(100.0 + quiet, 100.0, 99.0) == 0.0
    assert store_module.quiet_wait(99.0 + defer, 99.0 + defer - 0.01, 99.0) == 0.0


def test_a_stream_that_never_pauses_is_ingested_once_its_backlog_is_full(
    store: HistoryStore, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events that keep coming (a flood, a turn streaming for minutes) never give the flusher its quiet moment;
    it ingests once MAX_BACKLOG bytes wait instead of letting them pile up for MAX_DEFER. Here the stream never
    goes quiet and MAX_DEFER never comes, so only the backlog can start the ingest."""
    monkeypatch.setattr(store_module, "MIN_INTERVAL", 0.0)
    monkeypatch.setattr(store_module, "QUIET", 1e6)
    monkeypatch.setattr(store_module, "MAX_DEFER", 1e6)
    done = store._ingested_event
    done.clear()
    n = 0
    while store.pending_bytes < store_module.MAX_BACKLOG:
        store.record(tool_call("s", n))
        n += 1
    assert done.wait(timeout=60)
    assert _count(db_path) == n
    quiet, defer, full = store_module.QUIET, store_module.MAX_DEFER, store_module.MAX_BACKLOG
    assert store_module.quiet_wait(100.0, 100.0, 99.0, full - 1) == pytest.approx(min(quiet, defer - 1))
    assert store_module.quiet_wait(100.0, 100.0, 99.0, full) == 0.0


def test_the_flusher_opens_the_file_only_when_there_is_something_to_ingest(
    store: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ingest opens the DuckDB file even with nothing to add (tens of ms of CPU): a flusher woken by an event
    that a `flush()` has already ingested does not; its scan leaves our spool alone while events keep coming."""
    monkeypatch.setattr(store_module, "MIN_INTERVAL", 60.0)  # the flusher stays out of the way: the rule alone
    store.record(tool_call("s", 1))
    now = time.monotonic()
    assert store._due(now, woke=True, scan=False)
    store.flush()
    assert store.pending_bytes == 0
    assert not store._due(time.monotonic(), woke=True, scan=False)
    assert not store._due(time.monotonic(), woke=True, scan=True)
    store.record(tool_call("s", 2))  # a burst: events still coming
    burst = store._last_event
    store._pending = False  # as if the flusher had not been woken: the scan decides alone
    assert not store._due(burst + store_module.QUIET / 2, woke=False, scan=True)
    assert store._due(burst + store_module.QUIET, woke=False, scan=True)


@pytest.mark.process
def test_a_busy_file_never_fails_recording_or_reading_and_catches_up(
    repo_root: Path, store: HistoryStore, db_path: Path
) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('held', flush=True); sys.stdin.readline()",
            str(db_path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        for i in range(20):
            store.record(tool_call("s", i))
        store.flush(timeout=0.3)  # gives up quietly: the events wait in the spool
        assert store.available
        assert store.pending_bytes > 0
        with pytest.raises(HistoryLockTimeout, match="stayed locked by another program"):
            History(db_path, timeout=0.3).tool_calls()
    finally:
        holder.communicate(input="\n", timeout=30)
    assert len(History(db_path).tool_calls()) == 20
    store.flush()
    assert store.pending_bytes == 0
    assert _count(db_path) == 20


def test_a_large_spool_is_rotated_finished_and_removed(
    store: HistoryStore, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "ROTATE_BYTES", 2000)
    first = store.spool_path
    for i in range(30):
        store.record(tool_call("s", i))
    store.flush()  # ingests, then hands the big file over and starts a new one
    assert store.spool_path != first
    assert first is not None
    for i in range(30, 32):  # fewer bytes than ROTATE_BYTES: no second rotation
        store.record(tool_call("s", i))
    store.flush()  # the old file is finished: deleted
    assert not first.exists()
    assert [p.name for p in spool_dir(db_path).iterdir()] == [store.spool_path.name]  # type: ignore[union-attr]
    calls = History(db_path).tool_calls()
    assert len(calls) == 32
    assert calls.tool_call_id.is_unique


def test_two_stores_in_one_process_share_the_file(db_path: Path) -> None:
    with HistoryStore.open(db_path, strict=True) as a, HistoryStore.open(db_path, strict=True) as b:
        for i in range(25):
            a.record(tool_call("a", i))
            b.record(tool_call("b", i))
        a.flush()  # ingests b's spool too
        assert b.pending_bytes > 0  # b has not seen it yet, but reads are exact either way
        assert len(History(db_path).tool_calls()) == 50
        b.flush()
    assert _count(db_path) == 50
    assert list(spool_dir(db_path).iterdir()) == []


@pytest.mark.process
def test_a_process_that_exits_without_close_is_flushed_at_exit(repo_root: Path, db_path: Path) -> None:
    code = (
        "import sys; from synapse_nb.history.store import HistoryStore\n"
        "from tests.history.history_events import tool_call\n"
        "s = HistoryStore.open(sys.argv[1], strict=True)\n"
        "for i in range(5): s.record(tool_call('x', i))\n"
    )
    env = {"PYTHONPATH": str(repo_root), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", code, str(db_path)], check=True, env=env, timeout=60)
    assert _count(db_path) == 5
    assert list(spool_dir(db_path).iterdir()) == []


def test_the_default_path_comes_from_synapse_db(db_path: Path) -> None:
    with HistoryStore.open() as store:
        assert store.path == db_path
        store.record(ev.SessionStarted(session_id="s", name="n", model="m"))
    assert _count(db_path, "sessions") == 1


def test_a_failed_ingest_reports_its_own_error_and_writes_nothing(store: HistoryStore, db_path: Path) -> None:
    """The "will retry" warning must name why an ingest failed: inside its transaction the failing INSERT
    aborts it, and the cleanup after it used to raise "Current transaction is aborted" instead."""
    import duckdb

    from synapse_nb.history.catalog import known_version
    from synapse_nb.history.ingest import ingest

    store.record(tool_call("s", 0))
    store.flush()
    store._stop.set()  # park the flusher: what follows stays in the spool
    store._wake.set()
    assert store._thread is not None
    store._thread.join(timeout=30)
    store.record(tool_call("s", 1))
    con = duckdb.connect(str(db_path))
    try:
        con.execute("ALTER TABLE tool_calls DROP COLUMN result_text")  # a file this code cannot insert into
        offsets = con.execute("SELECT * FROM _ingest_offsets").fetchall()
        with pytest.raises(duckdb.Error) as info:
            ingest(con, spool_dir(db_path), known_version())
        assert "result_text" in str(info.value)
        assert "aborted" not in str(info.value)
        assert con.execute("SELECT count(*) FROM tool_calls").fetchall() == [(1,)]  # rolled back whole
        assert con.execute("SELECT * FROM _ingest_offsets").fetchall() == offsets
    finally:
        con.close()


def test_close_leaves_no_flusher_inside_duckdb(
    store: HistoryStore, db_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A flusher still ingesting when `close` gives up waiting is interrupted and joined, not left running in
    DuckDB: at the interpreter's exit a daemon thread that comes back from DuckDB's C++ code is ended with
    pthread_exit, which DuckDB's own `catch (...)` turns into an abort ("FATAL: exception not rethrown")."""
    import threading

    import duckdb

    import synapse_nb.history.flusher as flusher_module

    inside = threading.Event()

    def endless(con: duckdb.DuckDBPyConnection, *args: object, **kwargs: object) -> object:
        inside.set()
        while True:  # as an ingest does: Python work (reading the spool), then a statement, again and again
            time.sleep(0.5)  # an interrupt that lands here, outside any statement, is lost (DuckDB's semantics)
            con.execute("SELECT count(*) FROM range(2000000000)").fetchall()  # ~1 s

    monkeypatch.setattr(store_module, "MIN_INTERVAL", 0.0)
    monkeypatch.setattr(flusher_module, "ingest", endless)
    store.record(tool_call("s", 1))
    assert inside.wait(timeout=60), "the flusher did not start an ingest"
    thread = store._thread
    assert thread is not None
    with caplog.at_level("INFO", logger="synapse_nb.history"):
        store.close(timeout=0.2)
    assert not thread.is_alive(), "close returned with the flusher still inside DuckDB"
    said = [(r.levelname, r.getMessage()) for r in caplog.records if r.name.startswith("synapse_nb.history")]
    assert [level for level, _ in said] == ["INFO"], said  # not a "failed, will retry" warning at every exit
    assert "stopped by close" in said[0][1]
    assert list(spool_dir(db_path).iterdir()), "the events not ingested stay in the spool for the next open"
    monkeypatch.undo()
    with HistoryStore.open(db_path, strict=True) as again:
        again.flush()
    assert _count(db_path) == 1
    assert list(spool_dir(db_path).iterdir()) == []
