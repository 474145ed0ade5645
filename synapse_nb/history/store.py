"""HistoryStore: records every event as it happens (spool append) and ingests it into DuckDB in the background.

Why a spool: DuckDB lets only one process hold the file and fails every other open at once, so
writing each event straight into DuckDB from several kernels either loses events or crawls (~14
events/s each with retries, measured), and a write-per-event costs milliseconds on the event loop.
Instead `record()` redacts the event, maps it to rows and appends one JSON line to this process's
spool file with a single `os.write` (tens of microseconds, no lock shared with the flusher). The line
is in the OS page cache when `record()` returns, so it survives the process being SIGKILLed (pass
`fsync=True` to `open` to also survive power loss, at ~0.3 ms per event).

Nothing here touches DuckDB on the caller's thread: `open()` only creates the spool and starts a
daemon flusher thread, which imports DuckDB, creates or migrates the file, and then ingests spools in
batches (see flusher.py and ingest.py for exactly-once). It opens the file only for the ingest (tens
of milliseconds), retries lock conflicts with jittered backoff without holding anything the event loop
needs, and also finishes spools of processes that died. Readers (reader.py) attach the file briefly
and add the spool lines not yet ingested, so a query never misses an event and no process waits on
another's flusher.

When another process (a newer synapse_nb) has migrated the file past the schema this code knows,
the store is `paused`: it keeps spooling (a newer synapse_nb ingests older spools), writes nothing
into the file, and says so once (`paused`, shown by the notebook). Designs considered and rejected:
one writer process serving the others over a socket (a daemon to manage; events lost when it dies);
DuckDB's own multi-process access (none: any open, even read-only, excludes every other process); a
queue drained by a thread (events lost on SIGKILL).
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

from ..config import history_path
from ..errors import HistoryError, SchemaTooNewError
from ..events import Event
from .catalog import Migration, load_migrations
from .problem import describe_error
from .recorder import Recorder
from .redact import Redactor, json_default
from .spool import SpoolWriter, is_abandoned, list_spools, spool_dir

if TYPE_CHECKING:
    from .flusher import Flusher
    from .reader import History

__all__ = ["HistoryStore", "quiet_wait"]

logger = logging.getLogger("synapse_nb.history")

BATCH_DELAY = 0.2  # seconds to gather events after the first one before ingesting them
MIN_INTERVAL = 2.0  # at most one ingest per this many seconds per process: each costs ~20-30 ms of CPU
# and holds the lock; readers merge the spool, so nobody waits for it (bench row 3)
QUIET = 0.3  # an ingest waits until no event came for this long: never at a turn's end, when the cell
# finishes and a frontend waits for the kernel (an ingest's CPU and GIL then delay the last output and idle)
MAX_DEFER = 10.0  # ... but for no longer than this after the first event waiting (a busy kernel still ingests)
MAX_BACKLOG = 4 * 1024 * 1024  # ... nor once this many bytes wait: a stream that never pauses (a flood of events,
# a turn that streams for minutes) reaches the file in pieces of about this size, one transaction each (ingest.py:
# MAX_BATCH_BYTES), instead of piling up MAX_DEFER's worth of events (tens of MB when they come fast)
SCAN_INTERVAL = 5.0  # how often an idle flusher looks for spools left by dead processes
ROTATE_BYTES = 32 * 1024 * 1024  # a spool this large is handed over (finished and deleted) and replaced
OPEN_TIMEOUT = 10.0  # how long a strict open, and a reader, wait for the background open of a busy file
ATTEMPT_TIMEOUT = 1.0  # one background ingest waits this long for a busy file, then backs off and retries
INTERRUPT_TIMEOUT = 10.0  # how long close() waits for an interrupted flusher to leave DuckDB (it takes milliseconds)
INTERRUPT_POLL = 0.05  # how often close() interrupts it meanwhile


# One encoder for every line: json.dumps with options builds a new JSONEncoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=json_default)


def quiet_wait(now: float, last_event: float, pending_since: float, backlog: int = 0) -> float:
    """Seconds an ingest still waits at `now`: until QUIET after the last event recorded, but no later than
    MAX_DEFER after the first event waiting, and not at all once `backlog` (bytes waiting) reaches MAX_BACKLOG.
    Events arrive while a turn runs and stop when it ends; an ingest (~30 ms of CPU, DuckDB and the GIL)
    started then would land on the cell's last output and its idle message. Readers merge the spool, so
    nothing waits for the ingest."""
    if backlog >= MAX_BACKLOG:
        return 0.0
    return max(0.0, min(last_event + QUIET, pending_since + MAX_DEFER) - now)


class HistoryStore:
    """The history file of this process: `record` is the EventSink; see the module docstring.

    Build it with `HistoryStore.open(path)`, which returns at once. When the file cannot be used, the
    store is unavailable (`available` False, `problem` one line saying why and how to fix it) and
    `record` does nothing; when it is newer than this code, `paused` says so and events stay spooled.
    """

    def __init__(self, path: Path, *, migrations: Path | None = None) -> None:
        self.path = path
        self.problem: str | None = None
        self.paused: str | None = None
        self._error: HistoryError | None = None
        self._paused_error: SchemaTooNewError | None = None
        self.redactor = Redactor()
        self._migrations = migrations
        self._known: tuple[Migration, ...] = ()
        self._recorder = Recorder()
        self._spool: SpoolWriter | None = None
        self._flusher: Flusher | None = None
        self._opened = threading.Event()  # the first open ended: file ready, paused or unusable
        self._flusher_ready = threading.Event()  # the flusher thread has loaded DuckDB (or ended)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._pending = False
        self._last_event = float("-inf")  # time.monotonic() of the last event recorded (quiet: see QUIET)
        self._pending_since = float("-inf")  # when `_pending` last became true (bounds the wait: MAX_DEFER)
        self._full = False  # the backlog reached MAX_BACKLOG since the last ingest (the flusher was woken for it)
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
        """Start recording into the history file; `path` None means `config.history_path()`.

        Returns at once (no DuckDB work here): the file is created or migrated by the flusher thread.
        `migrations` is the folder of migrations this code knows (default: the installed ones). Never
        raises unless `strict`, which waits (up to OPEN_TIMEOUT) for the file to be opened and raises
        its problem, a SchemaTooNewError included; otherwise an unusable file gives an unavailable
        store with `problem` set (and one WARNING on the `synapse_nb.history` logger).
        """
        # Absolute now: a notebook's %cd must not move the file under a running store.
        resolved = (Path(path).expanduser() if path is not None else history_path()).absolute()
        store = cls(resolved, migrations=migrations)
        try:
            try:
                store._start(fsync=fsync)
            except OSError as exc:
                raise HistoryError(describe_error(resolved, exc), path=str(resolved)) from exc
        except HistoryError as exc:
            store._set_problem(exc)
            store._opened.set()
            if strict:
                raise
            return store
        if strict:
            store.wait_open(OPEN_TIMEOUT)
            error = store._error or store._paused_error
            if error is not None:
                store._discard()
                raise error
        return store

    def _start(self, *, fsync: bool) -> None:
        path = self.path
        if path.is_dir():
            raise HistoryError(f"history file {path} is a directory: set SYNAPSE_DB to a file path", path=str(path))
        self._known = load_migrations(self._migrations)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._spool = SpoolWriter(spool_dir(path), self._known[-1].version, fsync=fsync)
        self._thread = threading.Thread(target=self._run, name=f"synapse-history-flusher:{path.name}", daemon=True)
        self._thread.start()
        ref = weakref.ref(self)

        def _close_at_exit() -> None:
            store = ref()
            if store is not None:
                store.close(timeout=2.0)

        self._atexit = _close_at_exit
        atexit.register(_close_at_exit)

    def wait_open(self, timeout: float | None = None) -> bool:
        """Wait until the file is opened (or found unusable or too new); False if still busy at `timeout`."""
        return self._opened.wait(timeout)

    def _set_problem(self, error: HistoryError) -> None:
        if self.problem is None:
            self._error = error
            self.problem = str(error)
            logger.warning("history is not recorded: %s", self.problem)

    def _pause(self, error: SchemaTooNewError) -> None:
        if self.paused is None:
            self._paused_error = error
            self.paused = (
                f"events are not written to history file {self.path}: it has schema version {error.file_version}, "
                f"newer than the {error.known_version} this synapse_nb knows; they are kept in "
                f"{spool_dir(self.path)} and added when a newer synapse_nb opens the file (upgrade synapse_nb)"
            )
            logger.warning("history is paused: %s", self.paused)

    def _fail_open(self, error: HistoryError) -> None:
        """The file cannot be used at all: nothing was recorded, so our spool goes (nothing half written)."""
        self._set_problem(error)
        self._drop_spool()

    def _drop_spool(self) -> None:
        spool = self._spool
        if spool is None:
            return
        spool.close(seal=False)
        spool.path.unlink(missing_ok=True)
        if spool.made_directory:
            try:
                spool.directory.rmdir()  # only if empty: other processes' spools stay
            except OSError:
                pass

    def _discard(self) -> None:
        """Undo a strict open that raised: stop the flusher and remove the (empty) spool."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(OPEN_TIMEOUT)
        self._drop_spool()
        self._unregister()

    def _unregister(self) -> None:
        if self._atexit is not None:
            atexit.unregister(self._atexit)
            self._atexit = None

    # ---- public state --------------------------------------------------------------------------

    @property
    def available(self) -> bool:
        """True while events are being recorded (into the spool; see `paused` for whether they reach the file)."""
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
        if not self.available:
            state = f"unavailable: {self.problem or 'closed'}"
        else:
            state = f"paused: {self.paused}" if self.paused else "available"
        return f"<HistoryStore {self.path} ({state})>"

    # ---- recording -----------------------------------------------------------------------------

    def record(self, event: Event) -> None:
        """Write `event` to the spool; when this returns it survives a SIGKILL. Never raises, never waits.

        Only the spool is touched here (no DuckDB, no lock the flusher holds while ingesting).
        """
        spool = self._spool
        if spool is None or spool.closed or self.problem is not None:
            return
        now = self._last_event = time.monotonic()  # every event, text deltas too: a turn is running
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
            self._pending_since = now
            self._wake.set()
        elif not self._full and spool.size - self._ingested >= MAX_BACKLOG:
            self._full = True  # once per backlog: the flusher stops waiting for a quiet moment
            self._wake.set()

    def _line(self, relation: str, row: dict[str, object]) -> bytes:
        # Redacting the serialised line covers every nested value in one pass over the text.
        try:
            text = _ENCODER.encode({"t": relation, "r": row})
        except (TypeError, ValueError):  # NaN, odd keys: walk the row into JSON-safe values first
            text = json.dumps({"t": relation, "r": self.redactor.redact(row)}, ensure_ascii=False)
        return self.redactor.redact_text(text).encode("utf-8", "replace") + b"\n"

    # ---- ingesting (the flusher thread) ----------------------------------------------------------

    def _run(self) -> None:
        try:
            from .flusher import Flusher  # imports DuckDB: on this thread, never on the caller's

            flusher = Flusher(self.path, spool_dir(self.path), self._known)
            flusher.remove_placeholder()
            self._flusher = flusher
            self._flusher_ready.set()
            self._loop()
        except Exception:  # the thread's wrapper: say it, and let close() and readers carry on
            logger.exception("the history flusher of %s stopped; events stay in the spool", self.path)
        finally:
            self._flusher_ready.set()
            self._opened.set()

    def _loop(self) -> None:
        # The open: create or migrate the file, and ingest whatever is already spooled, at once.
        last = 0.0
        if not self._attempt():
            self._wake.set()
        last = time.monotonic()
        next_scan = 0.0  # scan at once: a dead process may have left a spool
        while not self._stop.is_set() and self.problem is None and self.paused is None:
            woke = self._wake.wait(timeout=max(0.0, next_scan - time.monotonic()))
            if self._stop.is_set():
                return
            if woke:
                self._wake.clear()
                wait = max(BATCH_DELAY, MIN_INTERVAL - (time.monotonic() - last), self._backoff())
                if self._stop.wait(wait):
                    return
                while (rest := self._quiet_wait(time.monotonic())) > 0:
                    self._wake.wait(rest)  # set by close() and by record() once the backlog is full
                    self._wake.clear()
                    if self._stop.is_set():
                        return
            now = time.monotonic()
            scan = now >= next_scan
            if scan:
                next_scan = now + SCAN_INTERVAL
            if self._due(now, woke=woke, scan=scan):
                ok = self._attempt()
                last = time.monotonic()
                if not ok and not self._stop.is_set():
                    self._wake.set()  # retry, after the backoff above

    def _due(self, now: float, *, woke: bool, scan: bool) -> bool:
        """Whether the flusher ingests now. Woken by an event: only if something is still pending (a `flush()`
        may have taken it meanwhile, and an ingest of nothing still opens the file: tens of ms of CPU). On a
        scan: our own spool only once quiet (see `quiet_wait`), and spools that dead processes left."""
        if woke and (self._pending or self._own_pending()):
            return True
        if not scan:
            return False
        if self._own_pending() and self._quiet_wait(now) == 0:
            return True
        return self._others_pending()

    def _quiet_wait(self, now: float) -> float:
        return quiet_wait(now, self._last_event, self._pending_since, self.pending_bytes)

    def _attempt(self) -> bool:
        if self.problem is not None or self.paused is not None:
            return True
        return self._ingest_now(deadline=time.monotonic() + ATTEMPT_TIMEOUT, stop=self._stop.is_set)

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
        spools = list_spools(spool_dir(self.path), self._known[-1].version)
        return any(s.name != own and is_abandoned(s.path) for s in spools)

    def _ingest_now(self, *, deadline: float, stop: Callable[[], bool] | None = None) -> bool:
        """Ingest everything pending; False if it did not happen (busy past `deadline`, `stop()`, paused...)."""
        # One ingest at a time per store (flusher, flush(), close()): they share the bookkeeping.
        if not self._ingest_lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            return False
        try:
            return self._ingest_locked(deadline, stop)
        finally:
            self._ingest_lock.release()

    def _ingest_locked(self, deadline: float, stop: Callable[[], bool] | None) -> bool:
        spool, flusher = self._spool, self._flusher
        if spool is None or flusher is None or self.problem is not None or self.paused is not None:
            return False
        from .db import HistoryLockTimeout  # already loaded by the flusher thread: no DuckDB import here
        from .flusher import IngestFailed

        self._pending = self._full = False
        try:
            done = flusher.run(deadline=deadline, stop=stop, finished=self._finished)
        except HistoryLockTimeout:
            self._pending = True
            self._busy += 1
            return False
        except SchemaTooNewError as exc:  # a newer synapse_nb migrated the file: keep spooling, write nothing
            self._pause(exc)
            self._opened.set()
            return False
        except IngestFailed as exc:
            self._pending = True
            if stop is not None and stop():  # close() interrupted it: nothing failed, and nothing retries here
                logger.info("history ingest into %s stopped by close; what is left stays in %s for the next open",
                            self.path, spool_dir(self.path))
                return False
            self._failures += 1
            if self._failures == 1:
                logger.warning("history ingest into %s failed, will retry: %s", self.path, exc)
            return False
        except HistoryError as exc:
            if self._opened.is_set():
                self._set_problem(exc)
            else:
                self._fail_open(exc)
            self._opened.set()
            return False
        own = done.offsets.get(spool.name)
        if own is not None:
            self._ingested = own
        self._finished.difference_update(done.deleted)
        if done.more:  # the attempt's time ran out with a backlog left: the flusher carries on soon
            self._pending = True
            self._wake.set()
        self._failures = self._busy = 0
        self._ingested_event.set()
        self._opened.set()
        if not spool.closed and spool.size >= ROTATE_BYTES and self._ingested >= spool.size:
            self._finished.add(spool.rotate())
            self._ingested = 0
        return True

    def flush(self, timeout: float = 10.0) -> None:
        """Ingest everything recorded so far into the DuckDB file now (reads never need this).

        If the file stays locked by other programs for `timeout` seconds, returns anyway: the events
        stay in the spool, readers still see them, and the flusher keeps trying. Paused or unusable:
        returns at once.
        """
        if self._spool is None or self.problem is not None or self.paused is not None:
            return
        deadline = time.monotonic() + timeout
        self._flusher_ready.wait(timeout)
        if not self._ingest_now(deadline=deadline) and self.problem is None and self.paused is None:
            logger.info("history flush into %s timed out after %.1f s; events stay in the spool", self.path, timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Stop the flusher, ingest what is left (up to `timeout` s) and remove this process's spool.

        A flusher still ingesting after `timeout` is interrupted (its batch rolled back) and what is left stays in
        the sealed spool, which the next store to open the file ingests: no thread is left inside DuckDB.

        A paused store seals its spool and leaves it for a newer synapse_nb to ingest.
        """
        spool = self._spool
        if spool is None or spool.closed:
            return
        deadline = time.monotonic() + timeout
        self._stop.set()
        self._wake.set()
        late = False
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
            if self._thread.is_alive() and self._flusher is not None:  # still ingesting: not left inside DuckDB
                late = True
                until = time.monotonic() + INTERRUPT_TIMEOUT
                while self._thread.is_alive() and time.monotonic() < until:
                    self._flusher.interrupt()  # again until it leaves: one that lands between two statements is lost
                    self._thread.join(INTERRUPT_POLL)
        name = spool.name
        spool.close()
        self._finished.add(name)
        if self.problem is None and self.paused is None and not late:
            self._ingest_now(deadline=deadline)
        self._unregister()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ---- reading -------------------------------------------------------------------------------

    def history(self) -> History:
        """A reader over this store's file (complete: includes events not yet ingested); one per store.

        Waits (up to OPEN_TIMEOUT) for the background open first, so a file found unusable raises here.
        """
        self._opened.wait(OPEN_TIMEOUT)
        if self._error is not None:
            raise self._error
        if self._reader is None:
            from .reader import History

            self._reader = History(self.path, migrations=self._migrations)
        return self._reader
