"""Recording never does DuckDB work on the caller's thread (the kernel's loop): no import, no open, no wait."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from synapse_nb.history import catalog
from synapse_nb.history.store import HistoryStore
from tests.history.history_events import raw

# Run in a fresh interpreter, so that nothing has imported DuckDB before the store does.
CHECK = """
import json, sys, threading

imports, sql_reads = [], []
def hook(event, args):
    if event == "import" and args[0].split(".")[0] == "duckdb":
        imports.append(threading.current_thread().name)
    if event == "open" and str(args[0]).endswith(".sql"):
        sql_reads.append(str(args[0]))
sys.addaudithook(hook)

from synapse_nb.events import ServerEvent
from synapse_nb.history.store import HistoryStore

store = HistoryStore.open(sys.argv[1])
for i in range(50):
    store.record(ServerEvent(server="s", event=f"e{i}"))
print(json.dumps({
    "opened": store.wait_open(0),  # the file is held by another process: the open is still going on
    "available": store.available,
    "imports_on_caller": [t for t in imports if t == threading.current_thread().name],
    "spooled": store.spool_path.stat().st_size,
}), flush=True)
sys.stdin.readline()  # the other process lets go of the file now
opened = store.wait_open(60)
for i in range(3):
    store.record(ServerEvent(server="s", event=f"more{i}"))
    store.flush(timeout=60)
    store.history().server_events()
store.close()
print(json.dumps({
    "opened": opened, "problem": store.problem, "importers": sorted(set(imports)), "sql_reads": len(sql_reads),
}), flush=True)
"""

HOLD = (
    "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('held', flush=True); sys.stdin.readline(); c.close()"
)


@pytest.mark.process
def test_record_neither_imports_nor_waits_for_duckdb(repo_root: Path, db_path: Path) -> None:
    HistoryStore.open(db_path, strict=True).close()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(repo_root)
    env["PYTHONWARNINGS"] = "error"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(db_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    check: subprocess.Popen[str] | None = None
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        check = subprocess.Popen(
            [sys.executable, "-c", CHECK, str(db_path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        assert check.stdout is not None
        assert check.stdin is not None
        first = json.loads(check.stdout.readline() or "{}")
        holder.communicate(input="\n", timeout=30)
        check.stdin.write("\n")
        check.stdin.flush()
        second = json.loads(check.stdout.readline() or "{}")
        _out, err = check.communicate(timeout=60)
        assert check.returncode == 0, err
    finally:
        for proc in (holder, check):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=30)
    assert first["available"] is True
    assert first["spooled"] > 0
    assert first["imports_on_caller"] == []  # DuckDB was not even imported on the recording thread
    assert second["opened"] is True
    assert second["problem"] is None
    assert second["importers"] == ["synapse-history-flusher:history.duckdb"]
    assert second["sql_reads"] == len(catalog.load_migrations())  # each migration file read once, not per ingest
    assert raw(db_path, "SELECT count(*) FROM server_events") == [(53,)]
    assert first["opened"] is False  # the held file did not hold up open() or record()


def test_migration_files_are_read_once_per_process(tmp_path: Path, db_path: Path) -> None:
    directory = tmp_path / "m"
    directory.mkdir()
    for m in catalog.load_migrations():
        (directory / m.path.name).write_text(m.sql)
    first = catalog.load_migrations(directory)
    with HistoryStore.open(db_path, strict=True, migrations=directory) as store:
        for _i in range(3):
            store.flush()
        store.history().sessions()
    assert catalog.load_migrations(directory) is first  # the same parsed tuple: no file was read again
    latest = catalog.known_version(directory)
    (directory / f"{latest + 1:04d}_more.sql").write_text("ALTER TABLE sessions ADD COLUMN extra INTEGER;\n")
    seen = [m.version for m in catalog.load_migrations(directory)]
    assert seen == [m.version for m in first] + [latest + 1]  # a new file is seen
