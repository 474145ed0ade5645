"""Reading a history lake (lake.py) with the History API: `Lake`, what `synapse_nb.history(LAKE_DIR)` returns.

Read-only: a private in-memory DuckDB with one view per relation over
`read_parquet('DIR/relation=R/**/*.parquet', hive_partitioning = true, union_by_name = true)`, so
parts written by older and newer synapse_nb (fewer or more columns) read together, missing columns NULL.
Each view shows the columns this code knows first, typed as in the history file (JSON columns, stored
as text, are JSON again), then whatever else the parts have: `date` (the partition), `_source` (which
history file), `_schema` (its writer's schema version) and `_seq` (its row number there; (`_source`,
`_seq`) is unique across the lake). Views are rebuilt only when a relation's folders change (checked
by their modification times on each query), and the glob is expanded by DuckDB on every query, so
parts published meanwhile are always seen. Only complete parts are read (see lake_dir.py).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from ..errors import HistoryError
from .db import file_lock, run
from .lake import Published
from .lake_dir import read_lake, relation_dir, relation_files
from .queries import empty_relation, known_columns, quote_path
from .reader import History
from .schema import COLUMNS, RELATIONS, TASKS_VIEW

__all__ = ["Lake"]


class Lake(History):
    """Everyone's published history in lake directory `path`; the same methods as History, read-only."""

    def __init__(self, path: str | Path, *, migrations: Path | None = None) -> None:
        super().__init__(path, migrations=migrations)
        read_lake(self.path)  # a marker of a newer layout is refused now, with one line
        self._built: dict[str, object] = {}  # relation -> the folder state its view was built for

    def __repr__(self) -> str:
        return f"<Lake {self.path}>"

    def publish(self, dest: str | Path) -> Published:
        """Refused: a lake is read here; publish from a history file (`synapse_nb.history().publish(DIR)`)."""
        raise HistoryError(
            f"{self.path} is a lake, opened read-only: publish from a history file, "
            "e.g. synapse_nb.history().publish(DIR)",
            path=str(self.path),
        )

    @contextmanager
    def connection(self, relations: Collection[str] = RELATIONS) -> Iterator[duckdb.DuckDBPyConnection]:
        """An in-memory DuckDB whose relations are views over the lake's Parquet parts (all of them: a lake
        has no spool, so `relations` changes nothing)."""
        with file_lock(self.path):  # one user of this object's connection at a time
            con = self._memory()
            try:
                for relation in RELATIONS:
                    self._refresh(con, relation)
                con.execute(f"CREATE OR REPLACE VIEW tasks AS {TASKS_VIEW}")
            except duckdb.Error as exc:
                self._built.clear()
                raise HistoryError(
                    f"lake {self.path} cannot be read ({str(exc).splitlines()[0]}): check its files",
                    path=str(self.path),
                ) from exc
            yield con

    def close(self) -> None:
        """Free the in-memory DuckDB (reads reopen one when needed)."""
        super().close()
        self._built.clear()

    def _parts(self, relation: str) -> list[str]:
        """A lake's relation is one view over its Parquet parts."""
        return [relation]

    def _refresh(self, con: duckdb.DuckDBPyConnection, relation: str) -> None:
        state = _folders(relation_dir(self.path, relation))
        if relation in self._built and self._built[relation] == state:
            return
        known = COLUMNS[relation]
        if not relation_files(self.path, relation):
            body = empty_relation(relation)
        else:
            source = (
                f"read_parquet('{quote_path(relation_dir(self.path, relation))}/**/*.parquet', "
                "hive_partitioning = true, union_by_name = true)"
            )
            present = [str(r[0]) for r in run(con, f"DESCRIBE SELECT * FROM {source}")]
            cols = known_columns(relation, present, cast=True)
            cols += [f'"{c}"' for c in present if c not in known and c != "relation"]
            body = f"{', '.join(cols)} FROM {source}"
        run(con, f"CREATE OR REPLACE VIEW {relation} AS SELECT {body}")
        self._built[relation] = state


def _folders(path: Path) -> object:
    """The names and modification times of a relation's date folders: changes when a part is added."""
    try:
        with os.scandir(path) as entries:
            return tuple(sorted((e.name, e.stat().st_mtime_ns) for e in entries if e.is_dir()))
    except (FileNotFoundError, NotADirectoryError):
        return None
