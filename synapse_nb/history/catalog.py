"""The migration files this code knows: found, parsed and cached once per process (no DuckDB here).

Files are `NNNN_name.sql`, append-only. They are found in the installed package
(`synapse_nb/_migrations`, put there by the wheel build) or, in a source checkout, in the repository's
top-level `migrations/`. Which migrations a process knows is a value passed around (a `directory`, or
the loaded tuple), never a global switch: that is the seam tests use to run two processes at different
schema versions on one file. Loading is cached by the folder's listing (names, sizes, mtimes), so the
SQL files are read once per process, not on every ingest or read, yet an edited file is seen again.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from ..errors import HistoryError

__all__ = ["Migration", "known_version", "load_migrations", "migrations_dir", "view_query"]

_FILE = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")
_VIEW = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+(?P<name>\w+)\s+AS\s+(?P<query>.*?);",
                   re.IGNORECASE | re.DOTALL)

_Listing = tuple[tuple[str, int, int], ...]

# Process-wide by nature (the files on disk are shared by every store and reader of the process).
_CACHE: dict[str, tuple[_Listing, tuple[Migration, ...]]] = {}
_CACHE_GUARD = threading.Lock()


@dataclass(frozen=True, slots=True)
class Migration:
    """One SQL file, with its statements."""

    version: int
    name: str
    path: Path
    sql: str

    @property
    def filename(self) -> str:
        return self.path.name


@functools.cache
def migrations_dir() -> Path:
    """Where this installation's migration files are (installed wheel first, then the source tree)."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "_migrations", package.parent / "migrations"):
        if candidate.is_dir():
            return candidate
    raise HistoryError(f"no migration files next to {package}: reinstall synapse_nb")


def _listing(directory: Path) -> _Listing:
    try:
        with os.scandir(directory) as entries:
            found = [(e.name, e.stat()) for e in entries if e.name.endswith(".sql")]
    except OSError as exc:
        raise HistoryError(f"no migration files in {directory} ({exc.strerror}): reinstall synapse_nb") from exc
    return tuple(sorted((name, st.st_size, st.st_mtime_ns) for name, st in found))


def load_migrations(directory: Path | None = None) -> tuple[Migration, ...]:
    """The migration files of `directory` (default: `migrations_dir()`), by version; cached per process."""
    directory = Path(directory) if directory is not None else migrations_dir()
    key = str(directory.absolute())
    listing = _listing(directory)
    with _CACHE_GUARD:
        cached = _CACHE.get(key)
    if cached is not None and cached[0] == listing:
        return cached[1]
    found: dict[int, Migration] = {}
    for name, _size, _mtime in listing:
        path = directory / name
        m = _FILE.match(name)
        if m is None:
            raise HistoryError(f"migration file {path} is not named NNNN_name.sql: rename it")
        version = int(m["version"])
        if version in found:
            raise HistoryError(f"migrations {found[version].path.name} and {name} share version {version}")
        found[version] = Migration(version, m["name"], path, path.read_text(encoding="utf-8"))
    if not found:
        raise HistoryError(f"no migration files in {directory}: reinstall synapse_nb")
    loaded = tuple(found[v] for v in sorted(found))
    with _CACHE_GUARD:
        _CACHE[key] = (listing, loaded)
    return loaded


def known_version(directory: Path | None = None) -> int:
    """The newest schema version this code can write."""
    return load_migrations(directory)[-1].version


def view_query(name: str, directory: Path | None = None) -> str:
    """The query of the view `name` as the newest migration that (re)creates it defines it.

    Readers that define a view over more than the file (the rows not yet ingested, a lake) take its query from
    here, so the migration stays its one definition (a migration that redefines the view later is seen too)."""
    found = [m["query"].strip() for migration in load_migrations(directory) for m in _VIEW.finditer(migration.sql)
             if m["name"] == name]
    if not found:
        raise HistoryError(f"no migration creates a view named {name!r}: reinstall synapse_nb")
    return found[-1]
