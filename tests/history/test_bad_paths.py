"""Unusable history files: one clear problem line, a no-op recorder, nothing half written; strict raises."""

from __future__ import annotations

import logging
from pathlib import Path

import duckdb
import pytest

from synapse_nb import events as ev
from synapse_nb.errors import HistoryError
from synapse_nb.history.reader import History
from synapse_nb.history.store import HistoryStore


def _not_duckdb(tmp: Path) -> Path:
    p = tmp / "notes.duckdb"
    p.write_text("these are my notes, not a database\n" * 50)
    return p


def _corrupt(tmp: Path) -> Path:
    p = tmp / "corrupt.duckdb"
    with duckdb.connect(str(p)) as con:
        con.execute("CREATE TABLE z AS SELECT range AS a FROM range(200000)")
    data = bytearray(p.read_bytes())
    for i in range(4096, len(data), 97):
        data[i] ^= 0x5A
    p.write_bytes(bytes(data))
    return p


def _truncated(tmp: Path) -> Path:
    p = tmp / "truncated.duckdb"
    HistoryStore.open(p, strict=True).close()
    p.write_bytes(p.read_bytes()[:100])
    return p


def _under_a_file(tmp: Path) -> Path:
    (tmp / "plainfile").write_text("x")
    return tmp / "plainfile" / "history.duckdb"


def _a_directory(tmp: Path) -> Path:
    (tmp / "adir.duckdb").mkdir()
    return tmp / "adir.duckdb"


BAD = {
    "not-duckdb": (_not_duckdb, "is not a readable DuckDB database"),
    "corrupt": (_corrupt, "is not a readable DuckDB database"),
    "truncated": (_truncated, "is not a readable DuckDB database"),
    "parent-is-a-file": (_under_a_file, "cannot be written"),
    "is-a-directory": (_a_directory, "is a directory"),
    "in-proc": (lambda tmp: Path("/proc/self/nope/history.duckdb"), "cannot be written"),
}


def _snapshot(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("case", list(BAD))
def test_unusable_files_give_one_clear_line(case: str, clean_env: Path, caplog: pytest.LogCaptureFixture) -> None:
    make, words = BAD[case]
    area = clean_env / "area"
    area.mkdir()
    path = make(area)
    before = _snapshot(area)
    with caplog.at_level(logging.WARNING, logger="synapse_nb.history"):
        store = HistoryStore.open(path)
        for _ in range(20):
            store.record(ev.ServerEvent(server="s", event="connected"))
        store.flush()
        store.close()
    assert not store.available
    assert store.problem is not None
    assert "\n" not in store.problem
    assert str(path) in store.problem
    assert words in store.problem
    assert "SYNAPSE_DB" in store.problem
    assert [r.getMessage() for r in caplog.records] == [f"history is not recorded: {store.problem}"]
    assert _snapshot(area) == before  # nothing written, nothing half written
    with pytest.raises(HistoryError) as info:
        HistoryStore.open(path, strict=True)
    assert str(info.value) == store.problem
    assert _snapshot(area) == before


def test_the_reader_reports_a_bad_file_as_a_history_error(clean_env: Path) -> None:
    path = _not_duckdb(clean_env)
    with pytest.raises(HistoryError, match="not a readable DuckDB database"):
        History(path).sessions()


def test_an_empty_placeholder_file_becomes_a_history_file(clean_env: Path) -> None:
    path = clean_env / "made-by-mkstemp.duckdb"
    path.touch()
    with HistoryStore.open(path, strict=True) as store:
        store.record(ev.ServerEvent(server="s", event="connected"))
    assert len(History(path).server_events()) == 1


def test_a_missing_parent_folder_is_created(clean_env: Path) -> None:
    path = clean_env / "a" / "b" / "history.duckdb"
    with HistoryStore.open(path, strict=True) as store:
        assert store.available
        assert store.problem is None
    assert path.is_file()
