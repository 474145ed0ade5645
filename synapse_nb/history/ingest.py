"""Moving spool lines into DuckDB exactly once, and reading the lines not yet moved (for complete reads).

A spool line is `{"t": relation, "r": {column: value}}`. Ingest runs under the file's write lock: in
one transaction it inserts the complete lines past each spool's stored byte offset and advances the
offsets in `_ingest_offsets`. A crash anywhere leaves either both or neither, so a line is never lost
or doubled. After the commit, spools nobody writes any more (see spool.py) whose lines are all in the
database are deleted; their offset rows go on a later ingest, once the file is gone (deleting them
first could re-ingest a file whose unlink did not happen).

DuckDB parses the lines (its JSON reader, with the GIL released), not Python: the flusher thread
then barely competes with the event loop thread for the GIL. Values are cast with TRY_CAST by the
column kinds of schema.py, and a line that is not JSON is skipped with a warning, so no line can
wedge the ingest.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ..events import utcnow
from .db import run
from .schema import COLUMNS, Kind
from .spool import is_abandoned, list_spools, read_complete

__all__ = ["IngestResult", "ingest", "insert_lines", "pending_bytes", "pending_lines", "read_offsets"]

logger = logging.getLogger("synapse_nb.history")

MAX_BATCH_BYTES = 8 * 1024 * 1024  # per transaction; bounds memory and how long the file is held

_CAST: dict[Kind, str] = {"int": "BIGINT", "float": "DOUBLE", "bool": "BOOLEAN", "ts": "TIMESTAMP"}

_PARSE = """
CREATE OR REPLACE TEMP TABLE _spool_batch AS
SELECT j->>'t' AS t, j->'r' AS r
FROM (SELECT TRY_CAST(line AS JSON) AS j FROM (SELECT unnest(string_split(?, chr(10))) AS line) WHERE line <> '')
"""

_FILL: dict[tuple[str, str], str] = {
    ("tool_calls", "origin"): "CASE WHEN r->>'approval' = 'manual' THEN 'manual' ELSE 'agent' END",
    ("tool_calls", "result_text"): "r->'result'->'content'->0->>'text'",
}
"""What a line without the column gets there: a line spooled before its column existed, as the migration that
added it fills old rows (0009: a call made by hand was told by approval = 'manual'); a one-block result's text,
which the recorder spools once, inside `result`."""


def _expr(name: str, kind: Kind, relation: str = "") -> str:
    fill = _FILL.get((relation, name))
    if fill is not None:
        return f"coalesce(r->>'{name}', {fill})"
    if kind == "json":
        return f"nullif(r->'{name}', 'null'::JSON)"
    if kind in _CAST:
        return f"TRY_CAST(r->>'{name}' AS {_CAST[kind]})"
    return f"r->>'{name}'"


def insert_lines(con: duckdb.DuckDBPyConnection, data: bytes, *, prefix: str = "",
                 relations: Collection[str] | None = None) -> int:
    """Insert the spool lines in `data` into `<prefix><relation>` tables; returns the rows inserted.

    `relations` limits it to those tables (a reader's lookup of sessions): each table is one INSERT that
    DuckDB plans anew, ~3 ms, whatever few lines it gets."""
    if not data:
        return 0
    run(con, _PARSE, [data.decode("utf-8", "replace")])
    try:
        inserted = 0
        for relation, columns in COLUMNS.items():
            if relations is not None and relation not in relations:
                continue
            names = ", ".join(f'"{c}"' for c in columns)
            exprs = ", ".join(_expr(c, k, relation) for c, k in columns.items())
            (count,) = con.execute(
                f"INSERT INTO {prefix}{relation} ({names}) SELECT {exprs} FROM _spool_batch WHERE t = ?", [relation]
            ).fetchall()  # fetchall, not fetchone: an unfinished result would block the connection
            inserted += int(count[0])
        ((bad,),) = con.execute("SELECT count(*) FROM _spool_batch WHERE t IS NULL").fetchall()
        if bad:
            logger.warning("skipped %d unreadable history spool line(s)", bad)
    except BaseException:
        # In the caller's transaction (ingest) the failure aborted it and the DROP fails too: the error to
        # raise is the first one (the rollback drops the table), not "Current transaction is aborted".
        with contextlib.suppress(duckdb.Error):
            run(con, "DROP TABLE IF EXISTS _spool_batch")
        raise
    run(con, "DROP TABLE IF EXISTS _spool_batch")
    return inserted


def read_offsets(con: duckdb.DuckDBPyConnection, table: str = "_ingest_offsets") -> dict[str, int]:
    """Bytes already ingested, per spool file name."""
    return {str(name): int(off) for name, off in con.execute(f"SELECT spool, byte_offset FROM {table}").fetchall()}


def pending_bytes(directory: Path, offsets: dict[str, int], max_version: int) -> int:
    """How many spooled bytes are not ingested yet (from file sizes; cheap)."""
    total = 0
    for spool in list_spools(directory, max_version):
        try:
            total += max(0, spool.path.stat().st_size - offsets.get(spool.name, 0))
        except FileNotFoundError:
            continue
    return total


def pending_lines(directory: Path, offsets: dict[str, int], max_version: int) -> bytes:
    """The complete spool lines past each file's ingested offset (what a reader must add)."""
    chunks: list[bytes] = []
    for spool in list_spools(directory, max_version):
        start = offsets.get(spool.name, 0)
        while True:
            data, _size = read_complete(spool.path, start, MAX_BATCH_BYTES)
            if not data:
                break
            chunks.append(data)
            start += len(data)
    return b"".join(chunks)


@dataclass
class IngestResult:
    """What one `ingest` call did."""

    rows: int = 0
    deleted: list[str] = field(default_factory=list)
    offsets: dict[str, int] = field(default_factory=dict)  # file name -> offset after this ingest
    more: bool = False  # the batch limit was hit; call again


def ingest(
    con: duckdb.DuckDBPyConnection,
    directory: Path,
    max_version: int,
    *,
    finished: Iterable[str] = (),
) -> IngestResult:
    """Ingest one batch from the spools in `directory`, then delete the spools that are done.

    `finished` names spool files of this process that will not be written again (closing or rotated),
    so they may be deleted once ingested even before their lock is seen released.
    """
    result = IngestResult()
    spools = list_spools(directory, max_version)
    done_writing = set(finished)
    # Decided before reading: an abandoned file never grows again, so a partial last line is garbage
    # (the write that began it never returned) and the file can be finished.
    abandoned = {s.name for s in spools if s.name in done_writing or is_abandoned(s.path)}
    con.begin()
    try:
        offsets = read_offsets(con)
        chunks: list[bytes] = []
        changed: dict[str, int] = {}
        sizes: dict[str, int] = {}
        budget = MAX_BATCH_BYTES
        for spool in spools:
            start = offsets.get(spool.name, 0)
            data, size = read_complete(spool.path, start, max(budget, 0))
            sizes[spool.name] = size
            limited = size - start > max(budget, 0)
            result.more = result.more or limited
            budget -= len(data)
            chunks.append(data)
            end = start + len(data)
            if spool.name in abandoned and not limited and end < size:
                end = size  # the torn last line of a writer that died mid-write (never acknowledged)
            if end != start:
                changed[spool.name] = end
        result.rows = insert_lines(con, b"".join(chunks))
        present = {s.name for s in spools}
        stale = [name for name in offsets if name not in present and not (directory / name).exists()]
        if stale or changed:
            run(con, "DELETE FROM _ingest_offsets WHERE list_contains(?, spool)", [stale + list(changed)])
        now = utcnow()
        for name, offset in changed.items():
            run(con, "INSERT INTO _ingest_offsets VALUES (?, ?, ?)", [name, offset, now])
        con.commit()
    except BaseException:
        con.rollback()
        raise
    final = {**offsets, **changed}
    result.offsets = {s.name: final.get(s.name, 0) for s in spools}
    for spool in spools:
        if spool.name in abandoned and final.get(spool.name, 0) >= sizes.get(spool.name, 0):
            spool.path.unlink(missing_ok=True)
            result.deleted.append(spool.name)
    return result
