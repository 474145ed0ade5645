"""Reading the Iceberg lake with the History API: `Lake`, what `synapse_nb.history(LAKE)` returns.

Read-only. Each read loads the tables it needs from the catalog (so it sees every commit made until
then), scans them with pyiceberg into Arrow, and runs the same SQL as a history file over a private
in-memory DuckDB whose relations are views of those scans. Filters go down to the scan, where Iceberg
prunes partitions (days) and files by their column statistics:

- `tool_calls(since=..., until=..., session_id=...)` and the other relation methods push their time
  range, session and server down as the scan's `row_filter`;
- `sql(QUERY)` scans only the relations QUERY names, and only the columns it names (`selected_fields`;
  all of them when it selects `*`).

Each view shows the columns this code knows first, typed as in a history file (JSON columns, stored as
text, are JSON again; columns older rows lack read as NULL), then the others the table has: `_source`
(which history file), `_schema` (its writer's schema version), `_seq` (its row number there), and any
column a newer synapse_nb added. The last scan of each relation is kept until its table changes.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from ..errors import HistoryError
from .db import file_lock, run
from .lake_spec import LakeSpec, lake_spec
from .queries import When, empty_relation, known_columns, select, when_value
from .reader import History
from .schema import COLUMNS, RELATIONS, TIME_COLUMN

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.table import Table

    from .lake import Published
    from .lake_catalog import LakeTables

__all__ = ["Lake"]

_STAR = re.compile(r"\*")
_COUNT_STAR = re.compile(r"count\s*\(\s*\*\s*\)", re.IGNORECASE)

# What one relation's scan needs: the query whose columns it reads (None: all columns) and the row filter
# (None: all rows).
_Want = tuple[str | None, "BooleanExpression | None"]


class Lake(History):
    """Everyone's published history in an Iceberg lake; the same methods as History, read-only."""

    def __init__(self, target: str | Path | LakeSpec, *, migrations: Path | None = None) -> None:
        self.spec = lake_spec(target)
        super().__init__(self.spec.folder or Path(self.spec.warehouse or self.spec.catalog), migrations=migrations)
        self._tables: LakeTables | None = None
        self._scans: dict[str, tuple[object, pa.Table]] = {}  # relation -> (what was scanned, the rows)

    def __repr__(self) -> str:
        return f"<Lake {self.spec.name}>"

    def publish(self, dest: str | Path | LakeSpec) -> Published:
        """Refused: a lake is read here; publish from a history file (`synapse_nb.history().publish(LAKE)`)."""
        raise HistoryError(
            f"{self.spec.name} is a lake, opened read-only: publish from a history file, "
            "e.g. synapse_nb.history().publish(LAKE)",
            path=self.spec.name,
        )

    def tables(self) -> LakeTables:
        """The lake's catalog and tables (opened on first use)."""
        if self._tables is None:
            from .lake_catalog import LakeTables

            self._tables = LakeTables(self.spec)
        return self._tables

    # ---- reads ---------------------------------------------------------------------------------

    def scan(self, relation: str, columns: Sequence[str] | None = None,
             row_filter: BooleanExpression | str | None = None) -> pa.Table:
        """The rows of `relation` as Arrow, straight from pyiceberg: only `columns` (default all), only rows
        matching `row_filter` (a pyiceberg expression or its string form, e.g. "started_at >= '2026-11-01'")."""
        return self._scan(relation, self.tables().load(relation), columns, row_filter)

    def _scan(self, relation: str, table: Table | None, columns: Sequence[str] | None,
              row_filter: BooleanExpression | str | None) -> pa.Table:
        from pyiceberg.expressions import AlwaysTrue

        from .lake_catalog import lake_errors

        if table is None:
            return _empty_arrow(relation)
        present = [f.name for f in table.schema().fields]
        fields = tuple(c for c in columns if c in present) if columns is not None else ("*",)
        with lake_errors(self.spec, "read"):
            return table.scan(row_filter=row_filter if row_filter is not None else AlwaysTrue(),
                              selected_fields=fields or (present[0],)).to_arrow()

    def sql(self, query: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> pd.DataFrame:
        """Any SQL over sessions, messages, tool_calls, llm_calls, turns and server_events of the lake (only
        the relations and columns QUERY names are read). HistoryError with DuckDB's reason if it fails."""
        import pandas as pd

        with self._views(_wanted(query, RELATIONS)) as con, self._failed():
            rel = con.sql(query, params=params)
            table = rel.to_arrow_table() if rel is not None else None
        return table.to_pandas() if table is not None else pd.DataFrame()

    def rows(self, query: str, params: Sequence[Any] | Mapping[str, Any] | None = None, *,
             relations: Collection[str] = RELATIONS) -> list[tuple[Any, ...]]:
        """`sql` as a list of tuples."""
        with self._views(_wanted(query, relations)) as con, self._failed():
            rel = con.sql(query, params=params)
            return rel.fetchall() if rel is not None else []

    @contextmanager
    def connection(self, relations: Collection[str] = RELATIONS) -> Iterator[duckdb.DuckDBPyConnection]:
        """An in-memory DuckDB whose `relations` are views over full scans of the lake's tables."""
        with self._views({r: (None, None) for r in relations}) as con:
            yield con

    def _select(self, relation: str, *, since: When, until: When, limit: int | None,
                session_id: str | None = None, server: str | None = None) -> pd.DataFrame:
        query = select(relation, since=since, until=until, limit=limit, session_id=session_id, server=server)
        want = {relation: (None, _row_filter(relation, since, until, session_id, server))}
        with self._views(want) as con, self._failed():
            return con.sql(query.sql, params=query.params).to_arrow_table().to_pandas()

    def close(self) -> None:
        """Free the in-memory DuckDB and the kept scans (reads reopen what they need)."""
        super().close()
        self._scans.clear()
        if self._tables is not None:
            self._tables.close()
            self._tables = None

    # ---- views ---------------------------------------------------------------------------------

    @contextmanager
    def _views(self, want: Mapping[str, _Want]) -> Iterator[duckdb.DuckDBPyConnection]:
        with file_lock(self.path):  # one user of this object's connection at a time
            con = self._memory()
            for relation, (query, row_filter) in want.items():
                rows = self._rows(relation, query, row_filter)
                con.register(f"_scan_{relation}", rows)
                present = rows.column_names
                cols = known_columns(relation, present, cast=True)
                cols += [f'"{c}"' for c in present if c not in COLUMNS[relation]]
                run(con, f"CREATE OR REPLACE TEMP VIEW {relation} AS SELECT {', '.join(cols)} FROM _scan_{relation}")
            yield con

    def _rows(self, relation: str, query: str | None, row_filter: BooleanExpression | None) -> pa.Table:
        """A scan of `relation` (the columns `query` names, or all), or the kept one when neither the table
        nor the request changed."""
        table = self.tables().load(relation)
        columns: tuple[str, ...] | None = None
        if table is not None and query is not None:
            named = tuple(f.name for f in table.schema().fields if _mentions(query, f.name))
            columns = named or (TIME_COLUMN[relation],)  # count(*) still needs the rows
        snapshot = table.current_snapshot() if table is not None else None
        key = (snapshot.snapshot_id if snapshot else None, table.schema().schema_id if table else None,
               columns, repr(row_filter))
        kept = self._scans.get(relation)
        if kept is not None and kept[0] == key:
            return kept[1]
        rows = self._scan(relation, table, columns, row_filter)
        self._scans[relation] = (key, rows)
        return rows

    @contextmanager
    def _failed(self) -> Iterator[None]:
        """A query DuckDB rejects (when planned or run) as HistoryError with DuckDB's one-line reason."""
        try:
            yield
        except duckdb.Error as exc:
            raise HistoryError(f"history query failed: {str(exc).splitlines()[0]}", path=self.spec.name) from exc


def _wanted(query: str, relations: Collection[str]) -> dict[str, _Want]:
    """The relations `query` names (among `relations`), each to be scanned for the columns `query` names (a
    superset, found by name: see _rows), or for all of them when it has a `*` other than count(*)."""
    everything = bool(_STAR.search(_COUNT_STAR.sub("", query)))
    return {r: (None if everything else query, None) for r in relations if _mentions(query, r)}


def _mentions(query: str, name: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", query) is not None


def _row_filter(relation: str, since: When, until: When, session_id: str | None,
                server: str | None) -> BooleanExpression | None:
    """The relation method's filters as a pyiceberg expression (None: no filter): Iceberg skips the days
    and files outside them."""
    from pyiceberg import expressions

    ex: Any = expressions  # its pydantic constructors take (term, value) positionally; their stubs say otherwise
    terms: list[BooleanExpression] = []
    column = TIME_COLUMN[relation]
    for bound, make in ((since, ex.GreaterThanOrEqual), (until, ex.LessThan)):
        at = _timestamp(bound)
        if at is not None:
            terms.append(make(column, at.isoformat()))
    if session_id is not None and "session_id" in COLUMNS[relation]:
        terms.append(ex.EqualTo("session_id", session_id))
    if server is not None and "server" in COLUMNS[relation]:
        terms.append(ex.EqualTo("server", server))
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else ex.And(*terms)  # type: ignore[no-any-return]


def _timestamp(value: When) -> _dt.datetime | None:
    """A bound as a naive UTC datetime, or None when there is none or it is a form only DuckDB parses
    (the SQL still applies it)."""
    bound = when_value(value)
    if isinstance(bound, _dt.datetime):
        return bound
    if isinstance(bound, str):
        try:
            parsed = _dt.datetime.fromisoformat(bound)
        except ValueError:
            return None
        return parsed.astimezone(_dt.UTC).replace(tzinfo=None) if parsed.tzinfo else parsed
    return None


def _empty_arrow(relation: str) -> pa.Table:
    """No rows, with this code's columns: what a table nobody published to yet reads as."""
    with duckdb.connect() as con:
        return con.sql(f"SELECT {empty_relation(relation)}").to_arrow_table()
