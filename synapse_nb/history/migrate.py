"""The migration runner: applies the migrations (catalog.py) missing from a file in order, each in one transaction.

Each applied file is recorded in `schema_migrations(version, name, applied_at)`. A file whose highest
applied version is newer than the newest migration known here is refused before anything is written
(SchemaTooNewError); a DuckDB file with tables but no `schema_migrations` is not a history file and is
refused too. Only writers migrate: readers read any older schema as it is (see reader.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb

from ..errors import HistoryError, MigrationError, SchemaTooNewError
from ..events import utcnow
from .catalog import Migration, known_version, load_migrations, migrations_dir
from .db import run

__all__ = [
    "Migration",
    "applied_versions",
    "check_version",
    "file_version",
    "known_version",
    "load_migrations",
    "migrate",
    "migrations_dir",
]

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER,
    name       VARCHAR,
    applied_at TIMESTAMP
)
"""


def _prefix(catalog: str | None) -> str:
    return f'"{catalog}".main.' if catalog else ""


def applied_versions(con: duckdb.DuckDBPyConnection, *, catalog: str | None = None) -> set[int] | None:
    """Versions recorded in the file, or None when it has no `schema_migrations` table."""
    try:
        rows = con.execute(f"SELECT version FROM {_prefix(catalog)}schema_migrations").fetchall()
    except duckdb.CatalogException:
        return None
    return {int(r[0]) for r in rows}


def file_version(con: duckdb.DuckDBPyConnection, *, catalog: str | None = None) -> int | None:
    """The file's newest applied version (one cheap query), or None when it has no `schema_migrations`."""
    try:
        ((newest,),) = con.execute(f"SELECT max(version) FROM {_prefix(catalog)}schema_migrations").fetchall()
    except duckdb.CatalogException:
        return None
    return int(newest) if newest is not None else 0


def _known(migrations: Sequence[Migration] | None, directory: Path | None) -> Sequence[Migration]:
    return migrations if migrations is not None else load_migrations(directory)


def check_version(
    con: duckdb.DuckDBPyConnection,
    *,
    path: str | None,
    directory: Path | None = None,
    catalog: str | None = None,
    migrations: Sequence[Migration] | None = None,
) -> set[int]:
    """The applied versions, after refusing files that are too new or not history files at all."""
    known = _known(migrations, directory)[-1].version
    applied = applied_versions(con, catalog=catalog)
    if applied is None:
        query = "SELECT count(*) FROM duckdb_tables() WHERE NOT temporary"
        params: list[object] = []
        if catalog is not None:
            query += " AND database_name = ?"
            params.append(catalog)
        ((tables,),) = con.execute(query, params).fetchall()
        if tables:
            raise HistoryError(
                f"{path} is a DuckDB database but not a synapse_nb history file (no schema_migrations table): "
                "set SYNAPSE_DB to another path",
                path=path,
            )
        return set()
    newest = max(applied, default=0)
    if newest > known:
        raise SchemaTooNewError(
            f"history file {path} has schema version {newest}, newer than the {known} this synapse_nb knows: "
            "upgrade synapse_nb or set SYNAPSE_DB to another path",
            path=path,
            file_version=newest,
            known_version=known,
        )
    return applied


def migrate(
    con: duckdb.DuckDBPyConnection,
    *,
    path: str | None = None,
    directory: Path | None = None,
    migrations: Sequence[Migration] | None = None,
) -> list[Migration]:
    """Apply every missing migration in order, each atomically; returns those applied (none: a no-op).

    `migrations` (already loaded) or `directory` says which migrations this code knows. Raises
    SchemaTooNewError (nothing written), HistoryError for a DuckDB file that is not ours, and
    MigrationError naming the file whose statements failed (that file's changes rolled back).
    """
    known = _known(migrations, directory)
    applied = check_version(con, path=path, migrations=known)
    todo = [m for m in known if m.version not in applied]
    done: list[Migration] = []
    for migration in todo:
        con.begin()
        try:
            run(con, _CREATE_TABLE)
            run(con, migration.sql)
            run(con, "INSERT INTO schema_migrations VALUES (?, ?, ?)", [migration.version, migration.name, utcnow()])
            con.commit()
        except duckdb.Error as exc:
            con.rollback()
            raise MigrationError(
                f"migration {migration.filename} failed on {path or 'the history file'} "
                f"({str(exc).splitlines()[0]}); nothing of it was applied",
                path=path,
                version=migration.version,
                name=migration.name,
            ) from exc
        done.append(migration)
    return done
