"""Publishing a history file into a shared, hive-partitioned Parquet lake, exactly once and without a lock: `publish`.

Many kernels and users publish into one directory at the same time (a shared disk, NFS, a mounted
bucket). Nothing there is locked and nothing is ever overwritten with other rows; the one shared file,
the lake's marker, is created once (lake_dir.py). Each history file publishes only its own rows, under
names no other file can produce: `relation=R/date=D/part-<source>-<from>-<to>.parquet`, where `source` is
the history file's id (migration 0007) and `(from, to]` the range of its rows' `_seq` numbers (a
sequence the file gives every row as it is inserted). A part is written under a dotted temporary name
in its own folder, flushed to disk, and renamed into place whole, so a reader sees all of it or none.

Exactly once rests on a watermark per (lake, relation) in the history file (`_lake_published`), moved in
two steps around the files, "write the intent first":

1. claim: in one transaction, set `pending` to the end of the next range (published, pending] (at most
   CHUNK_ROWS rows). A row's `_seq` never changes and new rows always get higher numbers, so the range
   names the same rows for ever.
2. write the range's parts (one per date), fsync them, rename them into place, fsync the folders.
3. commit: `published = pending`, `pending = NULL`, only if `pending` is still this range's end.

A crash (or a full disk, or a lost mount) anywhere leaves `pending` set, and the next publish, by any
process, first redoes exactly that range: the same rows under the same names, so a part that was
already in place is replaced by an identical one and a missing one is added. No range is ever claimed
twice and ranges never overlap, so no row is published twice or skipped, and readers need not dedupe.
Two kernels publishing the same history file at once redo each other's pending range the same way
(harmless: same names, same rows). The row count of each part is known from the COPY that wrote it.

The alternative, naming parts by writer (host, pid, counter) and letting readers drop duplicates by
(`_source`, `_seq`), was rejected: every reader (DuckDB, pyarrow, Polars, Spark) would have to know to
dedupe. Caveat: a copied history file keeps its id; publish from only one of the copies.

Each part carries `_schema` (the history schema version of its writer), `_source` and `_seq` columns;
JSON columns are written as plain strings so that every engine reads them. Columns are only ever added
to the history, so a lake read with `union_by_name` shows older parts' missing columns as NULL.
Publishing opens the history file like any writer (brief, retried on lock conflicts), migrates it to
this code's schema and ingests the spools first, so it publishes everything recorded so far.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb

from ..errors import HistoryError
from ..events import utcnow
from .catalog import Migration, load_migrations
from .db import describe_error, file_lock, opened, remove_empty_placeholder, run
from .ingest import ingest
from .lake_dir import LakeInfo, ensure_lake, fsync_dir, part_name, relation_dir, tmp_name
from .migrate import migrate
from .schema import RELATIONS, TIME_COLUMN
from .spool import spool_dir

__all__ = ["CHUNK_ROWS", "Published", "publish"]

CHUNK_ROWS = 500_000  # rows of one relation per round: bounds memory, how long the file is held, and part size
PUBLISH_TIMEOUT = 30.0  # seconds to wait for other programs holding the history file
STALE_TMP_SECONDS = 3600.0  # a temporary part this old was left by a crashed publisher of our own file


@dataclass(frozen=True, slots=True)
class Published:
    """What one `publish` wrote: rows per relation and part files (a range redone after a crash counts again)."""

    dest: Path
    rows: dict[str, int]
    files: int

    @property
    def total(self) -> int:
        return sum(self.rows.values())

    def __repr__(self) -> str:
        if not self.total:
            return f"nothing new to publish to {self.dest}"
        counts = ", ".join(f"{r} {n:,}" for r, n in self.rows.items() if n)
        return f"published {self.total:,} rows to {self.dest} ({self.files} files): {counts}"


@dataclass(frozen=True, slots=True)
class _Range:
    relation: str
    lo: int  # exclusive
    hi: int  # inclusive


@dataclass(frozen=True, slots=True)
class _Part:
    relation: str
    tmp: Path
    final: Path
    rows: int


def publish(
    path: str | Path,
    dest: str | Path,
    *,
    migrations: Path | None = None,
    timeout: float = PUBLISH_TIMEOUT,
    chunk_rows: int = CHUNK_ROWS,
) -> Published:
    """Append every row of history file `path` not yet in lake `dest` to it; see the module docstring.

    `dest` is created if missing (an empty directory or an existing lake; anything else is refused).
    Raises HistoryError with one line (a file too new for this code, a lake that cannot be written, the
    history file held by another program for `timeout` seconds); whatever was half done is redone,
    never doubled, by the next publish.
    """
    source_path = Path(path).expanduser().absolute()
    lake_path = Path(dest).expanduser().absolute()
    rows = dict.fromkeys(RELATIONS, 0)
    files = 0
    if not source_path.exists() and not spool_dir(source_path).is_dir():
        return Published(lake_path, rows, files)  # nothing recorded: do not create a history file
    lake = ensure_lake(lake_path)
    known = load_migrations(migrations)
    with file_lock(source_path):
        remove_empty_placeholder(source_path)
    while True:
        ranges, parts, more = _claim_and_write(source_path, lake, known, timeout, chunk_rows)
        if not ranges:
            break
        _place(parts, lake)
        _commit(source_path, lake, ranges, timeout)
        for part in parts:
            rows[part.relation] += part.rows
        files += len(parts)
        if not more:
            break
    return Published(lake_path, rows, files)


def _claim_and_write(
    path: Path, lake: LakeInfo, known: tuple[Migration, ...], timeout: float, chunk_rows: int
) -> tuple[list[_Range], list[_Part], bool]:
    """Steps 1 and 2 up to the temporary files: one brief hold of the history file."""
    deadline = time.monotonic() + timeout
    parts: list[_Part] = []
    try:
        with opened(path, deadline=deadline) as con:
            try:
                migrate(con, path=str(path), migrations=known)
                while ingest(con, spool_dir(path), known[-1].version).more and time.monotonic() < deadline:
                    pass
                source, ranges, more = _claim(con, lake.lake_id, chunk_rows)
            except duckdb.Error as exc:
                raise HistoryError(describe_error(path, exc), path=str(path)) from exc
            try:
                for claimed in ranges:
                    parts.extend(_write(con, lake.path, source, claimed, known[-1].version))
            except (duckdb.Error, OSError) as exc:
                raise _lake_error(lake, exc) from exc
    except BaseException:
        _remove([p.tmp for p in parts])
        raise
    return ranges, parts, more


def _claim(con: duckdb.DuckDBPyConnection, lake_id: str, chunk_rows: int) -> tuple[str, list[_Range], bool]:
    """Step 1: the file's id, the ranges to write now (pending ones first), and whether more rows wait."""
    ranges: list[_Range] = []
    more = False
    con.begin()
    try:
        found = run(con, "SELECT source_id FROM _lake_source LIMIT 1")
        if not found:  # only if someone emptied it: a new id cannot collide with the old one's names
            found = run(con, "INSERT INTO _lake_source SELECT replace(CAST(uuid() AS VARCHAR), '-', ''), "
                             "CAST(now() AS TIMESTAMP) RETURNING source_id")
        source = str(found[0][0])
        marks = {
            str(rel): (int(done), None if pending is None else int(pending))
            for rel, done, pending in run(
                con, "SELECT relation, published, pending FROM _lake_published WHERE lake = ?", [lake_id]
            )
        }
        now = utcnow()
        for relation in RELATIONS:
            if relation not in marks:
                run(con, "INSERT INTO _lake_published VALUES (?, ?, 0, NULL, ?)", [lake_id, relation, now])
            done, pending = marks.get(relation, (0, None))
            if pending is not None:  # a range claimed by a publish that did not finish: redo it as it was
                ranges.append(_Range(relation, done, pending))
                more = True
                continue
            hi, rest = _range_end(con, relation, done, chunk_rows)
            if hi is None:
                continue
            run(con, "UPDATE _lake_published SET pending = ?, updated_at = ? WHERE lake = ? AND relation = ?",
                [hi, now, lake_id, relation])
            ranges.append(_Range(relation, done, hi))
            more = more or rest
        con.commit()
    except BaseException:
        con.rollback()
        raise
    return source, ranges, more


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


def _write(con: duckdb.DuckDBPyConnection, dest: Path, source: str, claimed: _Range, schema: int) -> list[_Part]:
    """Step 2: the range's rows of each date into a temporary file in that date's folder."""
    relation = claimed.relation
    day = f"coalesce(CAST(\"{TIME_COLUMN[relation]}\" AS DATE), DATE '1970-01-01')"  # NULL times: 1970-01-01
    where = f"_seq > {int(claimed.lo)} AND _seq <= {int(claimed.hi)}"
    days = [str(d) for (d,) in run(con, f"SELECT DISTINCT CAST({day} AS VARCHAR) FROM {relation} WHERE {where}")]
    columns = run(
        con,
        "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND table_name = ? ORDER BY column_index",
        [relation],
    )
    # JSON as plain text: Polars and others read DuckDB's JSON-annotated strings as bytes.
    select = ", ".join(f'CAST("{c}" AS VARCHAR) AS "{c}"' if t == "JSON" else f'"{c}"' for c, t in columns)
    parts: list[_Part] = []
    try:
        for d in sorted(days):
            folder = relation_dir(dest, relation) / f"date={d}"
            folder.mkdir(parents=True, exist_ok=True)
            _remove_stale(folder, source)
            tmp = folder / tmp_name(source, claimed.lo, claimed.hi)
            parts.append(_Part(relation, tmp, folder / part_name(source, claimed.lo, claimed.hi), 0))
            ((count,),) = run(
                con,
                f"COPY (SELECT {select}, {int(schema)}::INTEGER AS _schema, '{source}' AS _source FROM {relation} "
                f"WHERE {where} AND {day} = DATE '{d}') TO '{_quote(tmp)}' (FORMAT parquet, COMPRESSION zstd)",
            )
            parts[-1] = _Part(relation, tmp, parts[-1].final, int(count))
    except BaseException:
        _remove([p.tmp for p in parts])
        raise
    return parts


def _place(parts: list[_Part], lake: LakeInfo) -> None:
    """Step 2, end: flush each part to disk, rename it into place, and make the new names durable."""
    try:
        for part in parts:
            _fsync(part.tmp)
            os.replace(part.tmp, part.final)  # atomic; over an identical part only when redoing a range
        folders = {p.final.parent for p in parts}
        for folder in folders | {f.parent for f in folders} | {lake.path}:
            fsync_dir(folder)
    except OSError as exc:
        _remove([p.tmp for p in parts])
        raise _lake_error(lake, exc) from exc


def _commit(path: Path, lake: LakeInfo, ranges: list[_Range], timeout: float) -> None:
    """Step 3: move the watermarks past the ranges now durably in the lake."""
    try:
        with opened(path, deadline=time.monotonic() + timeout) as con:
            con.begin()
            try:
                now = utcnow()
                for r in ranges:
                    run(
                        con,
                        "UPDATE _lake_published SET published = pending, pending = NULL, updated_at = ? "
                        "WHERE lake = ? AND relation = ? AND pending = ?",
                        [now, lake.lake_id, r.relation, r.hi],
                    )
                con.commit()
            except BaseException:
                con.rollback()
                raise
    except duckdb.Error as exc:
        raise HistoryError(describe_error(path, exc), path=str(path)) from exc


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(paths: list[Path]) -> None:
    for p in paths:
        try:
            p.unlink(missing_ok=True)
        except OSError:
            pass  # a temporary name no reader reads; a later publish of this file removes it when stale


def _remove_stale(folder: Path, source: str) -> None:
    """Temporary parts of this history file left by a publisher that crashed (old enough not to be live)."""
    prefix = f".part-{source}-"
    cutoff = time.time() - STALE_TMP_SECONDS
    try:
        with os.scandir(folder) as entries:
            stale = [Path(e.path) for e in entries if e.name.startswith(prefix) and e.name.endswith(".tmp")
                     and e.stat().st_mtime < cutoff]
    except OSError:
        return
    _remove(stale)


def _lake_error(lake: LakeInfo, exc: BaseException) -> HistoryError:
    text = (getattr(exc, "strerror", None) or str(exc).splitlines()[0]) if str(exc) else type(exc).__name__
    return HistoryError(
        f"could not publish to lake {lake.path} ({text}); nothing is lost, the next publish redoes it: "
        "check the directory is writable and has space",
        path=str(lake.path),
    )


def _quote(path: Path) -> str:
    return str(path).replace("'", "''")
