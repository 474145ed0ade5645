"""Publishing a history file into the team's Iceberg lake, exactly once: `publish(PATH, LAKE)`.

Any number of kernels on any number of machines publish into one lake at the same time (LAKE: a
folder, s3://... with a catalog, a lake config file: lake_spec.py). Each history file publishes only
its own rows, tagged with its id (`_source`, migration 0007) and each row's number in it (`_seq`, given
as rows are inserted, never changed). A round:

1. reads each relation's mark for this file from its table (how far the file is published, kept in
   the table's current snapshot: lake_commit.py);
2. opens the history file briefly (migrating it and ingesting its spools first, so everything
   recorded so far goes), and reads the next rows after each mark, at most CHUNK_ROWS per relation
   (a contiguous range of `_seq`), as Arrow;
3. commits each relation's rows as one Iceberg append, which re-checks the mark and retries when
   another writer commits first (lake_commit.append_new).

Nothing is written to the history file: what a file has published lives where a crash cannot lose it,
in the lake's own commits. Caveat: a copied history file keeps its id; publish from only one copy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from ..errors import HistoryError
from .catalog import Migration, load_migrations
from .db import describe_error, file_lock, opened, remove_empty_placeholder, run
from .ingest import ingest
from .lake_spec import LakeSpec, lake_spec
from .migrate import migrate
from .schema import RELATIONS
from .spool import spool_dir

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["CHUNK_ROWS", "Published", "publish"]

CHUNK_ROWS = 1_000_000  # rows of one relation per commit: bounds memory and how long the file is held
PUBLISH_TIMEOUT = 30.0  # seconds to wait for other programs holding the history file


@dataclass(frozen=True, slots=True)
class Published:
    """What one `publish` added to the lake: rows per relation, and the number of commits."""

    dest: str
    rows: dict[str, int]
    commits: int = 0

    @property
    def total(self) -> int:
        return sum(self.rows.values())

    def __repr__(self) -> str:
        if not self.total:
            return f"nothing new to publish to {self.dest}"
        counts = ", ".join(f"{r} {n:,}" for r, n in self.rows.items() if n)
        return f"published {self.total:,} rows to {self.dest} ({self.commits} commits): {counts}"


def publish(
    path: str | Path,
    dest: str | Path | LakeSpec,
    *,
    migrations: Path | None = None,
    timeout: float = PUBLISH_TIMEOUT,
    chunk_rows: int = CHUNK_ROWS,
) -> Published:
    """Append every row of history file `path` not yet in lake `dest` to it; see the module docstring.

    Raises LakeError with one line (a lake that cannot be named, reached or written) or HistoryError (a
    history file too new for this code, or held by another program for `timeout` seconds); whatever was
    half done is invisible, and the next publish does it, never twice.
    """
    from .lake_catalog import LakeTables
    from .lake_commit import append_new, marks

    spec = lake_spec(dest)
    source_path = Path(path).expanduser().absolute()
    rows = dict.fromkeys(RELATIONS, 0)
    commits = 0
    if not source_path.exists() and not spool_dir(source_path).is_dir():
        return Published(spec.name, rows)  # nothing recorded: do not create a history file
    tables = LakeTables(spec)
    known = load_migrations(migrations)
    with file_lock(source_path):
        remove_empty_placeholder(source_path)
    source = _prepare(source_path, known, timeout)
    while True:
        done = {}
        for relation in RELATIONS:
            table = tables.load(relation)
            done[relation] = marks(table).get(source, 0) if table is not None else 0
        batches, more = _read(source_path, source, done, known[-1].version, timeout, chunk_rows)
        for relation, batch in batches.items():
            added = append_new(tables, relation, batch)
            rows[relation] += added
            commits += added > 0
        if not more:
            return Published(spec.name, rows, commits)


def _prepare(path: Path, known: tuple[Migration, ...], timeout: float) -> str:
    """Migrate the file, ingest its spools, and return its id."""
    deadline = time.monotonic() + timeout
    with opened(path, deadline=deadline) as con:
        try:
            migrate(con, path=str(path), migrations=known)
            while ingest(con, spool_dir(path), known[-1].version).more and time.monotonic() < deadline:
                pass
            found = run(con, "SELECT source_id FROM _lake_source LIMIT 1")
            if not found:  # only if someone emptied it: a new id cannot collide with the old one's rows
                found = run(con, "INSERT INTO _lake_source SELECT replace(CAST(uuid() AS VARCHAR), '-', ''), "
                                 "CAST(now() AS TIMESTAMP) RETURNING source_id")
        except duckdb.Error as exc:
            raise HistoryError(describe_error(path, exc), path=str(path)) from exc
    return str(found[0][0])


def _read(
    path: Path, source: str, done: dict[str, int], schema: int, timeout: float, chunk_rows: int
) -> tuple[dict[str, pa.Table], bool]:
    """The next rows of each relation after its mark (at most `chunk_rows`, every `_seq` up to the last), and whether
    more wait; one brief hold of the history file."""
    batches: dict[str, pa.Table] = {}
    more = False
    with opened(path, deadline=time.monotonic() + timeout) as con:
        try:
            for relation in RELATIONS:
                lo = done[relation]
                hi, rest = _range_end(con, relation, lo, chunk_rows)
                if hi is None:
                    continue
                more = more or rest
                batches[relation] = _rows(con, relation, source, schema, lo, hi)
        except duckdb.Error as exc:
            raise HistoryError(describe_error(path, exc), path=str(path)) from exc
    return batches, more


def _range_end(con: duckdb.DuckDBPyConnection, relation: str, lo: int, chunk_rows: int) -> tuple[int | None, bool]:
    """The `_seq` ending the next range of at most `chunk_rows` rows after `lo` (None: nothing new), and
    whether rows remain after it."""
    ((count, top),) = run(con, f"SELECT count(*), max(_seq) FROM {relation} WHERE _seq > ?", [lo])
    if not count:
        return None, False
    if count <= chunk_rows:
        return int(top), False
    ((hi,),) = run(
        con, f"SELECT max(_seq) FROM (SELECT _seq FROM {relation} WHERE _seq > ? ORDER BY _seq LIMIT ?)",
        [lo, chunk_rows],
    )
    return int(hi), True


def _rows(con: duckdb.DuckDBPyConnection, relation: str, source: str, schema: int, lo: int, hi: int) -> pa.Table:
    columns = run(
        con,
        "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND table_name = ? ORDER BY column_index",
        [relation],
    )
    # JSON as plain text, so every engine reads it; `_`-columns are bookkeeping, added below.
    select = ", ".join(f'CAST("{c}" AS VARCHAR) AS "{c}"' if t == "JSON" else f'"{c}"'
                       for c, t in columns if not str(c).startswith("_"))
    rel = con.sql(
        f"SELECT {select}, {int(schema)}::INTEGER AS _schema, ?::VARCHAR AS _source, _seq FROM {relation} "
        "WHERE _seq > ? AND _seq <= ?",
        params=[source, lo, hi],
    )
    return rel.to_arrow_table()
