"""Opening the DuckDB history file: lock-conflict retries with backoff, and one-line problems for the rest.

DuckDB lets one process hold a file; every other open (read-only too) fails at once with a lock
error. So every open here is brief and retried with jittered exponential backoff, and within one
process all opens of one file are serialised by `file_lock` (DuckDB refuses a second instance of the
same file in a process instead of waiting for it).
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import duckdb

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from ..errors import HistoryError
from .problem import FIX, describe_error

__all__ = [
    "FIX",
    "QUIET",
    "HistoryLockTimeout",
    "describe_error",
    "file_lock",
    "is_lock_conflict",
    "opened",
    "remove_empty_placeholder",
    "retry_locked",
    "run",
]

T = TypeVar("T")

QUIET = "SET enable_progress_bar = false"
"""DuckDB prints a progress bar to stdout for a query over 2 s (ingesting a 50,000-row result): in the user's cell.
(A connection setting: DuckDB refuses it in `connect(config=...)` as a global option.)"""

# One lock per history file for this whole process. This is process-wide state by nature (it guards a
# process-wide resource, DuckDB's file lock), so it is a module-level registry, not extension state.
_LOCKS: dict[str, threading.RLock] = {}
_LOCKS_GUARD = threading.Lock()

_CONFLICT_MARKERS = (
    "could not set lock",
    "conflicting lock",
    "unique file handle conflict",
    "different configuration than existing connections",
)


class HistoryLockTimeout(HistoryError):
    """Another program held the history file for longer than the caller was willing to wait."""


def run(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> list[tuple[Any, ...]]:
    """Execute and fetch everything: duckdb 2.0 refuses new work while a result is unfinished."""
    return con.execute(sql, params).fetchall()


def file_lock(path: Path) -> threading.RLock:
    """The in-process lock for `path` (shared by the store's flusher and every reader)."""
    key = os.path.realpath(path)
    with _LOCKS_GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
            lock = _LOCKS[key] = threading.RLock()
        return lock


def is_lock_conflict(exc: BaseException) -> bool:
    """True for DuckDB's "another process/instance holds this file" errors (worth retrying)."""
    text = str(exc).lower()
    return isinstance(exc, duckdb.Error) and any(m in text for m in _CONFLICT_MARKERS)


def retry_locked(
    attempt: Callable[[], T],
    path: Path | str,
    *,
    deadline: float | None = None,
    stop: Callable[[], bool] | None = None,
    lock: threading.RLock | None = None,
) -> T:
    """Run `attempt` (an open or ATTACH of `path`), retrying lock conflicts with jittered backoff.

    With `lock`, each attempt runs holding it and a successful one returns still holding it (the
    caller releases it); it is never held while backing off, so a process's other users of the file
    are not stuck behind a retry. Gives up with HistoryLockTimeout at `deadline` (monotonic) or when
    `stop()` is true; any other error propagates unchanged (with `lock` released).
    """
    delay = 0.005
    while True:
        if lock is not None:
            lock.acquire()
        try:
            return attempt()
        except BaseException as exc:
            if lock is not None:
                lock.release()
            if not is_lock_conflict(exc):
                raise
            now = time.monotonic()
            if (deadline is not None and now >= deadline) or (stop is not None and stop()):
                raise HistoryLockTimeout(
                    f"history file {path} stayed locked by another program ({str(exc).splitlines()[0]}): "
                    "close the program holding it, then try again",
                    path=str(path),
                ) from exc
        pause = delay * random.uniform(0.5, 1.5)
        if deadline is not None:
            pause = min(pause, max(0.0, deadline - time.monotonic()))
        time.sleep(pause)  # backoff between lock attempts; not synchronisation of our own threads
        delay = min(delay * 2, 0.1)  # a failed attempt is cheap; long pauses let others starve us


@contextlib.contextmanager
def opened(
    path: Path,
    *,
    read_only: bool = False,
    deadline: float | None = None,
    stop: Callable[[], bool] | None = None,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """`connect` holding the in-process file lock while connected; closes (releasing the file) on exit."""
    lock = file_lock(path)
    con = retry_locked(
        lambda: duckdb.connect(str(path), read_only=read_only), path, deadline=deadline, stop=stop, lock=lock
    )
    try:
        con.execute(QUIET)
        yield con
    finally:
        try:
            con.close()
        finally:
            lock.release()


def remove_empty_placeholder(path: Path) -> None:
    """Delete `path` if it is an empty file no process holds (e.g. from mkstemp); DuckDB refuses 0-byte files.

    Call under `file_lock(path)`: closing our descriptor drops every POSIX lock this process has on
    the file, which must not include a DuckDB connection's.
    """
    if fcntl is None:  # pragma: no cover
        return
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return
    try:
        if os.fstat(fd).st_size != 0:
            return
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # DuckDB holds this lock while it has the file
        except OSError:
            return
        if os.fstat(fd).st_size == 0:
            path.unlink()
    finally:
        os.close(fd)
