"""Stdio server processes: stderr through a pipe into a bounded ring buffer, finding the pid, killing the tree.

The SDK's stdio client hands the child the `errlog` file's descriptor. Under Jupyter `sys.stderr`
has no usable `fileno()`, and server output must not land in cells anyway, so every server process
gets its own pipe: the child writes to it, a daemon thread reads it into a `StderrRing`, and the
end of the pipe tells us that the process (and every child holding its stderr) has gone.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

import psutil

from .exit_status import exit_code, spawned

__all__ = ["ProcessRef", "StderrPipe", "StderrRing", "final_tail", "find_child", "kill_tree"]

logger = logging.getLogger("synapse_nb.mcp")

_READ_SIZE = 65536


class StderrRing:
    """The last lines a server wrote to stderr, from its start to its end: at most `max_lines` lines of at most
    `max_line` characters. `clean` (e.g. failure.Scrubber: the server's env and header values masked) is
    applied to each line as it arrives, so no secret is ever kept."""

    def __init__(self, max_lines: int = 200, max_line: int = 2000, clean: Callable[[str], str] | None = None) -> None:
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._max_line = max_line
        self._clean = clean
        self._lock = threading.Lock()
        self._count = 0

    def append(self, line: str) -> None:
        if self._clean is not None:
            line = self._clean(line)
        if len(line) > self._max_line:
            line = line[: self._max_line] + " [...]"
        with self._lock:
            self._lines.append(line)
            self._count += 1

    @property
    def count(self) -> int:
        """How many lines were ever appended (the ring keeps only the last ones)."""
        return self._count

    def lines(self, n: int | None = None) -> list[str]:
        """The last `n` lines kept (all when None), oldest first."""
        with self._lock:
            kept = list(self._lines)
        return kept if n is None else kept[-n:] if n > 0 else []

    def tail(self, max_chars: int = 4000) -> str:
        """The most recent lines, joined, no longer than about `max_chars`."""
        with self._lock:
            lines = list(self._lines)
        out: list[str] = []
        size = 0
        for line in reversed(lines):
            size += len(line) + 1
            if size > max_chars and out:
                break
            out.append(line)
        return "\n".join(reversed(out))


class StderrPipe:
    """One process's stderr: a pipe whose write end goes to the child, read by a daemon thread.

    Call `close_writer()` once the child has been spawned (or failed to be); from then on the
    thread sees end-of-file exactly when the child and its descendants are gone, and calls `on_eof`
    (from the thread).
    """

    def __init__(self, ring: StderrRing, name: str, on_eof: Callable[[], None] | None = None) -> None:
        read_fd, write_fd = os.pipe()
        self.inode = os.fstat(write_fd).st_ino
        self._writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._ring = ring
        self._on_eof = on_eof
        self._eof = threading.Event()
        self._thread = threading.Thread(
            target=self._pump, args=(read_fd,), name=f"synapse-mcp-stderr-{name}", daemon=True
        )
        self._thread.start()

    @property
    def errlog(self) -> TextIO:
        """The file to give the SDK's stdio client; it has a real file descriptor."""
        return self._writer

    def exit_code(self) -> int | None:
        """How the process spawned on this pipe ended (exit_status.py); None while it runs or when unknown."""
        return exit_code(self._writer)

    def spawned(self) -> bool:
        """Whether the SDK's spawn of a process on this pipe was seen (its exit code will then be known)."""
        return spawned(self._writer)

    def close_writer(self) -> None:
        """Drop our copy of the write end (idempotent)."""
        with contextlib.suppress(OSError):
            self._writer.close()

    def wait_eof(self, timeout: float) -> bool:
        """Block until the reader saw end-of-file (all writers closed); False on timeout."""
        return self._eof.wait(timeout)

    def _pump(self, fd: int) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        partial = ""
        try:
            while True:
                try:
                    chunk = os.read(fd, _READ_SIZE)
                except OSError:
                    break
                if not chunk:
                    break
                lines = (partial + decoder.decode(chunk)).split("\n")
                partial = lines.pop()
                for line in lines:
                    self._ring.append(line.rstrip("\r"))
                if len(partial) > 10 * _READ_SIZE:  # a server writing one endless line still gets bounded
                    self._ring.append(partial)
                    partial = ""
            partial += decoder.decode(b"", final=True)
            if partial:
                self._ring.append(partial)
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
            self._eof.set()
            if self._on_eof is not None:
                self._on_eof()


@dataclass(frozen=True, slots=True)
class ProcessRef:
    """A server process we started: pid plus its start time, so a reused pid is never killed."""

    pid: int
    create_time: float

    def alive(self) -> bool:
        try:
            proc = psutil.Process(self.pid)
            return bool(proc.create_time() == self.create_time and proc.status() != psutil.STATUS_ZOMBIE)
        except psutil.Error:
            return False


def find_child(stderr_inode: int, spawned_after: float) -> ProcessRef | None:
    """The direct child process whose stderr is our pipe (Linux: matched by the pipe's inode).

    Elsewhere, the only child started after `spawned_after` that no other server claimed; None when
    that is ambiguous.
    """
    try:
        children = psutil.Process().children()
    except psutil.Error:
        return None
    if sys.platform.startswith("linux"):
        for child in children:
            try:
                if os.stat(f"/proc/{child.pid}/fd/2").st_ino == stderr_inode:
                    return ProcessRef(child.pid, child.create_time())
            except (OSError, psutil.Error):
                continue
        return None
    recent = []
    for child in children:
        with contextlib.suppress(psutil.Error):
            if child.create_time() >= spawned_after - 1.0:
                recent.append(ProcessRef(child.pid, child.create_time()))
    return recent[0] if len(recent) == 1 else None


def kill_tree(ref: ProcessRef, grace: float = 0.5) -> None:
    """Terminate the server's process group (it leads its own session), then kill what is left."""
    if not ref.alive():
        return
    try:
        procs = [psutil.Process(ref.pid), *psutil.Process(ref.pid).children(recursive=True)]
    except psutil.Error:
        procs = []
    group_ok = False
    with contextlib.suppress(OSError):
        group_ok = os.getpgid(ref.pid) == ref.pid
    if group_ok and hasattr(os, "killpg"):
        with contextlib.suppress(OSError):
            os.killpg(ref.pid, signal.SIGTERM)
    else:
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                proc.terminate()
    alive = _wait_gone(procs, grace)
    if alive:
        logger.warning("MCP server process %d did not stop on SIGTERM; killing it", ref.pid)
        if group_ok and hasattr(os, "killpg"):
            with contextlib.suppress(OSError):
                os.killpg(ref.pid, signal.SIGKILL)
        for proc in alive:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        _wait_gone(alive, grace)


def _wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Poll until the processes are gone or zombies. Never waitpid(): asyncio's child watcher reaps them."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [p for p in procs if _running(p)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.02)


def _running(proc: psutil.Process) -> bool:
    try:
        return bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


async def final_tail(pipe: StderrPipe | None, ring: StderrRing) -> str:
    """The stderr tail once the failed process's pipe has drained (waits at most a second)."""
    if pipe is not None:
        pipe.close_writer()
        await asyncio.to_thread(pipe.wait_eof, 1.0)
    return ring.tail(2000)
