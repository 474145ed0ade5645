"""Per-process spool files next to the history file: append-only JSON lines, one write per event.

Layout: `<db>.spool/<host>-<pid>-<random>.v<schema>.jsonl`. The owning process holds an exclusive
`flock` on its file for as long as it writes to it; a file whose lock can be taken has no writer
(its process ended, crashed or rotated away), so whoever ingests next may finish and delete it. The
lock is taken before the file gets its final name (created under a temporary name, then renamed), so
no one ever sees an unlocked file that is still about to be written.
"""

from __future__ import annotations

import errno
import os
import re
import socket
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock; spool files then count as live forever
    fcntl = None  # type: ignore[assignment]

__all__ = ["SpoolFile", "SpoolWriter", "is_abandoned", "list_spools", "read_complete", "spool_dir"]

_NAME = re.compile(r"^(?P<host>[A-Za-z0-9_.-]+)-(?P<pid>\d+)-(?P<uid>[0-9a-f]{12})\.v(?P<version>\d+)\.jsonl$")


def spool_dir(db_path: Path) -> Path:
    """The spool folder of a history file: `<db>.spool` beside it."""
    return db_path.with_name(db_path.name + ".spool")


@dataclass(frozen=True, slots=True)
class SpoolFile:
    """One spool file found in the folder."""

    name: str
    path: Path
    version: int


def list_spools(directory: Path, max_version: int) -> list[SpoolFile]:
    """Spool files written with a schema this code knows (newer ones are left for newer code), by name."""
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    found: list[SpoolFile] = []
    for name in names:
        m = _NAME.match(name)
        if m and int(m["version"]) <= max_version:
            found.append(SpoolFile(name, directory / name, int(m["version"])))
    return found


def read_complete(path: Path, start: int, max_bytes: int) -> tuple[bytes, int]:
    """Complete lines from `start`: about `max_bytes` of them (more if one line is longer), and the file size."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size <= start or max_bytes <= 0:
                return b"", size
            f.seek(start)
            data = f.read(min(size - start, max_bytes))
            while b"\n" not in data and start + len(data) < size:  # one line longer than max_bytes
                more = f.read(min(size - start - len(data), max_bytes))
                if not more:
                    break
                data += more
    except FileNotFoundError:
        return b"", start
    end = data.rfind(b"\n")
    return (data[: end + 1] if end >= 0 else b""), size


def is_abandoned(path: Path) -> bool:
    """True when no process holds the file's writer lock (so it will never grow again)."""
    if fcntl is None:  # pragma: no cover
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    finally:
        os.close(fd)  # closing our own descriptor drops only our lock, never the owner's
    return True


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname())[:64] or "host"


class SpoolWriter:
    """This process's spool file: `write` appends one complete line in one `os.write`. Thread-safe."""

    def __init__(self, directory: Path, version: int, *, fsync: bool = False) -> None:
        self.directory = directory
        self.version = version
        self.fsync = fsync
        self._lock = threading.Lock()
        self._fd = -1
        self._size = 0
        self.name = ""
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._open_new()

    def _open_new(self) -> None:
        name = f"{_host()}-{os.getpid()}-{uuid.uuid4().hex[:12]}.v{self.version}.jsonl"
        tmp = self.directory / f".{name}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.rename(tmp, self.directory / name)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        self._fd, self._size, self.name = fd, 0, name

    @property
    def path(self) -> Path:
        return self.directory / self.name

    @property
    def size(self) -> int:
        """Bytes written to the current file."""
        return self._size

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def write(self, line: bytes) -> bool:
        """Append one line (ending in a newline); False if the spool is closed.

        When this returns True the bytes are in the OS page cache (on disk too with `fsync`).
        """
        with self._lock:
            if self._fd < 0:
                return False
            view = memoryview(line)
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
            if self.fsync:
                os.fdatasync(self._fd)
            self._size += len(line)
            return True

    def rotate(self) -> str:
        """Start a new file; the old one (returned by name) is unlocked, to be finished and deleted."""
        with self._lock:
            old, old_fd = self.name, self._fd
            self._open_new()
            if old_fd >= 0:
                os.close(old_fd)
            return old

    def close(self) -> None:
        """Stop writing and drop the lock; the file stays until it is fully ingested."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
