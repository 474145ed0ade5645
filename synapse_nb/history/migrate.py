"""The migration runner: applies the numbered SQL files of `migrations/` in order, each in one transaction.

Files are `NNNN_name.sql`, append-only. They are found in the installed package
(`synapse_nb/_migrations`, put there by the wheel build) or, in a source checkout, in the repository's
top-level `migrations/`. Each applied file is recorded in `schema_migrations(version, name, applied_at)`.
A file whose highest applied version is newer than the newest file known here is refused before
anything is written (SchemaTooNewError); a DuckDB file with tables but no `schema_migrations` is not a
history file and is refused too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from ..errors import HistoryError, MigrationError, SchemaTooNewError
from ..events import utcnow
from .db import run

__all__ = [
    "Migration",
    "applied_versions",
    "check_version",
    "known_version",
    "load_migrations",
    "migrate",
    "migrations_dir",
]

_FILE = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER,
    name       VARCHAR,
    applied_at TIMESTAMP
)
"""


@dataclass(frozen=True, slots=True)
class Migration:
    """One SQL file."""

    version: int
    name: str
    path: Path

    @property
    def filename(self) -> str:
        return self.path.name


def migrations_dir() -> Path:
    """Where this installation's migration files are (installed wheel first, then the source tree)."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "_migrations", package.parent / "migrations"):
        if candidate.is_dir():
            return candidate
    raise HistoryError(f"no migrations folder next to {package}: reinstall synapse_nb")


def load_migrations(directory: Path | None = None) -> tuple[Migration, ...]:
    """The migration files of `directory` (default: `migrations_dir()`), by version."""
    directory = Path(directory) if directory is not None else migrations_dir()
    found: dict[int, Migration] = {}
    for path in sorted(directory.glob("*.sql")):
        m = _FILE.match(path.name)
        if m is None:
            raise HistoryError(f"migration file {path} is not named NNNN_name.sql: rename it")
        version = int(m["version"])
        if version in found:
            raise HistoryError(f"migrations {found[version].path.name} and {path.name} share version {version}")
        found[version] = Migration(version, m["name"], path)
    if not found:
        raise HistoryError(f"no migration files in {directory}: reinstall synapse_nb")
    return tuple(found[v] for v in sorted(found))


def known_version(directory: Path | None = None) -> int:
    """The newest schema version this code can write."""
    return load_migrations(directory)[-1].version


def applied_versions(con: duckdb.DuckDBPyConnection, *, catalog: str | None = None) -> set[int] | None:
    """Versions recorded in the file, or None when it has no `schema_migrations` table."""
    prefix = f'"{catalog}".main.' if catalog else ""
    try:
        rows = con.execute(f"SELECT version FROM {prefix}schema_migrations").fetchall()
    except duckdb.CatalogException:
        return None
    return {int(r[0]) for r in rows}


def check_version(
    con: duckdb.DuckDBPyConnection, *, path: str | None, directory: Path | None = None, catalog: str | None = None
) -> set[int]:
    """The applied versions, after refusing files that are too new or not history files at all."""
    known = known_version(directory)
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
    con: duckdb.DuckDBPyConnection, *, path: str | None = None, directory: Path | None = None
) -> list[Migration]:
    """Apply every missing migration in order, each atomically; returns those applied (none: a no-op).

    Raises SchemaTooNewError (nothing written), HistoryError for a DuckDB file that is not ours, and
    MigrationError naming the file whose statements failed (that file's changes rolled back).
    """
    migrations = load_migrations(directory)
    applied = check_version(con, path=path, directory=directory)
    todo = [m for m in migrations if m.version not in applied]
    if not todo:
        return []
    done: list[Migration] = []
    for migration in todo:
        sql = migration.path.read_text(encoding="utf-8")
        con.begin()
        try:
            run(con, _CREATE_TABLE)
            run(con, sql)
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
