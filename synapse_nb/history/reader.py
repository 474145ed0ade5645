"""Reading the history: `history(path)` returns a `History` whose methods return pandas DataFrames.

A History keeps a private in-memory DuckDB and, for each read, attaches the history file for as long
as the query runs (retrying while a writer holds it for an ingest; ~1 ms when free), with the
relations as views that add the spool lines not yet ingested. The ingested offsets are read in that
same window, during which no ingest can run, so every row is counted exactly once and every recorded
event is visible, whether or not a flusher has got to it yet. A read that finds a large backlog
ingests it first (once) instead of merging it on every read. A missing file reads as empty relations.

A reader never migrates: a file written with an older schema is read as it is, each relation shown
with the columns this code knows (NULL where the file has none yet, empty where it has no such
table), and its backlog is left to a writer. A file newer than this code is refused with a one-line
SchemaTooNewError (its newer spools and columns could not be shown faithfully).
Note `at` (server_events) is an SQL keyword: write it `"at"` in queries.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from ..config import history_path
from ..errors import HistoryError
from ..types import Message
from .catalog import known_version, view_query
from .db import QUIET, describe_error, file_lock, is_lock_conflict, retry_locked, run
from .ingest import ingest, insert_lines, pending_bytes, pending_lines, read_offsets
from .migrate import check_version
from .queries import FIND_SESSION, When, empty_relation, known_columns, quote_path, select
from .schema import COLUMNS, RELATIONS, SQL_TYPE
from .spool import spool_dir
from .transcript import messages_from_rows

if TYPE_CHECKING:
    import pandas as pd

    from .lake import Published
    from .lake_spec import LakeSpec

__all__ = ["History"]

logger = logging.getLogger("synapse_nb.history")

READ_TIMEOUT = 30.0  # seconds a read waits for writers before it says the file is held elsewhere
INGEST_ON_READ = 256 * 1024  # a read that finds this much spooled ingests it first rather than merging it
INGEST_ON_READ_SECONDS = 5.0  # at most this long; the merge covers whatever is left

class History:
    """Sessions, messages, tool calls, LLM calls, turns and server events of one history file.

    Every method reads the file afresh and includes events still waiting in spools.
    """

    def __init__(
        self, path: str | Path | None = None, *, timeout: float = READ_TIMEOUT, migrations: Path | None = None
    ) -> None:
        self.path = (Path(path).expanduser() if path is not None else history_path()).absolute()
        self.timeout = timeout
        self._migrations = migrations
        self._known: int | None = None  # the newest schema version this code knows (loaded once)
        self._con: duckdb.DuckDBPyConnection | None = None
        self._shape: object = None  # the attached file's columns the views were built for
        self._union: bool | None = None  # whether the views currently add the pending tables
        self._filled: tuple[str, ...] = ()  # the pending tables the open connection filled
        self._writable = False  # whether the file is attached writable (see _attach)

    def __repr__(self) -> str:
        return f"<History {self.path}>"

    # ---- relations -----------------------------------------------------------------------------

    def sessions(self, session_id: str | None = None, since: When = None, until: When = None,
                 *, limit: int | None = None) -> pd.DataFrame:
        """Sessions, oldest first (`limit`: only the newest N)."""
        return self._select("sessions", session_id=session_id, since=since, until=until, limit=limit)

    def messages(self, session_id: str | None = None, since: When = None, until: When = None,
                 *, limit: int | None = None) -> pd.DataFrame:
        """Messages ordered by session and `seq`; `tool_calls` / `tool_results` are JSON text."""
        return self._select("messages", session_id=session_id, since=since, until=until, limit=limit)

    def tool_calls(self, session_id: str | None = None, since: When = None, until: When = None,
                   *, limit: int | None = None) -> pd.DataFrame:
        """Tool calls by start time; `arguments` and `result` are JSON text."""
        return self._select("tool_calls", session_id=session_id, since=since, until=until, limit=limit)

    def llm_calls(self, session_id: str | None = None, since: When = None, until: When = None,
                  *, limit: int | None = None) -> pd.DataFrame:
        """Requests to models by start time, with tokens, time to first token and errors."""
        return self._select("llm_calls", session_id=session_id, since=since, until=until, limit=limit)

    def turns(self, session_id: str | None = None, since: When = None, until: When = None,
              *, limit: int | None = None) -> pd.DataFrame:
        """Ended agent turns (finished / failed / cancelled) by start time."""
        return self._select("turns", session_id=session_id, since=since, until=until, limit=limit)

    def cost(self, by: str = "model", since: When = None) -> pd.DataFrame:
        """What LLM calls cost (USD, tokens, cached tokens), by model, server, tool, session or day;
        see synapse_nb/history/cost.py for how tools and servers are charged."""
        from .cost import COST_BY, cost

        if by not in COST_BY:
            raise HistoryError(f"cost by {by!r}: expected one of {', '.join(COST_BY)}")
        return cost(self, by, since)  # type: ignore[arg-type]

    def find_session(self, name_or_id: str) -> str | None:
        """The newest session named `name_or_id`, else the session whose id starts with it; None if none."""
        found = self.rows(FIND_SESSION, [name_or_id], relations=("sessions",))
        return str(found[0][0]) if found else None

    def transcript(self, session_id: str) -> tuple[list[Message], int]:
        """A recorded session's conversation as Messages (no system prompt) and the next free `seq`,
        to resume it in an Agent."""
        rows = self.messages(session_id=session_id).to_dict("records")
        return messages_from_rows(rows), max((int(r["seq"]) for r in rows), default=-1) + 1

    def last_usage(self, session_id: str) -> tuple[int, int] | None:
        """(prompt, output tokens) of the session's last measured model call (not a server's sampling), or None."""
        found = self.rows(
            "SELECT input_tokens, output_tokens FROM llm_calls WHERE session_id = ? AND origin IS NULL "
            "AND coalesce(input_tokens, 0) + coalesce(output_tokens, 0) > 0 ORDER BY started_at DESC LIMIT 1",
            [session_id], relations=("llm_calls",))
        return (int(found[0][0] or 0), int(found[0][1] or 0)) if found else None

    def server_events(self, server: str | None = None, since: When = None, until: When = None,
                      *, limit: int | None = None) -> pd.DataFrame:
        """MCP server events (connected, crashed, restarted, ...) by time; `server` filters one server."""
        return self._select("server_events", server=server, since=since, until=until, limit=limit)

    def task_events(self, server: str | None = None, since: When = None, until: When = None,
                    *, limit: int | None = None) -> pd.DataFrame:
        """What happened to MCP tasks by time: each one's creation, then each change of status (`tasks()` folds
        them into one row per task)."""
        return self._select("task_events", server=server, since=since, until=until, limit=limit)

    def tasks(self, server: str | None = None, *, open_only: bool = False) -> pd.DataFrame:
        """MCP tasks, one row each (the `tasks` view over `task_events`) by creation time: tool, arguments, latest
        status, the session, cell and tool call that started it, and its duration by the server's clock.
        `open_only`: those not yet completed, failed or cancelled (as far as this history knows)."""
        where = []
        params: list[Any] = []
        if server is not None:
            where.append("server = ?")
            params.append(server)
        if open_only:
            where.append("status NOT IN ('completed', 'failed', 'cancelled')")
        cond = f" WHERE {' AND '.join(where)}" if where else ""
        # the view's query itself, not the view's name: a lake (lake_reader.py) reads the relations a query names
        return self.sql(f"SELECT * FROM ({view_query('tasks')}) AS tasks{cond} ORDER BY created_at, first_seen_at",
                        params)

    def _select(self, relation: str, *, since: When, until: When, limit: int | None,
                session_id: str | None = None, server: str | None = None) -> pd.DataFrame:
        query = select(relation, since=since, until=until, limit=limit, session_id=session_id, server=server,
                       parts=self._parts(relation))
        return self.sql(query.sql, query.params)

    def _parts(self, relation: str) -> list[str]:
        """What the view of `relation` unions: the file's rows and the spooled ones not yet ingested."""
        return [f"_file_{relation}", f"temp.main._pending_{relation}"]

    # ---- SQL and export ------------------------------------------------------------------------

    def sql(self, query: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> pd.DataFrame:
        """Any SQL over sessions, messages, tool_calls, llm_calls, turns, server_events, task_events, tasks,
        schema_migrations.

        JSON columns work with DuckDB's JSON functions, e.g. `arguments->>'table'`. A query DuckDB
        rejects raises HistoryError with DuckDB's one-line reason.
        """
        import pandas as pd

        with self.connection() as con:
            try:
                rel = con.sql(query, params=params)
                table = rel.to_arrow_table() if rel is not None else None
            except duckdb.Error as exc:
                raise HistoryError(f"history query failed: {str(exc).splitlines()[0]}", path=str(self.path)) from exc
        return table.to_pandas() if table is not None else pd.DataFrame()

    def rows(self, query: str, params: Sequence[Any] | Mapping[str, Any] | None = None, *,
             relations: Collection[str] = RELATIONS) -> list[tuple[Any, ...]]:
        """`sql` as a list of tuples, without pandas or pyarrow: for the small lookups on a cell's path (e.g.
        whether a session name is taken), where importing pandas (about a second) would delay the cell.
        `relations`: those the query reads, when not all (the others then miss rows not yet ingested)."""
        with self.connection(relations) as con:
            try:
                rel = con.sql(query, params=params)
                return rel.fetchall() if rel is not None else []
            except duckdb.Error as exc:
                raise HistoryError(f"history query failed: {str(exc).splitlines()[0]}", path=str(self.path)) from exc

    def export(self, directory: str | Path) -> list[Path]:
        """Write each relation to `<directory>/<relation>.parquet` (one consistent snapshot); returns the files."""
        out = Path(directory).expanduser()
        out.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        with self.connection() as con:
            for relation in RELATIONS:
                target = out / f"{relation}.parquet"
                run(con, f"COPY (SELECT * FROM {relation}) TO '{quote_path(target)}' (FORMAT parquet)")
                written.append(target)
        return written

    def publish(self, dest: str | Path | LakeSpec) -> Published:
        """Append everything not yet published to the Iceberg lake `dest`; see lake.py.

        `dest`: a folder (zero set-up: a SQLite catalog beside its warehouse), s3://bucket/prefix with
        SYNAPSE_LAKE_CATALOG set, a catalog URI, or a lake config .json (lake_spec.py). Exactly once, safe
        with many kernels on many machines publishing into it at the same time; returns the rows added per
        relation. Open the lake with `synapse_nb.history(dest)`.
        """
        from .lake import publish

        return publish(self.path, dest, migrations=self._migrations, timeout=self.timeout)

    def export_cassette(self, session: str, path: str | Path) -> Path:
        """Write a recorded session (name or id prefix) as a record/replay cassette at `path`, for
        `%synapse replay PATH` (see history/cassette_export.py); returns the path."""
        from .cassette_export import export_cassette

        return export_cassette(self, session, path)

    @property
    def known_version(self) -> int:
        """The newest schema version this code knows (newer files are refused; newer spools skipped)."""
        if self._known is None:
            self._known = known_version(self._migrations)
        return self._known

    @contextmanager
    def connection(self, relations: Collection[str] = RELATIONS) -> Iterator[duckdb.DuckDBPyConnection]:
        """A DuckDB connection where the relations are complete views; the file is held until exit.

        Keep the block short: writers of every process wait for it to end. Only `relations` get the spool's
        lines not yet ingested (a block that reads only sessions need not merge the rest).
        """
        known = self.known_version
        lock = file_lock(self.path)  # held while attached; also keeps this object's connection single-threaded
        con, offsets = self._attach(lock, known)
        try:
            pending = pending_lines(spool_dir(self.path), offsets, known)
            if pending and len(relations) < len(RELATIONS):
                pending = _lines_of(pending, relations)
            self._prepare(con, bool(pending))
            self._filled = tuple(relations) if pending else ()
            insert_lines(con, pending, prefix="temp.main._pending_", relations=relations)
            yield con
        finally:
            try:
                self._release(con)
            finally:
                lock.release()

    def _prepare(self, con: duckdb.DuckDBPyConnection, pending: bool) -> None:
        """Point the views at the attached file, adding the pending tables only when something is pending.

        `_file_<relation>` shows the file's table with the columns this code knows, whatever schema
        version the file has (see the module docstring). Plain views when nothing is pending keep
        DuckDB's optimisations (a UNION ALL, even with an empty side, turns a 2 ms top-N over 1M rows
        into 80 ms).
        """
        rows = con.execute(
            "SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE database_name = 'hist' "
            "ORDER BY table_name, column_index"
        ).fetchall()
        shape = tuple(rows)
        if shape != self._shape:
            in_file: dict[str, list[str]] = {}
            for table, column, _type in rows:
                in_file.setdefault(str(table), []).append(str(column))
            for rel in RELATIONS:
                typed = ", ".join(f'"{c}" {SQL_TYPE[k]}' for c, k in COLUMNS[rel].items())
                run(con, f"CREATE OR REPLACE TEMP TABLE _pending_{rel} ({typed})")
                run(con, f"CREATE OR REPLACE VIEW _file_{rel} AS {_file_select(rel, in_file.get(rel))}")
            migrations = (
                "SELECT * FROM hist.main.schema_migrations" if "schema_migrations" in in_file
                else "SELECT NULL::INTEGER AS version, NULL::VARCHAR AS name, NULL::TIMESTAMP AS applied_at LIMIT 0"
            )
            run(con, f"CREATE OR REPLACE VIEW schema_migrations AS {migrations}")
            self._shape, self._union = shape, None
        if pending != self._union:
            for rel in RELATIONS:
                extra = f" UNION ALL BY NAME SELECT * FROM temp.main._pending_{rel}" if pending else ""
                run(con, f"CREATE OR REPLACE VIEW {rel} AS SELECT * FROM _file_{rel}{extra}")
            run(con, f"CREATE OR REPLACE VIEW tasks AS {view_query('tasks')}")
            self._union = pending

    def _release(self, con: duckdb.DuckDBPyConnection) -> None:
        """Detach the file (releasing its lock) and empty the pending tables; on trouble, drop the connection."""
        try:
            run(con, "USE memory")
            if con.execute("SELECT 1 FROM duckdb_databases() WHERE database_name = 'hist'").fetchall():
                run(con, "DETACH hist")
            for relation in self._filled:
                run(con, f"DELETE FROM temp.main._pending_{relation}")
            self._filled = ()
        except duckdb.Error:
            con.close()  # closing releases everything
            self._con = None

    def close(self) -> None:
        """Free this reader's in-memory DuckDB (reads reopen one when needed)."""
        with file_lock(self.path):
            if self._con is not None:
                self._con.close()
                self._con = None

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _memory(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            # kept: making one costs ~15 ms, attaching ~1 ms; no progress bar: it would print into the user's cell
            self._con = duckdb.connect(":memory:")
            self._con.execute(QUIET)
            self._shape = self._union = None
        return self._con

    def _attach(self, lock: threading.RLock, known: int) -> tuple[duckdb.DuckDBPyConnection, dict[str, int]]:
        """Attach the file as `hist` and return `lock` held, the connection and the ingested spool offsets.

        DuckDB excludes other processes from the file even for a read-only attach, so attaching
        writable costs nobody anything, and lets a read of a file at this code's schema ingest a large
        spool backlog itself (once) instead of parsing it again on every read. Files we may not write
        are attached read-only and read with the union alone. Nothing is ever migrated here.
        """
        path = self.path
        if not path.is_file() or path.stat().st_size == 0:
            # Nothing ingested yet: empty relations, plus whatever is spooled.
            lock.acquire()
            try:
                con = self._memory()
                run(con, "ATTACH ':memory:' AS hist")
            except BaseException:
                self._release(self._memory())
                lock.release()
                raise
            return con, {}
        con = self._attach_file(lock, time.monotonic() + self.timeout)
        try:
            applied = check_version(con, path=str(path), catalog="hist")
            offsets = self._offsets(con)
            at_known = max(applied, default=0) == known  # an older file is not ingested into: that would migrate it
            if (
                self._writable and at_known and offsets is not None
                and pending_bytes(spool_dir(path), offsets, known) >= INGEST_ON_READ
            ):
                run(con, "USE hist")
                stop_at = time.monotonic() + INGEST_ON_READ_SECONDS  # a writer appending fast cannot keep us here
                try:
                    while ingest(con, spool_dir(path), known).more and time.monotonic() < stop_at:
                        pass
                except (duckdb.Error, OSError) as exc:  # a courtesy: the merge below still reads it all
                    logger.info("a read could not ingest the spool backlog of %s: %s", path, exc)
                run(con, "USE memory")
                offsets = self._offsets(con)
            return con, offsets or {}
        except BaseException as exc:
            self._release(con)
            lock.release()
            if isinstance(exc, duckdb.Error):
                raise HistoryError(describe_error(path, exc), path=str(path)) from exc
            raise

    @staticmethod
    def _offsets(con: duckdb.DuckDBPyConnection) -> dict[str, int] | None:
        """The file's ingested spool offsets; None for a file from before spools (schema < 3)."""
        try:
            return read_offsets(con, "hist.main._ingest_offsets")
        except duckdb.CatalogException:
            return None

    def _attach_file(self, lock: threading.RLock, deadline: float) -> duckdb.DuckDBPyConnection:
        target = quote_path(self.path)

        def attempt() -> duckdb.DuckDBPyConnection:
            con = self._memory()
            try:
                run(con, f"ATTACH '{target}' AS hist")
                self._writable = True
            except duckdb.Error as exc:
                if is_lock_conflict(exc):
                    raise
                run(con, f"ATTACH '{target}' AS hist (READ_ONLY)")  # e.g. a file we may only read
                self._writable = False
            return con

        try:
            return retry_locked(attempt, self.path, deadline=deadline, lock=lock)
        except duckdb.Error as exc:
            raise HistoryError(describe_error(self.path, exc), path=str(self.path)) from exc


def _file_select(relation: str, present: list[str] | None) -> str:
    """The file's `relation` with this code's columns: NULL for those an older schema lacks; empty if no table."""
    if present is None:
        return f"SELECT {empty_relation(relation)}"
    # `_`-columns are bookkeeping (the lake's `_seq`, migration 0007), not history.
    newer = [f'"{c}"' for c in present if c not in COLUMNS[relation] and not c.startswith("_")]
    return f"SELECT {', '.join(known_columns(relation, present) + newer)} FROM hist.main.{relation}"


def _lines_of(data: bytes, relations: Collection[str]) -> bytes:
    """The spool lines in `data` that may belong to `relations`: those naming one of them in quotes (every
    other line is of another relation); nothing when none do, so the read merges nothing."""
    names = [f'"{relation}"'.encode() for relation in relations]
    if not any(name in data for name in names):
        return b""
    return b"\n".join(line for line in data.split(b"\n") if any(name in line for name in names))
