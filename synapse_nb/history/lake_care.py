"""Looking after the lake: `compact` (rewrite each day's small files as one) and `expire` (drop old snapshots).

Every publish adds at least one small file per day it touches, so a lake that many kernels publish into
after every turn collects thousands of them, and every scan opens them all. pyiceberg 0.12 has no
rewrite action, so `compact` rewrites a day itself: it reads the day's rows from the current snapshot
and, in one transaction, overwrites that day (its files dropped, one new file added) on the condition
that the snapshot is still current. The rows are the same, and the snapshots it writes carry every
history file's mark (lake_commit.py), so publishing stays exactly once; if a publisher commits first,
the day is read again and retried.

`expire` drops snapshots older than an age (the current one always stays) and deletes the data files
that only those snapshots referenced (such as the small files a compaction replaced), so time travel
reaches back that far and no further.
"""

from __future__ import annotations

import datetime as _dt
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .lake_catalog import LakeTables, conform, lake_errors, retry_commits
from .lake_commit import mark_properties, marks, no_retry
from .lake_spec import LakeSpec, lake_spec
from .schema import RELATIONS, TIME_COLUMN

if TYPE_CHECKING:
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["Compacted", "Expired", "compact", "expire"]

EXPIRE_AFTER = _dt.timedelta(days=7)
_EPOCH = _dt.datetime(1970, 1, 1)


@dataclass(frozen=True, slots=True)
class Compacted:
    """What `compact` did: per relation, data files before and after."""

    dest: str
    files: dict[str, tuple[int, int]] = field(default_factory=dict)

    def __repr__(self) -> str:
        changed = {r: (a, b) for r, (a, b) in self.files.items() if a != b}
        if not changed:
            return f"nothing to compact in {self.dest}: every day is one file"
        counts = ", ".join(f"{r} {a} -> {b}" for r, (a, b) in changed.items())
        return f"compacted {self.dest}: data files {counts}"


@dataclass(frozen=True, slots=True)
class Expired:
    """What `expire` did: snapshots dropped and data files deleted, per relation."""

    dest: str
    older_than: _dt.datetime
    snapshots: dict[str, int] = field(default_factory=dict)
    files: dict[str, int] = field(default_factory=dict)

    def __repr__(self) -> str:
        total = sum(self.snapshots.values())
        when = self.older_than.strftime("%Y-%m-%d %H:%M UTC")
        if not total:
            return f"no snapshots older than {when} in {self.dest}"
        return (f"expired {total} snapshots older than {when} in {self.dest} and deleted "
                f"{sum(self.files.values())} data files only they used")


def compact(target: str | Path | LakeSpec | None, *, min_files: int = 2) -> Compacted:
    """Rewrite every day of every table that has `min_files` or more data files as one file."""
    spec = lake_spec(target)
    tables = LakeTables(spec)
    done: dict[str, tuple[int, int]] = {}
    for relation in RELATIONS:
        table = tables.load(relation)
        if table is None:
            continue
        with lake_errors(spec, "compact"):
            days = _files_per_day(table)
            before = sum(days.values())
            for day, count in sorted(days.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)):
                if count >= min_files:
                    retry_commits(functools.partial(_rewrite_day, tables, relation, day, min_files), spec)
            reloaded = tables.load(relation)
            after = sum(_files_per_day(reloaded).values()) if reloaded is not None else before
        done[relation] = (before, after)
    return Compacted(spec.name, done)


def _files_per_day(table: Table) -> dict[int | None, int]:
    counts: dict[int | None, int] = {}
    for task in table.scan().plan_files():
        day = task.file.partition[0] if len(task.file.partition) else None
        counts[day] = counts.get(day, 0) + 1
    return counts


def _day_filter(relation: str, day: int | None) -> BooleanExpression:
    from pyiceberg import expressions

    ex: Any = expressions  # its pydantic constructors take (term, value) positionally; their stubs say otherwise
    column = TIME_COLUMN[relation]
    if day is None:
        return ex.IsNull(column)  # type: ignore[no-any-return]
    start = _EPOCH + _dt.timedelta(days=day)
    return ex.And(ex.GreaterThanOrEqual(column, start.isoformat()),  # type: ignore[no-any-return]
                  ex.LessThan(column, (start + _dt.timedelta(days=1)).isoformat()))


def _rewrite_day(tables: LakeTables, relation: str, day: int | None, min_files: int) -> None:
    """One attempt: the day's rows as of the current snapshot, overwritten in one transaction."""
    table = tables.load(relation)
    if table is None or _files_per_day(table).get(day, 0) < min_files:
        return  # done meanwhile by another compaction
    where = _day_filter(relation, day)
    rows = table.scan(row_filter=where).to_arrow()
    tx = no_retry(table).transaction()
    tx.overwrite(conform(rows, table), overwrite_filter=where, snapshot_properties=mark_properties(marks(table)))
    tx.commit_transaction()


def expire(target: str | Path | LakeSpec | None, *, older_than: _dt.timedelta = EXPIRE_AFTER) -> Expired:
    """Drop every snapshot older than `older_than` (not the current one) and the data files only they used."""
    spec = lake_spec(target)
    tables = LakeTables(spec)
    cutoff = _dt.datetime.now(_dt.UTC).replace(tzinfo=None) - older_than
    cutoff_ms = int((cutoff - _EPOCH).total_seconds() * 1000)
    snapshots: dict[str, int] = {}
    files: dict[str, int] = {}
    for relation in RELATIONS:
        table = tables.load(relation)
        if table is None:
            continue
        with lake_errors(spec, "expire"):
            current = table.current_snapshot()
            old = [s for s in table.metadata.snapshots
                   if s.timestamp_ms < cutoff_ms and (current is None or s.snapshot_id != current.snapshot_id)]
            if not old:
                continue
            kept = [s for s in table.metadata.snapshots if s not in old]
            gone = _data_files(table, old) - _data_files(table, kept)
            table.maintenance.expire_snapshots().by_ids([s.snapshot_id for s in old]).commit()
            for path in gone:  # referenced by no snapshot left: no reader can ask for them
                table.io.delete(path)
        snapshots[relation] = len(old)
        files[relation] = len(gone)
    return Expired(spec.name, cutoff.replace(tzinfo=_dt.UTC), snapshots, files)


def _data_files(table: Table, snapshots: Sequence[Snapshot]) -> set[str]:
    paths: set[str] = set()
    for snapshot in snapshots:
        for manifest in snapshot.manifests(table.io):
            paths.update(e.data_file.file_path for e in manifest.fetch_manifest_entry(table.io, discard_deleted=True))
    return paths
