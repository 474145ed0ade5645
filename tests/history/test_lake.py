"""The Iceberg lake in a folder (the zero-setup case): publish exactly once, read like a history file, evolve,
compact, expire, and migrate a Parquet lake of the retired format. The team case (PostgreSQL + S3, several
processes, faults) is test_lake_team.py."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

import synapse_nb
from synapse_nb.errors import HistoryError, LakeError, SchemaTooNewError
from synapse_nb.history.catalog import known_version, load_migrations
from synapse_nb.history.lake import publish
from synapse_nb.history.lake_care import compact, expire
from synapse_nb.history.lake_catalog import LakeTables
from synapse_nb.history.lake_commit import MARK_PREFIX
from synapse_nb.history.lake_migrate import migrate_lake
from synapse_nb.history.lake_reader import Lake
from synapse_nb.history.lake_spec import lake_spec
from synapse_nb.history.reader import History
from synapse_nb.history.schema import COLUMNS, RELATIONS
from synapse_nb.history.store import HistoryStore
from tests.history.history_events import conversation, raw, tool_call

DAY = dt.datetime(2026, 11, 22, 23, 0, 0)


def _fill(db: Path, tag: str, first: int, last: int, *, conversation_too: bool = False,
          migrations: Path | None = None) -> set[str]:
    """Record tool calls first..last-1 of session `tag` (even ones on one date, odd ones on the next)."""
    with HistoryStore.open(db, strict=True, migrations=migrations) as store:
        if conversation_too:
            for event in conversation(tag):
                store.record(event)
        for i in range(first, last):
            store.record(tool_call(tag, i, when=DAY + dt.timedelta(hours=2 * (i % 2), seconds=i)))
    return {f"{tag}-c{i}" for i in range(first, last)}


def _ids(lake: Path | str, relation: str = "tool_calls") -> list[str]:
    """Every tool call id in the lake's current snapshot, straight from pyiceberg (duplicates kept)."""
    with LakeTables(lake_spec(lake)) as tables:
        table = tables.load(relation)
        if table is None:
            return []
        return [str(i) for i in table.scan(selected_fields=("tool_call_id",)).to_arrow().column(0).to_pylist()]


# ---- publishing ---------------------------------------------------------------------------------


@pytest.mark.slow  # a lake's whole cycle: seconds of pyiceberg; in `make test`, not `make quick`
def test_publish_appends_every_relation_once_and_again_only_what_is_new(db_path: Path, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    ids = _fill(db_path, "s1", 0, 6, conversation_too=True) | {"call_1"}
    first = synapse_nb.history(db_path).publish(lake)

    assert first.rows == {"sessions": 1, "messages": 4, "tool_calls": 7, "llm_calls": 2, "turns": 3,
                          "server_events": 2, "task_events": 0}
    assert repr(first) == (f"published 19 rows to {lake} (6 commits): sessions 1, messages 4, tool_calls 7, "
                           "llm_calls 2, turns 3, server_events 2")
    assert sorted(p.name for p in lake.iterdir()) == ["catalog.db", "warehouse"]  # SQLite catalog beside it
    assert sorted(_ids(lake)) == sorted(ids)
    with LakeTables(lake_spec(lake)) as tables:
        table = tables.load("tool_calls")
    assert table is not None
    assert [f.transform.__class__.__name__ for f in table.spec().fields] == ["DayTransform"]
    assert len({task.file.partition[0] for task in table.scan().plan_files()}) == 3  # three days
    summary = table.current_snapshot().summary.additional_properties  # type: ignore[union-attr]
    marks = {k: v for k, v in summary.items() if k.startswith(MARK_PREFIX)}
    assert len(marks) == 1  # this history file's high-water _seq, kept in the table's snapshot

    again = synapse_nb.history(db_path).publish(lake)
    assert again.total == 0
    assert repr(again) == f"nothing new to publish to {lake}"

    more = _fill(db_path, "s1", 6, 9)
    third = synapse_nb.history(db_path).publish(lake)
    assert third.rows == {**dict.fromkeys(RELATIONS, 0), "tool_calls": 3}
    assert sorted(_ids(lake)) == sorted(ids | more)


def test_publish_includes_events_still_in_the_spool_and_chunks_big_backlogs(db_path: Path, tmp_path: Path) -> None:
    store = HistoryStore.open(db_path, strict=True)
    try:
        for i in range(25):
            store.record(tool_call("live", i))
        assert store.pending_bytes > 0  # not ingested yet
        done = publish(db_path, tmp_path / "lake", chunk_rows=10)
    finally:
        store.close()
    assert done.rows["tool_calls"] == 25
    assert done.commits == 3  # 10 + 10 + 5: one commit per chunk
    assert sorted(_ids(tmp_path / "lake")) == sorted(f"live-c{i}" for i in range(25))


def test_a_file_of_an_older_schema_is_migrated_and_its_old_rows_published(db_path: Path, tmp_path: Path) -> None:
    older = tmp_path / "older-migrations"
    older.mkdir()
    for m in load_migrations():
        if m.version < 7:
            (older / m.path.name).write_text(m.sql)
    _fill(db_path, "old", 0, 3, migrations=older)
    published = History(db_path).publish(tmp_path / "lake")
    assert published.rows["tool_calls"] == 3
    assert sorted(_ids(tmp_path / "lake")) == ["old-c0", "old-c1", "old-c2"]


def test_nothing_recorded_publishes_nothing_and_creates_no_history_file(db_path: Path, tmp_path: Path) -> None:
    assert History(db_path).publish(tmp_path / "lake").total == 0
    assert not db_path.exists()


def test_s3_without_a_catalog_is_refused_and_never_becomes_a_local_folder(clean_env: Path, db_path: Path) -> None:
    """The defect: publish("s3://team/lake") wrote a folder named `s3:` in the working directory, and
    history("s3://team/lake") read it back."""
    _fill(db_path, "s", 0, 2)
    work = Path.cwd()
    with pytest.raises(LakeError, match=r"lake s3://team/lake has no catalog: set SYNAPSE_LAKE_CATALOG"):
        History(db_path).publish("s3://team/lake")
    with pytest.raises(LakeError, match="has no catalog"):
        synapse_nb.history("s3://team/lake").tool_calls()
    assert not (work / "s3:").exists()
    assert list(work.iterdir()) == []


def test_bad_lakes_are_refused_with_one_line(db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fill(db_path, "s", 0, 1)
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(LakeError, match="is a file: name a folder"):
        History(db_path).publish(a_file)
    photos = tmp_path / "photos"
    photos.mkdir()
    (photos / "cat.jpg").write_bytes(b"\xff")
    with pytest.raises(LakeError, match=r"holds other files \(cat.jpg, ...\): name an empty folder or a lake"):
        History(db_path).publish(photos)
    assert sorted(p.name for p in photos.iterdir()) == ["cat.jpg"]  # nothing half written
    with pytest.raises(LakeError, match="unsupported scheme 'gs'"):
        History(db_path).publish("gs://bucket/lake")
    config = tmp_path / "team.json"
    config.write_text(json.dumps({"catalog": "postgresql+psycopg://u:hunter2@db/lake", "warehouse": "s3://b/p",
                                  "s3": {"secret_access_key": "${env:LAKE_SECRET}"}}))
    with pytest.raises(LakeError, match=r"environment variable\(s\) not set: LAKE_SECRET \(in s3.secret_access_key\)"):
        lake_spec(config)
    monkeypatch.setenv("LAKE_SECRET", "s3cr3t-value")
    spec = lake_spec(config)
    assert spec.storage["s3.secret-access-key"] == "s3cr3t-value"
    assert "s3cr3t" not in repr(spec)
    assert "hunter2" not in repr(spec)
    assert "hunter2" not in spec.name
    (tmp_path / "bad.json").write_text('{"catalog": "sqlite:///x", "bucket": 1}')
    with pytest.raises(LakeError, match="unknown key"):
        lake_spec(tmp_path / "bad.json")
    lake = tmp_path / "lake"
    History(db_path).publish(lake)
    with pytest.raises(HistoryError, match="is a lake, opened read-only"):
        synapse_nb.history(lake).publish(tmp_path / "l3")


def test_a_history_file_too_new_is_not_published(db_path: Path, tmp_path: Path, newer: Path) -> None:
    _fill(db_path, "n", 0, 1, migrations=newer)
    with pytest.raises(SchemaTooNewError, match="upgrade synapse_nb"):
        History(db_path).publish(tmp_path / "lake")
    assert _ids(tmp_path / "lake") == []


# ---- reading ------------------------------------------------------------------------------------


@pytest.mark.slow  # a lake's whole cycle: seconds of pyiceberg; in `make test`, not `make quick`
def test_the_lake_reads_with_the_history_api(db_path: Path, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    _fill(db_path, "mine", 0, 4, conversation_too=True)
    _fill(tmp_path / "colleague.duckdb", "theirs", 0, 3, conversation_too=True)
    History(db_path).publish(lake)
    History(tmp_path / "colleague.duckdb").publish(lake)

    team = synapse_nb.history(lake)
    assert isinstance(team, Lake)
    assert repr(team) == f"<Lake {lake}>"
    sessions = team.sessions()
    assert sorted(sessions.session_id) == ["mine", "theirs"]
    assert list(sessions.columns) == [*COLUMNS["sessions"], "_schema", "_source", "_seq"]
    assert sessions._source.nunique() == 2
    assert set(sessions._schema) == {known_version()}
    calls = team.tool_calls(session_id="theirs")
    assert sorted(calls.tool_call_id) == ["call_1", "theirs-c0", "theirs-c1", "theirs-c2"]
    assert calls.started_at.is_monotonic_increasing
    assert list(team.tool_calls(limit=1).tool_call_id) == ["mine-c3"]  # the latest start
    assert sorted(team.tool_calls(since=DAY.date() + dt.timedelta(days=1)).tool_call_id) == ["mine-c1", "mine-c3",
                                                                                             "theirs-c1"]
    assert len(team.messages()) == 8
    assert len(team.turns()) == 6
    assert len(team.server_events(server="demo")) == 4
    by_tool = team.sql(
        "SELECT tool, count(*) AS n, sum((arguments->>'i')::INT) AS i FROM tool_calls GROUP BY tool ORDER BY tool"
    )
    assert by_tool.to_dict("records") == [{"tool": "echo", "n": 7, "i": 9}, {"tool": "query", "n": 2, "i": None}]
    assert team.sql("SELECT count(*) AS n FROM llm_calls").n[0] == 4
    assert team.find_session("theirs") == "theirs"
    messages, next_seq = team.transcript("mine")
    assert next_seq == 4
    assert messages[-1].content == "There are 42 orders."
    with pytest.raises(HistoryError, match="history query failed"):
        team.sql("SELECT nope FROM tool_calls")

    _fill(db_path, "mine", 4, 6)
    History(db_path).publish(lake)
    assert len(team.tool_calls(session_id="mine")) == 7  # the same reader sees commits made since


def test_filters_go_down_to_the_iceberg_scan(db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyiceberg.table import DataScan

    lake = tmp_path / "lake"
    _fill(db_path, "f", 0, 6)
    History(db_path).publish(lake)
    scans: list[tuple[str, tuple[str, ...], int]] = []
    real = DataScan.to_arrow

    def spy(self: DataScan) -> pa.Table:
        rows = real(self)
        scans.append((str(self.row_filter), tuple(self.selected_fields), len(list(self.plan_files()))))
        return rows

    monkeypatch.setattr(DataScan, "to_arrow", spy)
    team = synapse_nb.history(lake)
    assert len(team.tool_calls(since=DAY + dt.timedelta(hours=1))) == 3
    row_filter, _fields, files = scans[-1]
    assert "started_at" in row_filter
    assert files == 1  # one day's file of the two: the other day was pruned
    assert team.sql("SELECT tool, count(*) AS n FROM tool_calls GROUP BY tool").n[0] == 6
    assert scans[-1][1] == ("tool",)  # only the column the query names
    assert team.sql("SELECT count(*) AS n FROM tool_calls").n[0] == 6
    assert scans[-1][1] == ("started_at",)


def test_an_empty_lake_reads_as_empty_relations_with_their_columns(tmp_path: Path) -> None:
    (tmp_path / "lake").mkdir()
    team = synapse_nb.history(tmp_path / "lake")
    for relation in RELATIONS:
        frame = getattr(team, relation)()
        assert frame.empty
        assert list(frame.columns) == list(COLUMNS[relation])


def test_the_tables_are_read_by_duckdb_and_pyarrow_through_pyiceberg(db_path: Path, tmp_path: Path) -> None:
    """What the README shows: any engine reads the tables; here DuckDB over a pyiceberg scan, and Arrow."""
    from pyiceberg.catalog.sql import SqlCatalog

    lake = tmp_path / "lake"
    ids = _fill(db_path, "a", 0, 20)
    History(db_path).publish(lake)
    catalog = SqlCatalog("synapse", uri=f"sqlite:///{lake}/catalog.db", warehouse=str(lake / "warehouse"))
    try:
        calls = catalog.load_table("synapse.tool_calls").scan(row_filter="session_id == 'a'").to_arrow()
    finally:
        catalog.engine.dispose()  # its SQLite connections closed now, not by the garbage collector
    assert sorted(calls.column("tool_call_id").to_pylist()) == sorted(ids)
    assert json.loads(calls.column("arguments").to_pylist()[0])  # JSON as plain text
    assert calls.schema.field("started_at").type == pa.timestamp("us")
    with duckdb.connect() as con:
        assert con.sql("SELECT count(DISTINCT tool_call_id) FROM calls").fetchall() == [(20,)]


# ---- evolution and care --------------------------------------------------------------------------


@pytest.mark.slow  # a lake's whole cycle: seconds of pyiceberg; in `make test`, not `make quick`
def test_a_newer_schema_adds_its_columns_and_older_rows_read_null(db_path: Path, tmp_path: Path, newer: Path) -> None:
    lake = tmp_path / "lake"
    _fill(db_path, "old", 0, 2)
    History(db_path).publish(lake)
    newer_db = tmp_path / "newer.duckdb"
    _fill(newer_db, "new", 0, 2, migrations=newer)  # a newer synapse_nb: tool_calls has a `cost` column
    History(newer_db, migrations=newer).publish(lake)
    with LakeTables(lake_spec(lake)) as tables:
        table = tables.load("tool_calls")
    assert table is not None
    assert "cost" in [f.name for f in table.schema().fields]  # an Iceberg schema update, not a new table
    calls = synapse_nb.history(lake).tool_calls().set_index("tool_call_id")
    assert calls.cost.isna().all()  # the old rows have none; the newer writer recorded none either
    assert sorted(calls.index) == ["new-c0", "new-c1", "old-c0", "old-c1"]
    _fill(db_path, "old", 2, 3)
    assert History(db_path).publish(lake).rows["tool_calls"] == 1  # an older writer still publishes


@pytest.mark.slow  # a lake's whole cycle: seconds of pyiceberg; in `make test`, not `make quick`
def test_compact_and_expire_keep_every_row_once(db_path: Path, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    ids: set[str] = set()
    for r in range(3):  # three publishes: three files for each of the two days
        ids |= _fill(db_path, "c", r * 4, r * 4 + 4)
        History(db_path).publish(lake)
    tables = LakeTables(lake_spec(lake))

    done = compact(lake)
    assert done.files["tool_calls"] == (6, 2)
    assert "tool_calls 6 -> 2" in repr(done)
    assert sorted(_ids(lake)) == sorted(ids)
    assert repr(compact(lake)) == f"nothing to compact in {lake}: every day is one file"
    _fill(db_path, "c", 12, 14)
    assert History(db_path).publish(lake).rows["tool_calls"] == 2  # the marks survived the rewrite
    assert History(db_path).publish(lake).total == 0
    assert sorted(_ids(lake)) == sorted(ids | {"c-c12", "c-c13"})

    before = len(tables.load("tool_calls").metadata.snapshots)  # type: ignore[union-attr]
    gone = expire(lake, older_than=dt.timedelta(0))
    table = tables.load("tool_calls")
    assert table is not None
    assert len(table.metadata.snapshots) == 1 < before
    assert gone.snapshots["tool_calls"] == before - 1
    assert gone.files["tool_calls"] == 6  # the small files compaction replaced
    assert sorted(_ids(lake)) == sorted(ids | {"c-c12", "c-c13"})
    assert History(db_path).publish(lake).total == 0


def _old_lake(folder: Path, db: Path, tag: str, n: int) -> None:
    """A Parquet lake as the retired rename protocol wrote it: a marker, relation=/date= folders, parts
    named by source and _seq range, with the _schema/_source/_seq columns."""
    _fill(db, tag, 0, n)
    (folder / "_lake.json").parent.mkdir(parents=True, exist_ok=True)
    (folder / "_lake.json").write_text(json.dumps({"format": "synapse_nb-lake", "version": 1, "lake_id": "x"}))
    with duckdb.connect(str(db)) as con:
        source = con.sql("SELECT source_id FROM _lake_source").fetchall()[0][0]
        for day in con.sql("SELECT DISTINCT CAST(started_at AS DATE) FROM tool_calls").fetchall():
            part = folder / "relation=tool_calls" / f"date={day[0]}"
            part.mkdir(parents=True)
            con.sql(f"COPY (SELECT * EXCLUDE (arguments, result), CAST(arguments AS VARCHAR) AS arguments, "
                    f"CAST(result AS VARCHAR) AS result, {known_version()}::INTEGER AS _schema, '{source}' AS _source "
                    f"FROM tool_calls WHERE CAST(started_at AS DATE) = DATE '{day[0]}') "
                    f"TO '{part}/part-{source}-0-{n}.parquet' (FORMAT parquet)")


@pytest.mark.slow  # a lake's whole cycle: seconds of pyiceberg; in `make test`, not `make quick`
def test_a_parquet_lake_of_the_retired_format_migrates_once(db_path: Path, tmp_path: Path) -> None:
    old, new = tmp_path / "old-lake", tmp_path / "new-lake"
    _old_lake(old, db_path, "m", 6)
    with pytest.raises(LakeError, match=r"Parquet lake of the retired format: .*%synapse lake migrate"):
        History(db_path).publish(old)

    moved = migrate_lake(old, new)
    assert moved.rows["tool_calls"] == 6
    assert moved.sources == 1
    assert repr(moved).startswith(f"moved 6 rows of 1 history files from {old} into {new}: tool_calls 6;")
    assert sorted(_ids(new)) == sorted(f"m-c{i}" for i in range(6))
    assert migrate_lake(old, new).total == 0  # twice: nothing doubled
    assert History(db_path).publish(new).rows["tool_calls"] == 0  # its history file goes on where the old lake was
    _fill(db_path, "m", 6, 8)
    published = History(db_path).publish(new)
    assert published.rows["tool_calls"] == 2
    assert sum(published.rows.values()) == 2
    assert sorted(_ids(new)) == sorted(f"m-c{i}" for i in range(8))
    with pytest.raises(LakeError, match="not a Parquet lake of the retired format"):
        migrate_lake(tmp_path / "nothing", new)


def test_every_relation_numbers_its_rows_for_the_lake(db_path: Path) -> None:
    """Guards later migrations: a table rebuilt without `_seq DEFAULT nextval('_lake_seq')` could not be published."""
    HistoryStore.open(db_path, strict=True).close()
    defaults = dict(raw(db_path, "SELECT table_name, column_default FROM duckdb_columns() WHERE column_name = '_seq'"))
    assert set(defaults) == set(RELATIONS)
    assert all("nextval('_lake_seq')" in str(d) for d in defaults.values()), defaults


def test_a_namespace_another_publisher_created_meanwhile_is_taken(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Two publishers creating the lake's first tables at once: the one whose check saw no namespace loses the
    catalog's insert (a unique-key violation in a SQL catalog), and goes on with the namespace the other made."""
    spec = lake_spec(tmp_path / "lake")
    with LakeTables(spec) as first:
        first.ensure("sessions", pa.schema([]))
    with LakeTables(spec) as second:
        real = second.catalog.namespace_exists
        checks: list[object] = []

        def checked_before_the_other_made_it(namespace: object) -> bool:
            checks.append(namespace)
            return False if len(checks) == 1 else bool(real(namespace))  # type: ignore[arg-type]

        monkeypatch.setattr(second.catalog, "namespace_exists", checked_before_the_other_made_it)
        table = second.ensure("tool_calls", pa.schema([]))
        assert checks  # the race was run: its check said "no namespace"
        assert [f.name for f in table.schema().fields][:1] == ["tool_call_id"]
