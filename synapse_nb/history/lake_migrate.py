"""Moving a Parquet lake of the retired format into an Iceberg lake, in one command: `migrate_lake(OLD, NEW)`.

The retired lake (synapse_nb before the Iceberg lake) was a folder with a `_lake.json` marker and
`relation=R/date=D/part-<source>-<from>-<to>.parquet` files, written with a rename protocol of our own.
Its rows carry `_source` and `_seq` as the Iceberg tables do, so each relation moves in one commit with
every history file's mark (lake_commit.append_new): migrating twice, or publishing a history file into
NEW after its rows came over, adds nothing twice. OLD is only read; delete it once NEW serves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from ..errors import LakeError
from .lake_catalog import LakeTables
from .lake_commit import append_new
from .lake_spec import OLD_MARKER, LakeSpec, lake_spec
from .queries import quote_path
from .schema import COLUMNS, RELATIONS

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Migrated", "migrate_lake"]


@dataclass(frozen=True, slots=True)
class Migrated:
    """What `migrate_lake` moved: rows per relation, and from how many history files."""

    old: str
    new: str
    rows: dict[str, int]
    sources: int

    @property
    def total(self) -> int:
        return sum(self.rows.values())

    def __repr__(self) -> str:
        if not self.total:
            return f"nothing to move from {self.old} to {self.new}: every row is there already"
        counts = ", ".join(f"{r} {n:,}" for r, n in self.rows.items() if n)
        return (f"moved {self.total:,} rows of {self.sources} history files from {self.old} into {self.new}: "
                f"{counts}; {self.old} is left as it was: delete it when {self.new} serves")


def migrate_lake(old: str | Path, new: str | Path | LakeSpec) -> Migrated:
    """Append every row of the Parquet lake folder `old` not yet in Iceberg lake `new` to it."""
    folder = Path(old).expanduser().absolute()
    relations = [r for r in RELATIONS if _files(folder, r)]
    if not (folder / OLD_MARKER).is_file() and not relations:
        raise LakeError(f"{folder} is not a Parquet lake of the retired format (no {OLD_MARKER}, no relation= "
                        "folders): name the folder the old publish_to wrote", lake=str(folder))
    spec = lake_spec(new)
    if spec.folder is not None and spec.folder == folder:
        raise LakeError(f"migrate {folder} into a new folder, not into itself", lake=str(folder))
    tables = LakeTables(spec)
    rows = dict.fromkeys(RELATIONS, 0)
    sources: set[str] = set()
    for relation in relations:
        data = _read(folder, relation)
        sources.update(str(s) for s in data.column("_source").unique().to_pylist() if s is not None)
        rows[relation] = append_new(tables, relation, data)
    return Migrated(str(folder), spec.name, rows, len(sources))


def _files(folder: Path, relation: str) -> list[Path]:
    return sorted((folder / f"relation={relation}").glob("*/*.parquet"))


def _read(folder: Path, relation: str) -> pa.Table:
    """Every row of `relation` in the old lake, with the columns the Iceberg table takes."""
    glob = f"{quote_path(folder / f'relation={relation}')}/*/*.parquet"
    try:
        with duckdb.connect() as con:
            source = f"read_parquet('{glob}', hive_partitioning = true, union_by_name = true)"
            present = {str(r[0]) for r in con.sql(f"DESCRIBE SELECT * FROM {source}").fetchall()}
            if not {"_source", "_seq"} <= present:
                raise LakeError(f"{folder}: its {relation} files have no _source/_seq columns (written before "
                                "synapse_nb numbered rows): publish their history files into the new lake instead",
                                lake=str(folder))
            wanted = [c for c in COLUMNS[relation] if c in present] + sorted(
                c for c in present if c not in COLUMNS[relation] and c not in ("date", "relation"))
            columns = ", ".join(f'"{c}"' for c in wanted)
            return con.sql(f"SELECT {columns} FROM {source} WHERE _seq IS NOT NULL").to_arrow_table()
    except duckdb.Error as exc:
        raise LakeError(f"{folder} cannot be read ({str(exc).splitlines()[0]}): check its files",
                        lake=str(folder)) from exc
