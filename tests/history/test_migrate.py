"""Migrations: applied in order on open, each atomically, recorded, never re-applied, newer files refused."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import duckdb
import pytest

from synapse_nb.errors import HistoryError, MigrationError, SchemaTooNewError
from synapse_nb.history.migrate import known_version, load_migrations, migrate, migrations_dir
from synapse_nb.history.schema import COLUMNS
from synapse_nb.history.store import HistoryStore

EXPECTED = [
    (1, "sessions_messages"), (2, "tool_columns"), (3, "turns"), (4, "llm_call_origin"), (5, "cost"), (6, "replay"),
    (7, "lake"), (8, "tool_call_outcome"), (9, "tool_call_origin"), (10, "tasks"),
]
LATEST = known_version()  # the newest migration in the source tree
KNOWN = [m.version for m in load_migrations()]  # the versions in the source tree, in order
NEXT = f"{LATEST + 1:04d}"  # the file name prefix of a migration newer than any installed


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    return {r[0]: r[1] for r in con.execute(f"DESCRIBE {table}").fetchall()}


def _tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}


def test_source_tree_migrations_are_found(repo_root: Path) -> None:
    assert migrations_dir() == repo_root / "migrations"
    assert [(m.version, m.name) for m in load_migrations()] == EXPECTED
    assert known_version() == EXPECTED[-1][0]


def test_a_fresh_file_gets_every_migration(db_path: Path) -> None:
    HistoryStore.open(db_path, strict=True).close()
    with duckdb.connect(str(db_path), read_only=True) as con:
        rows = con.execute("SELECT version, name, applied_at FROM schema_migrations ORDER BY version").fetchall()
        assert [(v, n) for v, n, _ in rows] == EXPECTED
        assert all(a is not None for *_, a in rows)
        assert _tables(con) >= {*COLUMNS, "schema_migrations", "_ingest_offsets"}
        assert {"tool_calls", "tool_results"} <= set(_columns(con, "messages"))


def test_python_column_kinds_match_the_sql_schema(db_path: Path) -> None:
    HistoryStore.open(db_path, strict=True).close()
    sql_type = {
        "str": "VARCHAR",
        "int": "BIGINT",
        "float": "DOUBLE",
        "bool": "BOOLEAN",
        "ts": "TIMESTAMP",
        "json": "JSON",
    }
    with duckdb.connect(str(db_path), read_only=True) as con:
        for table, columns in COLUMNS.items():
            user_facing = {c: t for c, t in _columns(con, table).items() if not c.startswith("_")}  # `_seq`: 0007
            assert user_facing == {c: sql_type[k] for c, k in columns.items()}, table


def test_reopening_is_a_no_op(db_path: Path) -> None:
    HistoryStore.open(db_path, strict=True).close()
    with duckdb.connect(str(db_path)) as con:
        before = con.execute("SELECT * FROM schema_migrations ORDER BY version").fetchall()
        assert migrate(con, path=str(db_path)) == []
    HistoryStore.open(db_path, strict=True).close()
    with duckdb.connect(str(db_path), read_only=True) as con:
        assert con.execute("SELECT * FROM schema_migrations ORDER BY version").fetchall() == before


def test_the_first_schema_upgrades_with_its_rows_kept(tmp_path: Path, db_path: Path) -> None:
    only_first = tmp_path / "m1"
    only_first.mkdir()
    shutil.copy(migrations_dir() / "0001_sessions_messages.sql", only_first)
    with duckdb.connect(str(db_path)) as con:
        assert [m.version for m in migrate(con, directory=only_first)] == [1]
        assert "tool_calls" not in _columns(con, "messages")
        assert "tool_calls" not in _tables(con)
        con.execute(
            "INSERT INTO messages (message_id, session_id, seq, role, content) VALUES ('m', 's', 0, 'user', 'hi')"
        )
        assert [m.version for m in migrate(con)] == KNOWN[1:]
        assert con.execute("SELECT content, tool_calls, tool_results FROM messages").fetchall() == [("hi", None, None)]


def _migrations(tmp_path: Path, extra: dict[str, str]) -> Path:
    d = tmp_path / "migrations"
    d.mkdir()
    for m in load_migrations():
        shutil.copy(m.path, d)
    for name, sql in extra.items():
        (d / name).write_text(sql)
    return d


@pytest.mark.parametrize(
    "bad_sql",
    [
        "CREATE TABLE half_done (a INTEGER);\nALTER TABLE messages ADD COLUMN extra INTEGER;\n"
        "SELECT * FROM no_such_table;",
        "CREATE TABLE half_done (a INTEGER);\nCREATE TABLE (;",
    ],
    ids=["runtime-error", "parse-error"],
)
def test_a_failing_migration_is_rolled_back_and_named(tmp_path: Path, db_path: Path, bad_sql: str) -> None:
    directory = _migrations(tmp_path, {f"{NEXT}_broken.sql": bad_sql})
    with pytest.raises(MigrationError) as info:
        HistoryStore.open(db_path, strict=True, migrations=directory)
    assert f"{NEXT}_broken.sql" in str(info.value)
    assert info.value.version == LATEST + 1
    assert info.value.name == "broken"
    assert "nothing of it was applied" in str(info.value)
    with duckdb.connect(str(db_path), read_only=True) as con:
        versions = [r[0] for r in con.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()]
        assert versions == KNOWN
        assert "half_done" not in _tables(con)
        assert "extra" not in _columns(con, "messages")
    store = HistoryStore.open(db_path, migrations=directory)  # not strict: returns at once, then unavailable
    assert store.wait_open(timeout=30)
    assert not store.available
    assert store.problem is not None
    assert f"{NEXT}_broken.sql" in store.problem


def test_a_fixed_migration_applies_on_the_next_open(tmp_path: Path, db_path: Path) -> None:
    directory = _migrations(tmp_path, {f"{NEXT}_extra.sql": "SELECT * FROM missing;"})
    broken = HistoryStore.open(db_path, migrations=directory)
    assert broken.wait_open(timeout=30)
    assert not broken.available
    (directory / f"{NEXT}_extra.sql").write_text("ALTER TABLE messages ADD COLUMN extra INTEGER;")
    HistoryStore.open(db_path, strict=True, migrations=directory).close()
    with duckdb.connect(str(db_path), read_only=True) as con:
        assert "extra" in _columns(con, "messages")


def test_a_file_from_a_newer_version_is_refused_and_left_untouched(tmp_path: Path, db_path: Path) -> None:
    directory = _migrations(tmp_path, {f"{LATEST + 5:04d}_future.sql": "CREATE TABLE future (a INTEGER);"})
    HistoryStore.open(db_path, strict=True, migrations=directory).close()
    digest = hashlib.sha256(db_path.read_bytes()).hexdigest()
    listing = sorted(p.relative_to(db_path.parent) for p in db_path.parent.rglob("*"))
    with pytest.raises(SchemaTooNewError) as info:
        HistoryStore.open(db_path, strict=True)
    assert (info.value.file_version, info.value.known_version) == (LATEST + 5, LATEST)
    assert str(db_path) in str(info.value)
    assert "upgrade synapse_nb" in str(info.value)
    assert sorted(p.relative_to(db_path.parent) for p in db_path.parent.rglob("*")) == listing  # strict: no spool

    store = HistoryStore.open(db_path)  # not strict: paused, still recording into its spool
    assert store.wait_open(timeout=30)
    assert store.available
    assert store.problem is None
    assert store.paused is not None
    assert f"schema version {LATEST + 5}, newer than the {LATEST}" in store.paused
    assert "upgrade synapse_nb" in store.paused
    store.record(object())  # type: ignore[arg-type]  # a no-op, not an error
    from synapse_nb.history.reader import History

    with pytest.raises(SchemaTooNewError):
        store.history().sessions()
    with pytest.raises(SchemaTooNewError):
        History(db_path).sessions()
    store.close()
    assert hashlib.sha256(db_path.read_bytes()).hexdigest() == digest


def test_a_duckdb_file_that_is_not_a_history_file_is_refused(db_path: Path) -> None:
    with duckdb.connect(str(db_path)) as con:
        con.execute("CREATE TABLE unrelated (a INTEGER)")
    with pytest.raises(HistoryError, match="not a synapse_nb history file"):
        HistoryStore.open(db_path, strict=True)
    with duckdb.connect(str(db_path), read_only=True) as con:
        assert _tables(con) == {"unrelated"}


def test_badly_named_migration_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "1_x.sql").write_text("SELECT 1;")
    with pytest.raises(HistoryError, match=r"NNNN_name\.sql"):
        load_migrations(tmp_path)


def test_old_tool_calls_get_their_outcome_and_cancels_stop_counting_as_errors(tmp_path: Path, db_path: Path) -> None:
    """Migration 0008: rows written before it (a cancel stored as is_error with error 'cancelled') get `outcome`."""
    before = tmp_path / "m7"
    before.mkdir()
    for m in load_migrations():
        if m.version < 8:
            shutil.copy(m.path, before)
    with duckdb.connect(str(db_path)) as con:
        migrate(con, directory=before)
        con.execute(
            "INSERT INTO tool_calls (tool_call_id, is_error, error, approval) VALUES "
            "('ok', false, NULL, 'auto'), ('err', true, 'boom', 'auto'), ('cancel', true, 'cancelled', 'auto'), "
            "('deny', true, NULL, 'denied')"
        )
        assert [m.version for m in migrate(con)] == [v for v in KNOWN if v >= 8]
        rows = con.execute("SELECT tool_call_id, outcome, is_error FROM tool_calls ORDER BY tool_call_id").fetchall()
    assert rows == [("cancel", "cancelled", False), ("deny", "denied", False), ("err", "error", True),
                    ("ok", "ok", False)]


def test_old_tool_calls_get_their_origin_from_how_manual_calls_were_told(tmp_path: Path, db_path: Path) -> None:
    """Migration 0009: rows written before it get `origin`: 'manual' where approval = 'manual' (how calls made
    by hand were recorded), else 'agent'."""
    before = tmp_path / "m8"
    before.mkdir()
    for m in load_migrations():
        if m.version < 9:
            shutil.copy(m.path, before)
    with duckdb.connect(str(db_path)) as con:
        migrate(con, directory=before)
        con.execute(
            "INSERT INTO tool_calls (tool_call_id, approval) VALUES "
            "('by-hand', 'manual'), ('auto', 'auto'), ('asked', 'approved'), ('refused', 'denied'), ('none', NULL)"
        )
        assert [m.version for m in migrate(con)] == [v for v in KNOWN if v >= 9]
        rows = con.execute("SELECT tool_call_id, origin FROM tool_calls ORDER BY tool_call_id").fetchall()
    assert rows == [("asked", "agent"), ("auto", "agent"), ("by-hand", "manual"), ("none", "agent"),
                    ("refused", "agent")]


def test_tool_calls_spooled_before_origin_existed_get_it_on_ingest_as_the_migration_gave_old_rows(
    db_path: Path,
) -> None:
    """A kernel of the previous version spools tool calls without `origin`; ingested here they are filled as
    migration 0009 fills old rows, never left NULL."""
    import json

    from synapse_nb.history.ingest import insert_lines

    lines = [
        {"t": "tool_calls", "r": {"tool_call_id": "old-hand", "approval": "manual"}},
        {"t": "tool_calls", "r": {"tool_call_id": "old-agent", "approval": "auto"}},
        {"t": "tool_calls", "r": {"tool_call_id": "new-view", "approval": "manual", "origin": "app:apps"}},
    ]
    with duckdb.connect(str(db_path)) as con:
        migrate(con)
        assert insert_lines(con, "\n".join(json.dumps(line) for line in lines).encode() + b"\n") == 3
        rows = con.execute("SELECT tool_call_id, origin FROM tool_calls ORDER BY tool_call_id").fetchall()
    assert rows == [("new-view", "app:apps"), ("old-agent", "agent"), ("old-hand", "manual")]
