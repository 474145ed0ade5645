"""Two synapse_nb versions on one file: an older kernel keeps spooling, writes nothing, says so, loses nothing.

The "newer synapse_nb" is this code given one more migration (an injected migrations folder); the
older one is a real separate process that knows only the installed migrations.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from synapse_nb.errors import SchemaTooNewError
from synapse_nb.history.catalog import known_version, load_migrations
from synapse_nb.history.reader import History
from synapse_nb.history.spool import spool_dir
from synapse_nb.history.store import HistoryStore
from tests.history.history_events import raw, tool_call

LATEST = known_version()  # what the driven ("older") process knows; `newer` adds LATEST + 1
KNOWN = [m.version for m in load_migrations()]  # the versions in the source tree, in order



class Driven:
    """A store in another process (tests/history/history_proc.py `driven`), one command at a time."""

    def __init__(self, repo_root: Path, db: Path, migrations: Path | None = None) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(repo_root)
        env["PYTHONWARNINGS"] = "error"
        args = [sys.executable, "-m", "tests.history.history_proc", "driven", str(db)]
        self.proc = subprocess.Popen(
            [*args, *([str(migrations)] if migrations else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )

    def __call__(self, command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            _out, err = self.proc.communicate(timeout=30)
            raise AssertionError(f"the driven process ended: {err}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> dict[str, Any]:
        answer = self("close")
        _out, err = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, err
        return answer

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=30)


def _ids(tag: str, start: int, stop: int) -> list[str]:
    return [f"{tag}-c{i}" for i in range(start, stop)]


def _versions(db: Path) -> list[int]:
    return [int(v) for (v,) in raw(db, "SELECT version FROM schema_migrations ORDER BY 1")]


@pytest.mark.process
def test_an_older_kernel_keeps_spooling_writes_nothing_and_loses_nothing(
    repo_root: Path, db_path: Path, newer: Path
) -> None:
    old = Driven(repo_root, db_path)  # knows schema LATEST
    try:
        old("record old 0 5")
        assert old("flush")["paused"] is None
        assert raw(db_path, "SELECT count(*) FROM tool_calls") == [(5,)]

        # A newer synapse_nb (schema LATEST + 1) opens the file: it migrates it and writes its own events.
        with HistoryStore.open(db_path, strict=True, migrations=newer) as new:
            new.record(tool_call("new", 0))
        assert _versions(db_path) == [*KNOWN, LATEST + 1]

        old("record old 5 10")
        state = old("flush")  # its next ingest finds schema LATEST + 1: it stops ingesting, and says why
        assert state["available"] is True
        assert state["problem"] is None
        assert f"schema version {LATEST + 1}, newer than the {LATEST} this synapse_nb knows" in state["paused"]
        assert "upgrade synapse_nb" in state["paused"]
        assert sorted(r[0] for r in raw(db_path, "SELECT tool_call_id FROM tool_calls")) == sorted(
            _ids("new", 0, 1) + _ids("old", 0, 5)
        )  # nothing of the older kernel's later events was written into the newer file...
        old("record old 10 12")
        assert old("state")["spool_bytes"] > 0  # ...and it keeps spooling them
        assert old("read")["error"].startswith("SchemaTooNewError: history file")  # its reader says why

        # A newer process ingests the older kernel's spool (exactly once), and leaves it while it is live.
        with HistoryStore.open(db_path, strict=True, migrations=newer) as new:
            new.flush()
            ids = [r[0] for r in raw(db_path, "SELECT tool_call_id FROM tool_calls")]
            assert sorted(ids) == sorted(_ids("new", 0, 1) + _ids("old", 0, 12))
            assert (spool_dir(db_path) / old("state")["spool"]).exists()

            old("record old 12 15")
            closed = old.close()  # a paused store seals its spool and leaves it for newer code
            assert (spool_dir(db_path) / closed["spool"]).exists()
            new.flush()
        assert list(spool_dir(db_path).iterdir()) == []
        ids = [r[0] for r in raw(db_path, "SELECT tool_call_id FROM tool_calls")]
        assert sorted(ids) == sorted(_ids("new", 0, 1) + _ids("old", 0, 15))  # everything, once
        assert _versions(db_path) == [*KNOWN, LATEST + 1]
        assert raw(db_path, "SELECT count(*) FROM tool_calls WHERE cost IS NOT NULL") == [(0,)]
    finally:
        old.kill()


@pytest.mark.process
def test_an_older_kernel_opening_a_newer_file_spools_from_the_start(
    repo_root: Path, db_path: Path, newer: Path
) -> None:
    HistoryStore.open(db_path, strict=True, migrations=newer).close()
    old = Driven(repo_root, db_path)
    try:
        old("record old 0 3")
        state = old("flush")
        assert f"schema version {LATEST + 1}" in state["paused"]
        assert state["available"] is True
        old.close()
    finally:
        old.kill()
    assert raw(db_path, "SELECT count(*) FROM tool_calls") == [(0,)]
    with HistoryStore.open(db_path, strict=True, migrations=newer) as new:
        new.flush()
    assert sorted(r[0] for r in raw(db_path, "SELECT tool_call_id FROM tool_calls")) == _ids("old", 0, 3)


@pytest.mark.process
def test_a_newer_reader_reads_an_older_file_without_migrating_it(
    repo_root: Path, db_path: Path, newer: Path
) -> None:
    old = Driven(repo_root, db_path)
    try:
        old("record old 0 4")
        old("flush")
        old("record old 4 6")  # spooled, not ingested yet
        h = History(db_path, migrations=newer)
        assert sorted(h.tool_calls().tool_call_id) == _ids("old", 0, 6)
        assert h.sql("SELECT max(version) AS v FROM schema_migrations").v[0] == LATEST
        assert _versions(db_path) == KNOWN  # read, not migrated: the older kernel goes on writing
        old("record old 6 7")
        assert old("flush")["paused"] is None
        assert raw(db_path, "SELECT count(*) FROM tool_calls") == [(7,)]
        old.close()
    finally:
        old.kill()


def test_an_ingester_leaves_spools_of_a_newer_schema_alone(db_path: Path, newer: Path) -> None:
    HistoryStore.open(db_path, strict=True).close()
    directory = spool_dir(db_path)
    directory.mkdir(exist_ok=True)
    future = directory / f"otherhost-1-{'a' * 12}.v{LATEST + 1}.jsonl"
    future.write_bytes(b'{"t":"tool_calls","r":{"tool_call_id":"from-newer","cost":1.5}}\n')
    with HistoryStore.open(db_path, strict=True) as store:
        store.flush()
        assert "from-newer" not in set(store.history().tool_calls().tool_call_id)
    assert future.exists()
    with HistoryStore.open(db_path, strict=True, migrations=newer) as new:  # newer code takes it in
        new.flush()
    assert raw(db_path, "SELECT tool_call_id FROM tool_calls") == [("from-newer",)]
    assert not future.exists()
    with pytest.raises(SchemaTooNewError, match=f"newer than the {LATEST} this synapse_nb knows"):
        History(db_path).tool_calls()  # and an older reader says, in one line, why it cannot show it
