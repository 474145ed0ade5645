"""The Parquet lake: publish appends exactly once (also across crashes), and the lake reads like a history file."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import synapse_nb
from synapse_nb.errors import HistoryError, SchemaTooNewError
from synapse_nb.history.catalog import known_version, load_migrations
from synapse_nb.history.lake_dir import MARKER, ensure_lake, parse_part, relation_files
from synapse_nb.history.lake_reader import Lake
from synapse_nb.history.reader import History
from synapse_nb.history.schema import COLUMNS, RELATIONS
from synapse_nb.history.store import HistoryStore
from tests.history.history_events import conversation, raw, tool_call

DAY = dt.datetime(2026, 11, 22, 23, 0, 0)


def _fill(db: Path, tag: str, first: int, last: int, *, conversation_too: bool = False) -> set[str]:
    """Record tool calls first..last-1 of session `tag` (even ones on one date, odd ones on the next)."""
    with HistoryStore.open(db, strict=True) as store:
        if conversation_too:
            for event in conversation(tag):
                store.record(event)
        for i in range(first, last):
            store.record(tool_call(tag, i, when=DAY + dt.timedelta(hours=2 * (i % 2), seconds=i)))
    return {f"{tag}-c{i}" for i in range(first, last)}


def _lake_ids(lake: Path) -> list[str]:
    """Every tool call id in the lake's parts, read by DuckDB straight from the files (duplicates kept)."""
    if not relation_files(lake, "tool_calls"):
        return []
    with duckdb.connect() as con:
        rows = con.execute(
            f"SELECT tool_call_id FROM read_parquet('{lake}/relation=tool_calls/**/*.parquet', "
            "hive_partitioning = true, union_by_name = true)"
        ).fetchall()
    return [r[0] for r in rows]


def _watermarks(db: Path) -> dict[str, tuple[int, int | None]]:
    return {r: (p, q) for r, p, q in raw(db, "SELECT relation, published, pending FROM _lake_published")}


def _crash(repo_root: Path, db: Path, lake: Path, point: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(repo_root), PYTHONWARNINGS="error")
    done = subprocess.run(
        [sys.executable, "-m", "tests.history.lake_proc", "crash", str(db), str(lake), point],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 17, done.stderr  # died at the crash point, not before or after


# ---- publishing ---------------------------------------------------------------------------------


def test_publish_appends_every_relation_once_and_again_only_what_is_new(db_path: Path, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    ids = _fill(db_path, "s1", 0, 6, conversation_too=True)
    first = synapse_nb.history(db_path).publish(lake)

    assert first.rows == {"sessions": 1, "messages": 4, "tool_calls": 7, "llm_calls": 2, "turns": 3,
                          "server_events": 2}
    assert first.total == 19
    assert "published 19 rows" in repr(first)
    assert sorted(_lake_ids(lake)) == sorted(ids | {"call_1"})
    files = relation_files(lake, "tool_calls")
    assert first.files == len({f for r in RELATIONS for f in relation_files(lake, r)})
    # tool calls on three dates: the conversation's day, and the two days the numbered calls alternate over
    assert sorted(f.parent.name for f in files) == ["date=2025-03-01", "date=2026-11-22", "date=2026-11-23"]
    assert all(f.parent.parent.name == "relation=tool_calls" for f in files)
    _source, lo, hi = parse_part(files[0].name)  # type: ignore[misc]
    assert lo == 0
    assert hi > 0
    assert len({parse_part(f.name) for f in files}) == 1

    again = synapse_nb.history(db_path).publish(lake)
    assert again.total == 0
    assert again.files == 0
    assert repr(again) == f"nothing new to publish to {lake}"
    assert sorted(_lake_ids(lake)) == sorted(ids | {"call_1"})

    more = _fill(db_path, "s1", 6, 9)
    third = synapse_nb.history(db_path).publish(lake)
    assert third.rows == {**dict.fromkeys(RELATIONS, 0), "tool_calls": 3}
    assert sorted(_lake_ids(lake)) == sorted(ids | more | {"call_1"})
    assert {r: p for r, (p, _q) in _watermarks(db_path).items()}["tool_calls"] == max(
        r[0] for r in raw(db_path, "SELECT _seq FROM tool_calls")
    )
    assert all(q is None for _p, q in _watermarks(db_path).values())
    assert not [p for p in lake.rglob("*") if p.name.endswith(".tmp")]


def test_publish_includes_events_still_in_the_spool(db_path: Path, tmp_path: Path) -> None:
    store = HistoryStore.open(db_path, strict=True)
    try:
        store.record(tool_call("live", 0))
        store.record(tool_call("live", 1))
        assert store.pending_bytes > 0  # not ingested yet
        published = store.history().publish(tmp_path / "lake")
    finally:
        store.close()
    assert published.rows["tool_calls"] == 2
    assert sorted(_lake_ids(tmp_path / "lake")) == ["live-c0", "live-c1"]


def test_big_backlogs_go_out_in_chunks_of_bounded_size(db_path: Path, tmp_path: Path) -> None:
    from synapse_nb.history.lake import publish

    ids = _fill(db_path, "big", 0, 25)
    done = publish(db_path, tmp_path / "lake", chunk_rows=10)
    assert done.rows["tool_calls"] == 25
    ranges = sorted({parse_part(f.name)[1:] for f in relation_files(tmp_path / "lake", "tool_calls")})  # type: ignore[index]
    assert [hi - lo for lo, hi in ranges] == [10, 10, 5]  # _seq numbers are dense within one ingest
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))  # contiguous, no overlap
    assert sorted(_lake_ids(tmp_path / "lake")) == sorted(ids)


def test_a_file_of_an_older_schema_is_migrated_and_its_old_rows_published(db_path: Path, tmp_path: Path) -> None:
    older = tmp_path / "older-migrations"
    older.mkdir()
    for m in load_migrations():
        if m.version < 7:
            (older / m.path.name).write_text(m.sql)
    with HistoryStore.open(db_path, strict=True, migrations=older) as store:
        for i in range(3):
            store.record(tool_call("old", i))
    assert "_lake_published" not in {r[0] for r in raw(db_path, "SELECT table_name FROM duckdb_tables()")}
    published = History(db_path).publish(tmp_path / "lake")
    assert published.rows["tool_calls"] == 3
    assert max(r[0] for r in raw(db_path, "SELECT version FROM schema_migrations")) == known_version()
    assert sorted(_lake_ids(tmp_path / "lake")) == ["old-c0", "old-c1", "old-c2"]


def test_nothing_recorded_publishes_nothing_and_creates_no_history_file(db_path: Path, tmp_path: Path) -> None:
    published = History(db_path).publish(tmp_path / "lake")
    assert published.total == 0
    assert not db_path.exists()


def test_bad_destinations_are_refused_with_one_line(db_path: Path, tmp_path: Path) -> None:
    _fill(db_path, "s", 0, 1)
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(HistoryError, match="it is a file; name a directory"):
        History(db_path).publish(a_file)
    other = tmp_path / "photos"
    other.mkdir()
    (other / "cat.jpg").write_bytes(b"\xff")
    with pytest.raises(HistoryError, match="holds other files; name an empty directory or an existing lake"):
        History(db_path).publish(other)
    assert sorted(p.name for p in other.iterdir()) == ["cat.jpg"]  # nothing half written
    newer = tmp_path / "newer-lake"
    newer.mkdir()
    (newer / MARKER).write_text(json.dumps({"format": "synapse_nb-lake", "version": 99, "lake_id": "x"}))
    with pytest.raises(HistoryError, match="layout version 99, newer than the 1"):
        History(db_path).publish(newer)
    assert isinstance(synapse_nb.history(ensure_lake(tmp_path / "l2").path), Lake)
    with pytest.raises(HistoryError, match="is a lake, opened read-only"):
        synapse_nb.history(tmp_path / "l2").publish(tmp_path / "l3")


def test_a_history_file_too_new_is_not_published(db_path: Path, tmp_path: Path, newer: Path) -> None:
    with HistoryStore.open(db_path, strict=True, migrations=newer) as store:
        store.record(tool_call("n", 0))
    with pytest.raises(SchemaTooNewError, match="upgrade synapse_nb"):
        History(db_path).publish(tmp_path / "lake")
    assert relation_files(tmp_path / "lake", "tool_calls") == []


# ---- crashes ------------------------------------------------------------------------------------


@pytest.mark.process
@pytest.mark.parametrize("point", ["claimed", "written", "placed-one", "placed"])
def test_a_publish_that_died_is_redone_by_the_next_with_nothing_lost_or_doubled(
    point: str, repo_root: Path, db_path: Path, tmp_path: Path
) -> None:
    lake = tmp_path / "lake"
    ids = _fill(db_path, "c", 0, 10)  # two dates: two parts for the range
    _crash(repo_root, db_path, lake, point)

    marks = _watermarks(db_path)
    assert marks["tool_calls"][0] == 0
    assert marks["tool_calls"][1] is not None
    on_disk = sorted(_lake_ids(lake))
    expected_on_disk = {"claimed": 0, "written": 0, "placed-one": 5, "placed": 10}[point]
    assert len(on_disk) == expected_on_disk
    assert len(set(on_disk)) == len(on_disk)
    if point == "written":  # the temporary parts stay behind under names no reader reads
        assert len([p for p in lake.rglob(".part-*.tmp")]) == 2

    later = _fill(db_path, "c", 10, 13)  # rows recorded after the crash go in a later range
    redone = History(db_path).publish(lake)
    assert redone.rows["tool_calls"] == 13
    assert sorted(_lake_ids(lake)) == sorted(ids | later)  # exact: none lost, none twice
    assert all(q is None for _p, q in _watermarks(db_path).values())
    assert History(db_path).publish(lake).total == 0
    assert sorted(synapse_nb.history(lake).tool_calls().tool_call_id) == sorted(ids | later)


# ---- reading ------------------------------------------------------------------------------------


def test_the_lake_reads_with_the_history_api(db_path: Path, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    other = tmp_path / "colleague.duckdb"
    _fill(db_path, "mine", 0, 4, conversation_too=True)
    _fill(other, "theirs", 0, 3, conversation_too=True)
    History(db_path).publish(lake)
    History(other).publish(lake)

    team = synapse_nb.history(lake)
    assert isinstance(team, Lake)
    assert repr(team) == f"<Lake {lake}>"
    sessions = team.sessions()
    assert sorted(sessions.session_id) == ["mine", "theirs"]
    assert list(sessions.columns[: len(COLUMNS["sessions"])]) == list(COLUMNS["sessions"])
    assert {"_source", "_schema", "_seq", "date"} <= set(sessions.columns)
    assert "relation" not in sessions.columns
    assert sessions._source.nunique() == 2
    assert set(sessions._schema) == {known_version()}
    calls = team.tool_calls(session_id="theirs")
    assert sorted(calls.tool_call_id) == ["call_1", "theirs-c0", "theirs-c1", "theirs-c2"]
    assert calls.started_at.is_monotonic_increasing
    assert list(team.tool_calls(limit=1).tool_call_id) == ["mine-c3"]  # the latest start
    assert len(team.messages()) == 8
    assert len(team.turns()) == 6
    assert len(team.llm_calls()) == 4
    assert len(team.server_events(server="demo")) == 4
    by_tool = team.sql(
        "SELECT tool, count(*) AS n, sum((arguments->>'i')::INT) AS i FROM tool_calls GROUP BY tool ORDER BY tool"
    )
    assert by_tool.to_dict("records") == [{"tool": "echo", "n": 7, "i": 9}, {"tool": "query", "n": 2, "i": None}]
    assert team.find_session("theirs") == "theirs"
    messages, next_seq = team.transcript("mine")
    assert next_seq == 4
    assert messages[-1].content == "There are 42 orders."
    with pytest.raises(HistoryError, match="history query failed"):
        team.sql("SELECT nope FROM tool_calls")

    _fill(db_path, "mine", 4, 6)
    History(db_path).publish(lake)
    assert len(team.tool_calls(session_id="mine")) == 7  # the same reader sees parts published since


def test_an_empty_lake_reads_as_empty_relations_with_their_columns(tmp_path: Path) -> None:
    team = synapse_nb.history(ensure_lake(tmp_path / "lake").path)
    for relation in RELATIONS:
        frame = getattr(team, relation)()
        assert frame.empty
        assert list(frame.columns) == list(COLUMNS[relation])


def test_older_and_newer_parts_read_together(db_path: Path, tmp_path: Path) -> None:
    """A part of an older synapse_nb (fewer columns, no `_seq`), one of a newer (an extra column), and ours."""
    lake = tmp_path / "lake"
    _fill(db_path, "now", 0, 2)
    History(db_path).publish(lake)
    old_dir = lake / "relation=tool_calls" / "date=2025-01-01"
    old_dir.mkdir(parents=True)
    with duckdb.connect() as con:
        con.execute(
            f"COPY (SELECT 'old-1' AS tool_call_id, 'o' AS session_id, 'demo' AS server, 'echo' AS tool, "
            f"'{{\"a\": 1}}' AS arguments, TIMESTAMP '2025-01-01 10:00:00' AS started_at, 3::INTEGER AS _schema, "
            f"'0ld' AS _source) TO '{old_dir}/part-0ld-0-1.parquet' (FORMAT parquet)"
        )
        con.execute(
            f"COPY (SELECT 'new-1' AS tool_call_id, 'n' AS session_id, 'demo' AS server, 'echo' AS tool, "
            f"TIMESTAMP '2025-01-01 11:00:00' AS started_at, 0.25::DOUBLE AS cost_usd, "
            f"{known_version() + 1}::INTEGER AS _schema, 'new' AS _source, 5::BIGINT AS _seq) "
            f"TO '{old_dir}/part-new-4-5.parquet' (FORMAT parquet)"
        )
    calls = synapse_nb.history(lake).tool_calls()
    assert sorted(calls.tool_call_id) == ["new-1", "now-c0", "now-c1", "old-1"]
    by_id = calls.set_index("tool_call_id")
    assert by_id.loc["old-1", "arguments"] == '{"a": 1}'
    assert by_id.isna().loc["old-1", "approval"]
    assert by_id.loc["new-1", "cost_usd"] == 0.25
    assert by_id.isna().loc["now-c0", "cost_usd"]
    assert by_id.loc["now-c0", "approval"] == "auto"
    assert sorted(calls._schema.unique()) == [3, known_version(), known_version() + 1]
    assert synapse_nb.history(lake).sql(
        "SELECT count(*) AS n FROM tool_calls WHERE arguments->>'a' = '1'"
    ).n[0] == 1  # JSON functions work on old parts too


def test_the_lake_is_read_by_duckdb_pyarrow_and_polars(db_path: Path, tmp_path: Path) -> None:
    import polars as pl
    import pyarrow.dataset as ds

    lake = tmp_path / "lake"
    ids = _fill(db_path, "a", 0, 20, conversation_too=True) | _fill(tmp_path / "b.duckdb", "b", 0, 15)
    History(db_path).publish(lake)
    History(tmp_path / "b.duckdb").publish(lake)
    ids |= {"call_1"}

    assert sorted(_lake_ids(lake)) == sorted(ids)
    table = ds.dataset(lake / "relation=tool_calls", format="parquet", partitioning="hive").to_table()
    assert sorted(table.column("tool_call_id").to_pylist()) == sorted(ids)
    assert set(table.column("date").to_pylist()) == {"2025-03-01", "2026-11-22", "2026-11-23"}
    assert json.loads(table.column("arguments").to_pylist()[0])  # JSON as plain text
    frame = pl.scan_parquet(lake / "relation=tool_calls" / "**" / "*.parquet", hive_partitioning=True).collect()
    assert sorted(frame["tool_call_id"].to_list()) == sorted(ids)
    assert frame.schema["arguments"] == pl.String
    assert frame.schema["started_at"] == pl.Datetime("us")
    per_session = dict(frame.group_by("session_id").len().iter_rows())
    assert per_session == {"a": 21, "b": 15}


def test_every_relation_numbers_its_rows_for_the_lake(db_path: Path) -> None:
    """Guards later migrations: a table rebuilt without `_seq DEFAULT nextval('_lake_seq')` could not be published."""
    HistoryStore.open(db_path, strict=True).close()
    defaults = dict(raw(db_path, "SELECT table_name, column_default FROM duckdb_columns() WHERE column_name = '_seq'"))
    assert set(defaults) == set(RELATIONS)
    assert all("nextval('_lake_seq')" in str(d) for d in defaults.values()), defaults


def test_who_asked_for_each_tool_call_is_published_and_read_back(db_path: Path, tmp_path: Path) -> None:
    """tool_calls.origin (migration 0009) travels to the lake: the agent's, a hand call, an MCP Apps View's."""
    from dataclasses import replace

    with HistoryStore.open(db_path, strict=True) as store:
        store.record(tool_call("o", 0))
        store.record(replace(tool_call("o", 1), approval="manual", origin="manual"))
        store.record(replace(tool_call("o", 2), approval="manual", origin="app:apps"))
    History(db_path).publish(tmp_path / "lake")
    team = synapse_nb.history(tmp_path / "lake")
    rows = team.sql("SELECT tool_call_id, origin FROM tool_calls ORDER BY tool_call_id")
    assert rows.values.tolist() == [["o-c0", "agent"], ["o-c1", "manual"], ["o-c2", "app:apps"]]
