"""HistoryStore: records every event as it happens (spool append) and ingests it into DuckDB in the background.

Why a spool: DuckDB lets only one process hold the file and fails every other open at once, so
writing each event straight into DuckDB from several kernels either loses events or crawls (~14
events/s each with retries, measured), and a write-per-event costs milliseconds on the event loop.
Instead `record()` redacts the event, maps it to rows and appends one JSON line to this process's
spool file with a single `os.write` (tens of microseconds, no lock shared with the flusher). The line
is in the OS page cache when `record()` returns, so it survives the process being SIGKILLed (pass
`fsync=True` to `open` to also survive power loss, at ~0.3 ms per event).

A daemon flusher thread ingests spools into DuckDB in batches (see ingest.py for exactly-once): it
opens the file only for the ingest (tens of milliseconds), retries lock conflicts with jittered
backoff without holding anything the event loop needs, and also finishes spools of processes that
died. Readers (reader.py) attach the file briefly and add the spool lines not yet ingested (or ingest
a large backlog themselves), so a query never misses an event and no process waits on another's
flusher. Designs considered and rejected: one writer process serving the others over a socket (a
daemon to manage; events lost when it dies); DuckDB's own multi-process access (none: any open, even
read-only, excludes every other process); a queue drained by a thread (events lost on SIGKILL).
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import duckdb

from ..config import history_path
from ..errors import HistoryError
from ..events import Event
from .db import HistoryLockTimeout, describe_error, file_lock, opened, remove_empty_placeholder
from .ingest import ingest
from .migrate import known_version, load_migrations, migrate
from .recorder import Recorder
from .redact import Redactor, json_default
from .spool import SpoolWriter, is_abandoned, list_spools, spool_dir

if TYPE_CHECKING:
    from .reader import History

__all__ = ["HistoryStore"]

logger = logging.getLogger("synapse_nb.history")

BATCH_DELAY = 0.2  # seconds to gather events after the first one before ingesting them
MIN_INTERVAL = 2.0  # at most one ingest per this many seconds per process: each costs ~20-30 ms of CPU
# and holds the lock; readers merge the spool, so nobody waits for it (bench row 3)
SCAN_INTERVAL = 5.0  # how often an idle flusher looks for spools left by dead processes
ROTATE_BYTES = 32 * 1024 * 1024  # a spool this large is handed over (finished and deleted) and replaced
OPEN_TIMEOUT = 10.0  # how long open() waits for a busy file before leaving migration to the flusher
ATTEMPT_TIMEOUT = 1.0  # one background ingest waits this long for a busy file, then backs off and retries


class HistoryStore:
    """The history file of this process: `record` is the EventSink; see the module docstring.

    Build it with `HistoryStore.open(path)`. When the file cannot be used, the store is unavailable
    (`available` False, `problem` one line saying why and how to fix it) and `record` does nothing.
    """

    def __init__(self, path: Path, *, migrations: Path | None = None) -> None:
        self.path = path
        self.problem: str | None = None
        self._error: HistoryError | None = None
        self.redactor = Redactor()
        self._migrations = migrations
        self._recorder = Recorder()
        self._spool: SpoolWriter | None = None
        self._version = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._pending = False
        self._failed_write = False
        self._failures = 0  # consecutive failed ingests (backoff, and one warning per streak)
        self._busy = 0  # consecutive ingests that found the file held by another program
        self._ingest_lock = threading.Lock()
        self._ingested_event = threading.Event()  # set by every successful ingest (tests wait on it)
        self._ingested = 0  # offset of our own current spool known to be in the database
        self._finished: set[str] = set()  # our rotated spools, to delete once ingested
        self._thread: threading.Thread | None = None
        self._atexit: Callable[[], None] | None = None
        self._reader: History | None = None

    # ---- opening -------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        *,
        strict: bool = False,
        fsync: bool = False,
        migrations: Path | None = None,
    ) -> HistoryStore:
        """Open (creating and migrating) the history file; `path` None means `config.history_path()`.

        Never raises unless `strict`: an unusable file gives an unavailable store with `problem` set
        (and one WARNING on the `synapse_nb.history` logger). `migrations` overrides the SQL folder.
        """
        # Absolute now: a notebook's %cd must not move the file under a running store.
        resolved = (Path(path).expanduser() if path is not None else history_path()).absolute()
        store = cls(resolved, migrations=migrations)
        try:
            try:
                store._open(fsync=fsync)
            except (duckdb.Error, OSError) as exc:
                raise HistoryError(describe_error(resolved, exc), path=str(resolved)) from exc
        except HistoryError as exc:
            store._set_problem(exc)
            if strict:
                raise
        return store

    def _open(self, *, fsync: bool) -> None:
        path = self.path
        if path.is_dir():
            raise HistoryError(f"history file {path} is a directory: set SYNAPSE_DB to a file path", path=str(path))
        load_migrations(self._migrations)
        self._version = known_version(self._migrations)
        path.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(path):
            remove_empty_placeholder(path)
        try:
            with opened(path, deadline=time.monotonic() + OPEN_TIMEOUT) as con:
                migrate(con, path=str(path), directory=self._migrations)
        except HistoryLockTimeout:
            logger.info("history file %s is busy; its schema will be checked on the first ingest", path)
        self._spool = SpoolWriter(spool_dir(path), self._version, fsync=fsync)
        self._thread = threading.Thread(target=self._run, name=f"synapse-history-flusher:{path.name}", daemon=True)
        self._thread.start()
        ref = weakref.ref(self)

        def _close_at_exit() -> None:
            store = ref()
            if store is not None:
                store.close(timeout=2.0)

        self._atexit = _close_at_exit
        atexit.register(_close_at_exit)

    def _set_problem(self, error: HistoryError) -> None:
        if self.problem is None:
            self._error = error
            self.problem = str(error)
            logger.warning("history is not recorded: %s", self.problem)

    # ---- public state --------------------------------------------------------------------------

    @property
    def available(self) -> bool:
        """True while events are being recorded."""
        return self.problem is None and self._spool is not None and not self._spool.closed

    @property
    def spool_path(self) -> Path | None:
        """This process's current spool file (None when unavailable)."""
        return self._spool.path if self._spool is not None else None

    @property
    def pending_bytes(self) -> int:
        """Bytes this process has spooled that it has not yet seen ingested (0 when all are in the file)."""
        spool = self._spool
        return 0 if spool is None or spool.closed else max(0, spool.size - self._ingested)

    def __repr__(self) -> str:
        state = "available" if self.available else f"unavailable: {self.problem or 'closed'}"
        return f"<HistoryStore {self.path} ({state})>"

    # ---- recording -----------------------------------------------------------------------------

    def record(self, event: Event) -> None:
        """Write `event` to the spool; when this returns it survives a SIGKILL. Never raises."""
        spool = self._spool
        if spool is None or spool.closed or self.problem is not None:
            return
        try:
            rows = self._recorder.rows(event)
            if not rows:
                return
            data = b"".join(self._line(relation, row) for relation, row in rows)
            spool.write(data)
        except Exception as exc:  # an EventSink must not raise into the agent loop
            if not self._failed_write:
                self._failed_write = True
                logger.warning("could not record a %s event in %s: %s", type(event).__name__, self.path, exc)
            return
        if not self._pending:
            self._pending = True
            self._wake.set()

    def _line(self, relation: str, row: dict[str, object]) -> bytes:
        # Redacting the serialised line covers every nested value in one pass over the text.
        try:
            text = json.dumps({"t": relation, "r": row}, ensure_ascii=False, allow_nan=False, default=json_default)
        except (TypeError, ValueError):  # NaN, odd keys: walk the row into JSON-safe values first
            text = json.dumps({"t": relation, "r": self.redactor.redact(row)}, ensure_ascii=False)
        return self.redactor.redact_text(text).encode("utf-8", "replace") + b"\n"

    # ---- ingesting -----------------------------------------------------------------------------

    def _run(self) -> None:
        last = 0.0
        next_scan = 0.0  # scan at once: a dead process may have left a spool
        while not self._stop.is_set():
            woke = self._wake.wait(timeout=max(0.0, next_scan - time.monotonic()))
            if self._stop.is_set():
                return
            if woke:
                self._wake.clear()
                wait = max(BATCH_DELAY, MIN_INTERVAL - (time.monotonic() - last), self._backoff())
                if self._stop.wait(wait):
                    return
            now = time.monotonic()
            due = woke
            if now >= next_scan:
                next_scan = now + SCAN_INTERVAL
                due = due or self._own_pending() or self._others_pending()
            if due and self.problem is None:
                ok = self._ingest_now(deadline=time.monotonic() + ATTEMPT_TIMEOUT, stop=self._stop.is_set)
                last = time.monotonic()
                if not ok and self.problem is None and not self._stop.is_set():
                    self._wake.set()  # retry, after the backoff above

    def _backoff(self) -> float:
        if self._failures:  # errors other than a busy file: retry slowly
            return float(min(30.0, MIN_INTERVAL * 2**self._failures))
        if self._busy:  # the file is held by someone else: keep trying, not hammering
            return float(min(2.0, MIN_INTERVAL * 2 ** (self._busy - 1)))
        return 0.0

    def _own_pending(self) -> bool:
        spool = self._spool
        return spool is not None and not spool.closed and spool.size > self._ingested

    def _others_pending(self) -> bool:
        own = self._spool.name if self._spool is not None else ""
        return any(s.name != own and is_abandoned(s.path) for s in list_spools(spool_dir(self.path), self._version))

    def _ingest_now(self, *, deadline: float, stop: Callable[[], bool] | None = None) -> bool:
        """Ingest everything pending; False if the file stayed locked past `deadline` (or `stop()`)."""
        # One ingest at a time per store (flusher, flush(), close()): they share the bookkeeping.
        if not self._ingest_lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            return False
        try:
            return self._ingest_locked(deadline, stop)
        finally:
            self._ingest_lock.release()

    def _ingest_locked(self, deadline: float, stop: Callable[[], bool] | None) -> bool:
        spool = self._spool
        if spool is None:
            return True
        self._pending = False
        try:
            with opened(self.path, deadline=deadline, stop=stop) as con:
                migrate(con, path=str(self.path), directory=self._migrations)
                while True:
                    result = ingest(con, spool.directory, self._version, finished=self._finished)
                    own = result.offsets.get(spool.name)
                    if own is not None:
                        self._ingested = own
                    self._finished.difference_update(result.deleted)
                    if not result.more:
                        break
        except HistoryLockTimeout:
            self._pending = True
            self._busy += 1
            return False
        except HistoryError as exc:  # e.g. a newer synapse_nb migrated the file meanwhile
            self._set_problem(exc)
            return False
        except (duckdb.Error, OSError) as exc:
            self._pending = True
            self._failures += 1
            if self._failures == 1:
                logger.warning("history ingest into %s failed, will retry: %s", self.path, exc)
            return False
        self._failures = self._busy = 0
        self._ingested_event.set()
        if not spool.closed and spool.size >= ROTATE_BYTES and self._ingested >= spool.size:
            self._finished.add(spool.rotate())
            self._ingested = 0
        return True

    def flush(self, timeout: float = 10.0) -> None:
        """Ingest everything recorded so far into the DuckDB file now (reads never need this).

        If the file stays locked by other programs for `timeout` seconds, returns anyway: the events
        stay in the spool, readers still see them, and the flusher keeps trying.
        """
        if self._spool is None or self.problem is not None:
            return
        if not self._ingest_now(deadline=time.monotonic() + timeout):
            logger.info("history flush into %s timed out after %.1f s; events stay in the spool", self.path, timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Stop the flusher, ingest what is left (up to `timeout` s) and remove this process's spool."""
        spool = self._spool
        if spool is None or spool.closed:
            return
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        name = spool.name
        spool.close()
        self._finished.add(name)
        if self.problem is None:
            self._ingest_now(deadline=time.monotonic() + timeout)
        if self._atexit is not None:
            atexit.unregister(self._atexit)
            self._atexit = None

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ---- reading -------------------------------------------------------------------------------

    def history(self) -> History:
        """A reader over this store's file (complete: includes events not yet ingested); one per store."""
        if self._error is not None:
            raise self._error
        if self._reader is None:
            from .reader import History

            self._reader = History(self.path, migrations=self._migrations)
        return self._reader
