"""Real processes: two writers and a reader on one file lose nothing and never fail; acked events survive SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from synapse_nb.history.reader import History
from synapse_nb.history.spool import spool_dir
from synapse_nb.history.store import HistoryStore

N = 300
INGEST_WAIT = 60.0  # seconds a writer whose events never stop may go without an ingest before the test gives up:
# its flusher ingests once MAX_BACKLOG bytes wait (history/store.py), a few seconds after the first event here


def _env(repo_root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(repo_root)
    env["PYTHONWARNINGS"] = "error"
    return env


def _spawn(repo_root: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.history.history_proc", *args],
        env=_env(repo_root),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str], timeout: float = 90) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    assert "lock" not in err.lower(), err
    return out


@pytest.mark.process
def test_two_writers_and_a_reader_lose_nothing_and_see_each_other(repo_root: Path, db_path: Path) -> None:
    HistoryStore.open(db_path, strict=True).close()  # so the reader starts on a real file
    peers = db_path.parent / "peers"
    peers.mkdir()
    (peers / "tags").write_text("A,B")
    stop = peers / "stop"
    reader = _spawn(repo_root, "reader", str(db_path), str(stop))
    writers = [_spawn(repo_root, "writer", str(db_path), tag, str(N), str(peers)) for tag in ("A", "B")]
    seen = [json.loads(_finish(w)) for w in writers]
    stop.touch()
    report = json.loads(_finish(reader))

    assert seen == [{"A": N, "B": N}, {"A": N, "B": N}]  # each writer reads the other's events
    assert report["errors"] == []
    assert report["queries"] > 0
    assert report["final"] == 2 * N
    assert report["counts"] == sorted(report["counts"])  # never a row counted twice, then dropped
    calls = History(db_path).tool_calls()
    assert len(calls) == 2 * N
    assert calls.tool_call_id.is_unique
    assert sorted(calls.tool_call_id) == sorted(f"{t}-c{i}" for t in "AB" for i in range(N))
    assert [p.name for p in spool_dir(db_path).iterdir()] == []  # both closed: spools ingested and removed


@pytest.mark.process
@pytest.mark.parametrize("extra", [0, 777])
def test_events_acked_before_sigkill_survive(repo_root: Path, db_path: Path, extra: int) -> None:
    proc = _spawn(repo_root, "acker", str(db_path))
    assert proc.stdout is not None
    acked, ingested, stop_at = -1, False, None
    give_up = time.monotonic() + INGEST_WAIT
    try:
        for line in proc.stdout:  # killed while its flusher ingests in the background
            if line.startswith("ingested"):
                ingested, stop_at = True, acked + 1 + extra
                continue
            acked = int(line.split()[1])
            if stop_at is not None and acked >= max(stop_at, 1500):
                break
            if not ingested and time.monotonic() > give_up:  # its flusher never ingested while events kept coming
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert acked >= 1500
    assert ingested

    calls = History(db_path).tool_calls()  # the dead process's spool is read...
    ids = set(calls.tool_call_id)
    assert calls.tool_call_id.is_unique
    assert {f"acked-c{i}" for i in range(acked + 1)} <= ids

    with HistoryStore.open(db_path, strict=True) as store:  # ...then ingested and removed by the next writer
        store.flush()
    assert [p.name for p in spool_dir(db_path).iterdir()] == []
    after = History(db_path).tool_calls()
    assert set(after.tool_call_id) == ids
    assert after.tool_call_id.is_unique


@pytest.mark.parametrize("cut", [1, 17])
def test_a_torn_last_line_of_a_dead_writer_is_dropped_not_wedged(db_path: Path, cut: int) -> None:
    from tests.history.history_events import tool_call

    store = HistoryStore.open(db_path, strict=True)
    for i in range(3):
        store.record(tool_call("s", i))
    spool = store.spool_path
    assert spool is not None
    # Simulate dying half way through a write: a line missing its end, then the lock released.
    with open(spool, "ab") as f:
        f.write(b'{"t": "tool_calls", "r": {"tool_call_id": "torn"'[:cut])
    store._stop.set()
    store._spool.close(seal=False)  # type: ignore[union-attr]  # a dead writer seals nothing
    assert len(History(db_path).tool_calls()) == 3
    with HistoryStore.open(db_path, strict=True) as other:
        other.flush()
    assert [p.name for p in spool_dir(db_path).iterdir()] == []
    assert sorted(History(db_path).tool_calls().tool_call_id) == ["s-c0", "s-c1", "s-c2"]
