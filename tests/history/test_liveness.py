"""Spool liveness is not flock alone: a running process of this host keeps its spool; a dead one's is taken over.

A spool file whose flock nobody holds is exactly what a live writer's file looks like on a file system
where flock silently succeeds (some NFS/SMB/FUSE homes), so these tests write such files by hand and
name them after real processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from synapse_nb.history.catalog import known_version
from synapse_nb.history.reader import History
from synapse_nb.history.recorder import Recorder
from synapse_nb.history.spool import _NAME, SEAL, _host, is_abandoned, spool_dir
from synapse_nb.history.store import HistoryStore
from tests.history.history_events import raw, tool_call


@pytest.fixture
def live_pid() -> Iterator[subprocess.Popen[str]]:
    """A running process of this host that writes nothing itself (stands in for another kernel)."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE, text=True)
    yield proc
    if proc.poll() is None:
        proc.communicate(input="", timeout=30)


def _lines(tag: str, n: int, start: int = 0) -> bytes:
    import json

    out = b""
    for i in range(start, n):
        ((relation, row),) = Recorder().rows(tool_call(tag, i))
        out += json.dumps({"t": relation, "r": row}).encode() + b"\n"
    return out


def _spool(db: Path, pid: int, data: bytes, *, host: str | None = None) -> Path:
    directory = spool_dir(db)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{host or _host()}-{pid}-{uuid.uuid4().hex[:12]}.v{known_version()}.jsonl"
    path.write_bytes(data)  # no flock held: what a live writer's file looks like where flock is a no-op
    return path


def _ids(db: Path) -> list[str]:
    return sorted(r[0] for r in raw(db, "SELECT tool_call_id FROM tool_calls"))


@pytest.mark.process
def test_an_unlocked_spool_of_a_running_process_stays_until_it_ends(
    db_path: Path, live_pid: subprocess.Popen[str]
) -> None:
    HistoryStore.open(db_path, strict=True).close()
    spool = _spool(db_path, live_pid.pid, _lines("other", 3))
    assert not is_abandoned(spool)
    with HistoryStore.open(db_path, strict=True) as store:
        store.flush()
        assert spool.exists()  # its lines are ingested, but the file is not taken over...
        assert _ids(db_path) == ["other-c0", "other-c1", "other-c2"]
        with open(spool, "ab") as f:
            f.write(_lines("other", 5, start=3) + b'{"t": "tool_calls", "r": {"tool')
        store.flush()  # ...so it may go on growing: a partial last line waits for its end
        assert _ids(db_path) == [f"other-c{i}" for i in range(5)]
        assert len(History(db_path).tool_calls()) == 5

        live_pid.communicate(input="", timeout=30)  # the other process ends
        assert is_abandoned(spool)
        store.flush()
        assert not spool.exists()  # now it is finished: the torn line dropped, nothing doubled
    assert _ids(db_path) == [f"other-c{i}" for i in range(5)]


@pytest.mark.process
def test_a_sealed_spool_of_a_running_process_is_taken_over(db_path: Path, live_pid: subprocess.Popen[str]) -> None:
    spool = _spool(db_path, live_pid.pid, _lines("sealed", 2) + SEAL)
    assert is_abandoned(spool)
    with HistoryStore.open(db_path, strict=True) as store:
        store.flush()
    assert not spool.exists()
    assert _ids(db_path) == ["sealed-c0", "sealed-c1"]


@pytest.mark.process
def test_a_spool_of_a_reused_pid_is_taken_over(db_path: Path, live_pid: subprocess.Popen[str]) -> None:
    spool = _spool(db_path, live_pid.pid, _lines("before", 2))
    last_write = time.time() - 3600  # written an hour before that process started: another process's pid
    os.utime(spool, (last_write, last_write))
    assert is_abandoned(spool)


def test_a_spool_with_this_process_pid_that_it_does_not_write_is_taken_over(db_path: Path) -> None:
    # e.g. the previous kernel of a restarted container, which had the same pid
    spool = _spool(db_path, os.getpid(), _lines("earlier", 2))
    assert is_abandoned(spool)
    with HistoryStore.open(db_path, strict=True) as store:
        own = store.spool_path
        assert own is not None
        import fcntl

        fcntl.flock(store._spool._fd, fcntl.LOCK_UN)  # type: ignore[union-attr]  # as if flock were a no-op
        assert not is_abandoned(own)  # this process's live spool is still live...
        store.record(tool_call("mine", 0))
        store.flush()
        assert own.exists()
        assert not spool.exists()  # ...while the earlier process's is taken over
    assert _ids(db_path) == ["earlier-c0", "earlier-c1", "mine-c0"]


@pytest.mark.process
def test_another_host_spool_relies_on_its_lock(db_path: Path, live_pid: subprocess.Popen[str]) -> None:
    spool = _spool(db_path, live_pid.pid, _lines("remote", 1), host="some-other-host")
    assert is_abandoned(spool)  # nothing here can see that host's processes


def test_spool_names_carry_host_and_pid(store: HistoryStore) -> None:
    assert store.spool_path is not None
    m = _NAME.match(store.spool_path.name)
    assert m is not None
    assert (m["host"], int(m["pid"]), int(m["version"])) == (_host(), os.getpid(), known_version())
