"""Exactly once through Iceberg commits: what each history file has published, kept in the table itself.

Every snapshot our writers commit carries, in its summary, one property per history file that ever
published to the table: `synapse.seq.<source>` = the highest `_seq` of that file in the table. Rows
of one file are published in `_seq` order, each commit a contiguous range, so that number says
exactly which of its rows are in: those up to it. A commit (`append_new`):

1. reads the table's current snapshot and its marks (`marks`);
2. drops the rows at or below its file's mark (another kernel publishing the same file may have
   committed them meanwhile), and stops if none are left;
3. appends the rest in one snapshot whose summary holds every mark of the parent plus the new one,
   on the condition that the parent is still the current snapshot (Iceberg's optimistic
   concurrency); if another writer committed first, it goes back to 1.

So a publish killed anywhere, rerun by any process on any machine, adds nothing twice and loses
nothing: before the commit nothing is visible (files written for it are orphans no snapshot names);
after it, the mark says so. pyiceberg's own commit retry rebases an append onto the newer snapshot
without looking at the marks, so it is turned off for our commits (`no_retry`). Compaction carries the
marks into the snapshots it writes too (lake_care.py). Should a foreign writer (Spark, another tool)
commit a snapshot without them, the marks are read from the data (the max `_seq` per `_source`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from .lake_catalog import LakeTables, conform, retry_commits

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["MARK_PREFIX", "append_new", "mark_properties", "marks", "no_retry"]

MARK_PREFIX = "synapse.seq."


def marks(table: Table) -> dict[str, int]:
    """Each source's highest published `_seq` in `table` as of its current snapshot (empty: nothing yet)."""
    snapshot = table.current_snapshot()
    if snapshot is None or snapshot.summary is None:
        return {}
    found = {
        key.removeprefix(MARK_PREFIX): int(value)
        for key, value in snapshot.summary.additional_properties.items()
        if key.startswith(MARK_PREFIX)
    }
    if found or int(snapshot.summary.additional_properties.get("total-records", "0") or 0) == 0:
        return found
    return _marks_from_data(table)  # a snapshot another tool committed without our marks


def _marks_from_data(table: Table) -> dict[str, int]:
    data = table.scan(selected_fields=("_source", "_seq")).to_arrow()
    if not data.num_rows:
        return {}
    grouped = data.group_by("_source").aggregate([("_seq", "max")])
    return {str(s): int(m) for s, m in zip(grouped.column("_source").to_pylist(),
                                           grouped.column("_seq_max").to_pylist(), strict=True)
            if s is not None and m is not None}


def mark_properties(current: dict[str, int]) -> dict[str, str]:
    return {f"{MARK_PREFIX}{source}": str(seq) for source, seq in sorted(current.items())}


def no_retry(table: Table) -> Table:
    """The same table, but pyiceberg does not retry its commits (each retry of ours re-reads the marks)."""
    from pyiceberg.table import Table as _Table

    props = dict(table.metadata.properties)
    if props.get("commit.retry.num-retries") == "0":
        return table
    props["commit.retry.num-retries"] = "0"
    metadata = table.metadata.model_copy(update={"properties": props})
    return _Table(table._identifier, metadata, table.metadata_location, table.io, table.catalog)


def append_new(tables: LakeTables, relation: str, rows: pa.Table) -> int:
    """Append the rows not yet in the table: those above their history file's mark (`rows` holds, for each
    `_source` in it, a contiguous range of its `_seq`); how many went in."""
    if not rows.num_rows:
        return 0
    first = tables.ensure(relation, rows.schema)
    sources = [str(s) for s in pc.unique(rows.column("_source")).to_pylist()]

    def attempt() -> int:
        table = tables.load(relation) or first
        current = marks(table)
        fresh = _above(rows, {s: current.get(s, 0) for s in sources})
        if not fresh.num_rows:
            return 0
        grouped = fresh.group_by("_source").aggregate([("_seq", "max")])
        current.update(zip(grouped.column("_source").to_pylist(), grouped.column("_seq_max").to_pylist(),
                           strict=True))
        no_retry(table).append(conform(fresh, table), snapshot_properties=mark_properties(current))
        return int(fresh.num_rows)

    return retry_commits(attempt, tables.spec)


def _above(rows: pa.Table, done: dict[str, int]) -> pa.Table:
    """The rows whose `_seq` is above their source's mark."""
    if not any(done.values()):
        return rows
    seqs, sources = rows.column("_seq"), rows.column("_source")
    keep = None
    for source, mark in done.items():
        this = pc.and_(pc.equal(sources, source), pc.greater(seqs, mark))
        keep = this if keep is None else pc.or_(keep, this)
    return rows.filter(keep)
