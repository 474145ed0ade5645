"""The DuckDB side of a HistoryStore: bring the file's schema up to date, then ingest spools (flusher thread only).

This is the only module of the writer that imports duckdb; store.py imports it from its flusher
thread, so recording an event never loads or opens DuckDB on the caller's thread (the kernel's loop).
The migrations are loaded once (catalog.py) and the file's schema version, once verified, is checked
with one query per ingest, in the same connection as the ingest: another process (a newer synapse_nb)
may migrate the file at any time between two ingests, and an older ingester must never write into a
file whose schema it does not know (SchemaTooNewError, nothing written).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ..errors import HistoryError
from .catalog import Migration
from .db import describe_error, file_lock, opened, remove_empty_placeholder
from .ingest import ingest
from .migrate import file_version, migrate

__all__ = ["Flusher", "Ingested", "IngestFailed"]


class IngestFailed(HistoryError):
    """An ingest failed for a reason that may pass (an I/O or DuckDB error): retry later."""


@dataclass
class Ingested:
    """What one `Flusher.run` did."""

    offsets: dict[str, int] = field(default_factory=dict)  # spool name -> offset now in the database
    deleted: list[str] = field(default_factory=list)  # spools finished and removed
    more: bool = False  # stopped at `deadline` with more to ingest: call again


class Flusher:
    """Opens the history file briefly for each ingest; knows `migrations` and nothing newer."""

    def __init__(self, path: Path, spools: Path, migrations: tuple[Migration, ...]) -> None:
        self.path = path
        self.spools = spools
        self.migrations = migrations
        self.known = migrations[-1].version
        self.verified: int | None = None  # the file's schema version, once this process has checked it
        self._con: duckdb.DuckDBPyConnection | None = None  # the file's connection while `run` has it open

    def remove_placeholder(self) -> None:
        """An empty file (e.g. from mkstemp) is not a DuckDB database: remove it so DuckDB can create one."""
        with file_lock(self.path):
            remove_empty_placeholder(self.path)

    def run(
        self, *, deadline: float, stop: Callable[[], bool] | None = None, finished: Iterable[str] = ()
    ) -> Ingested:
        """Migrate the file if needed and ingest the spools of a known version; see module docstring.

        Batches go on until nothing is left or `deadline` has passed (`more` then says so), so a
        writer appending faster than this ingests cannot keep the file held for ever.

        Raises HistoryLockTimeout (busy past `deadline`), SchemaTooNewError (a newer synapse_nb migrated
        the file: nothing written), MigrationError / HistoryError (the file cannot be used) and
        IngestFailed (worth retrying).
        """
        done = Ingested()
        try:
            with opened(self.path, deadline=deadline, stop=stop) as con:
                self._con = con
                try:
                    self._check(con)
                    while True:
                        result = ingest(con, self.spools, self.known, finished=finished)
                        done.offsets.update(result.offsets)
                        done.deleted.extend(result.deleted)
                        done.more = result.more
                        if not result.more or time.monotonic() >= deadline or (stop is not None and stop()):
                            return done
                finally:
                    self._con = None
        except duckdb.Error as exc:
            if self.verified is None:  # never opened: the file itself is the problem (corrupt, not DuckDB...)
                raise HistoryError(describe_error(self.path, exc), path=str(self.path)) from exc
            raise IngestFailed(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
        except OSError as exc:
            if self.verified is None:
                raise HistoryError(describe_error(self.path, exc), path=str(self.path)) from exc
            raise IngestFailed(f"{exc.strerror or exc}") from exc

    def interrupt(self) -> None:
        """Stop what `run` is doing in DuckDB now (from another thread): its batch is rolled back, its events stay
        in the spool, and `run` raises IngestFailed. For a close that cannot wait any longer: a thread left inside
        DuckDB when the interpreter exits is ended by pthread_exit, which DuckDB's C++ turns into an abort."""
        con = self._con
        if con is not None:
            con.interrupt()

    def _check(self, con: duckdb.DuckDBPyConnection) -> None:
        if self.verified is not None and file_version(con) == self.verified:
            return  # the usual case: one query
        migrate(con, path=str(self.path), migrations=self.migrations)
        self.verified = self.known
