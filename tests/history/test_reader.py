"""Reading: filters, SQL with JSON functions, Parquet export, and reads that include unflushed events."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import warnings
from pathlib import Path

import duckdb
import pandas as pd
import pytest

import synapse_nb
from synapse_nb.errors import HistoryError
from synapse_nb.history.catalog import known_version, load_migrations
from synapse_nb.history.reader import History, history
from synapse_nb.history.schema import COLUMNS, RELATIONS
from synapse_nb.history.store import HistoryStore
from tests.history.history_events import at, conversation, raw, tool_call


@pytest.fixture
def filled(store: HistoryStore) -> HistoryStore:
    for sid, base in (("s1", 0.0), ("s2", 100.0)):
        for event in conversation(sid, base=base):
            store.record(event)
    return store


def test_history_reads_the_file_synapse_db_names(filled: HistoryStore, db_path: Path) -> None:
    h = synapse_nb.history()
    assert isinstance(h, synapse_nb.History)
    assert h.path == db_path
    assert list(h.sessions().session_id) == ["s1", "s2"]


def test_filters_by_session_and_time(filled: HistoryStore) -> None:
    h = history()
    assert set(h.messages("s2").session_id) == {"s2"}
    assert len(h.messages("s2")) == 4
    assert list(h.messages().session_id) == ["s1"] * 4 + ["s2"] * 4
    assert list(h.messages().seq) == [0, 1, 2, 3] * 2
    assert list(h.llm_calls(since=at(50)).session_id) == ["s2", "s2"]
    assert list(h.llm_calls(until=at(50)).session_id) == ["s1", "s1"]
    assert len(h.turns(since=at(100), until=at(105))) == 1  # [since, until)
    aware = dt.datetime(2025, 3, 1, 13, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))  # 12:00 UTC
    assert len(h.sessions(since=aware)) == 2
    assert len(h.sessions(since="2025-03-01 12:01:00")) == 1
    assert list(h.server_events(server="demo").event) == ["connected", "crashed"] * 2
    assert list(h.tool_calls(limit=1).session_id) == ["s2"]
    assert h.messages(session_id="nope").empty
    assert list(h.messages(session_id="nope").columns) == list(COLUMNS["messages"])


def test_sql_with_json_functions(filled: HistoryStore) -> None:
    df = history().sql(
        "SELECT session_id, arguments->>'table' AS tbl, result->>'$.structured_content.count' AS n, "
        "json_extract_string(tool_calls, '$[0].name') AS first FROM tool_calls "
        "LEFT JOIN messages USING (session_id, message_id) ORDER BY session_id"
    )
    assert df.to_dict("records") == [
        {"session_id": "s1", "tbl": "orders", "n": "42", "first": "demo__query"},
        {"session_id": "s2", "tbl": "orders", "n": "42", "first": "demo__query"},
    ]
    params = history().sql('SELECT count(*) AS n FROM server_events WHERE "at" >= ?', [at(100)])
    assert params.n[0] == 2
    versions = history().sql("SELECT version FROM schema_migrations ORDER BY 1").version.tolist()
    assert versions == [m.version for m in load_migrations()]


def test_frames_are_typed_and_raise_no_warnings(filled: HistoryStore) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tc = history().tool_calls()
    assert str(tc.started_at.dtype).startswith("datetime64")
    assert tc.duration_ms.dtype == "float64"
    assert list(tc.columns) == list(COLUMNS["tool_calls"])


def test_reads_include_events_not_yet_ingested_exactly_once(store: HistoryStore, db_path: Path) -> None:
    for i in range(50):
        store.record(tool_call("s", i))
    assert len(history().tool_calls()) == 50  # complete before any flush...
    store.flush()
    assert raw(db_path, "SELECT count(*) FROM tool_calls") == [(50,)]
    for i in range(50, 70):
        store.record(tool_call("s", i))
    calls = history().tool_calls()  # ...and after a partial one, with nothing counted twice
    assert len(calls) == 70
    assert calls.tool_call_id.is_unique


def test_a_missing_file_reads_as_empty_relations(clean_env: Path) -> None:
    h = History(clean_env / "never" / "made.duckdb")
    for relation in RELATIONS:
        df = getattr(h, relation)()
        assert df.empty
        assert list(df.columns) == list(COLUMNS[relation])
    assert not (clean_env / "never").exists()


def test_export_writes_one_parquet_per_relation(filled: HistoryStore, tmp_path: Path) -> None:
    files = history().export(tmp_path / "out")
    assert [f.name for f in files] == [f"{r}.parquet" for r in RELATIONS]
    back = pd.read_parquet(tmp_path / "out" / "tool_calls.parquet")
    assert len(back) == 2
    assert set(back.session_id) == {"s1", "s2"}
    assert len(pd.read_parquet(tmp_path / "out" / "messages.parquet")) == 8


def test_an_old_file_is_read_as_it_is_without_migrating_it(tmp_path: Path, db_path: Path) -> None:
    from synapse_nb.history.migrate import migrate, migrations_dir
    from synapse_nb.history.spool import spool_dir

    only_first = tmp_path / "m1"
    only_first.mkdir()
    (only_first / "0001_sessions_messages.sql").write_text(
        (migrations_dir() / "0001_sessions_messages.sql").read_text()
    )
    with duckdb.connect(str(db_path)) as con:
        migrate(con, directory=only_first)
        con.execute(
            "INSERT INTO messages (message_id, session_id, seq, role, content) VALUES ('m', 's', 0, 'user', 'hi')"
        )
    # A spool a writer left before it could bring the file up to date (no _ingest_offsets in a schema-1 file).
    spool_dir(db_path).mkdir()
    (spool_dir(db_path) / f"elsewhere-1-{'b' * 12}.v{known_version()}.jsonl").write_text(
        '{"t":"messages","r":{"message_id":"m2","session_id":"s","seq":1,"role":"assistant","content":"yo",'
        '"tool_calls":[{"id":"c","name":"t","arguments":{}}]}}\n'
    )
    messages = history().messages()
    assert messages.content.tolist() == ["hi", "yo"]
    assert list(messages.columns) == list(COLUMNS["messages"])  # the columns this code knows, NULL where absent
    assert pd.isna(messages.tool_calls[0])
    assert history().tool_calls().empty  # no such table in the file yet: empty, with its columns
    assert list(history().tool_calls().columns) == list(COLUMNS["tool_calls"])
    assert list(history().tool_calls(limit=5).columns) == list(COLUMNS["tool_calls"])
    assert history().sql("SELECT version FROM schema_migrations").version.tolist() == [1]
    assert raw(db_path, "SELECT version FROM schema_migrations") == [(1,)]  # read, not migrated
    assert {r[0] for r in raw(db_path, "SELECT table_name FROM duckdb_tables()")} == {"messages", "sessions",
                                                                                      "schema_migrations"}


def test_a_bad_query_is_one_history_error_line(filled: HistoryStore) -> None:
    with pytest.raises(HistoryError, match=r"^history query failed: Parser Error: syntax error") as info:
        history().sql("SELECT * FROMM tool_calls")
    assert "\n" not in str(info.value)
    assert len(history().tool_calls()) == 2  # the reader is still fine afterwards


def test_a_read_that_finds_a_large_backlog_ingests_it_once(store: HistoryStore, db_path: Path) -> None:
    from synapse_nb.history.reader import INGEST_ON_READ

    store._stop.set()  # park this store's flusher: the backlog stays in the spool
    store._wake.set()  # (it waits on its wake event, up to its next scan: seconds)
    assert store._thread is not None
    store._thread.join(timeout=30)
    i = 0
    while store.pending_bytes < INGEST_ON_READ:
        store.record(tool_call("s", i))
        i += 1
    assert raw(db_path, "SELECT count(*) FROM tool_calls") == [(0,)]
    calls = history().tool_calls()
    assert len(calls) == i
    assert calls.tool_call_id.is_unique
    assert raw(db_path, "SELECT count(*) FROM tool_calls") == [(i,)]  # the read moved them into the file
    store.record(tool_call("s", i))
    assert len(history().tool_calls()) == i + 1  # and merges what is left, counting nothing twice


def test_rows_answers_like_sql_as_tuples(filled: HistoryStore) -> None:
    h = history()
    query = "SELECT session_id, count(*) FROM messages WHERE session_id <> $1 GROUP BY 1 ORDER BY 1"
    assert h.rows(query, ["nope"]) == [("s1", 4), ("s2", 4)]
    assert h.rows(query, ["nope"]) == list(h.sql(query, ["nope"]).itertuples(index=False, name=None))
    assert h.rows("SELECT 1 FROM sessions WHERE name = $1", ["nobody"]) == []
    assert h.find_session("s2") == "s2"
    with pytest.raises(HistoryError, match=r"^history query failed: .*no_such_table") as info:
        h.rows("SELECT * FROM no_such_table")
    assert "\n" not in str(info.value)


def test_a_session_lookup_merges_only_the_spooled_sessions(store: HistoryStore) -> None:
    """`find_session` (on a cell's path for a new `--session NAME`) merges the spool's session lines only; a
    read after it still sees every relation whole."""
    store._stop.set()  # park this store's flusher: everything stays in the spool
    store._wake.set()
    assert store._thread is not None
    store._thread.join(timeout=30)
    for event in conversation("spooled-session", base=0.0):
        store.record(event)
    store.record(tool_call("spooled-session", 0))
    h = history()
    assert h.find_session("spooled-session") == "spooled-session"
    assert h.find_session("spooled-s") == "spooled-session"  # an id prefix
    assert h.find_session("nobody") is None
    only = "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM tool_calls)"
    calls = len(h.tool_calls())
    assert calls >= 2  # the conversation's call and the one above, all still spooled
    assert h.rows(only, relations=("sessions",)) == [(1, 0)]  # what it skips: the other relations' lines
    assert h.rows(only) == [(1, calls)]
    assert len(h.sessions()) == 1
    assert len(h.tool_calls()) == calls


@pytest.mark.process
def test_rows_reads_the_history_without_loading_pandas(filled: HistoryStore, db_path: Path) -> None:
    """The lookup a cell makes before its first output (is this session name taken?) must not pay for
    importing pandas and pyarrow (about a second in a fresh kernel)."""
    filled.flush()
    code = (
        "import sys\n"
        "from synapse_nb.history.reader import History\n"
        f"print(History({str(db_path)!r}).rows('SELECT count(*) FROM sessions'), "
        "'pandas' in sys.modules, 'pyarrow' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["[(2,)]", "False", "False"]
