"""Per-process spool files next to the history file: append-only JSON lines, one write per event.

Layout: `<db>.spool/<host>-<pid>-<random>.v<schema>.jsonl`. The name is the file's identity (ingest
offsets are keyed by it) and says who writes it and with which schema.

Format, and why it is forward-compatible: each line is `{"t": relation, "r": {column: value}}`.
Schema versions only ever add relations and columns (DESIGN.md section 8), so an ingester that knows
version K takes every spool of version <= K and inserts by column name, older lines leaving newer
columns NULL; spools of a version above K are left alone for newer code. A line whose `t` is not a
relation is ignored by every ingester (that is how `SEAL` works). A change to the line format itself
would need a new file suffix, so no older ingester could misread it.

Liveness: a spool is live (someone may still append to it, so nobody else may finish and delete it)
while its owner holds an exclusive `flock` on it; the lock is taken before the file gets its final name
(created under a temporary name, then renamed). `flock` silently succeeds on some NFS/SMB/FUSE homes,
so a file whose lock can be taken is still live when its name's host is this host and its pid is a
running process that started before the file's last write (not a reused pid), unless its last line is
`SEAL`, which a writer appends when it stops writing a file (rotation, close).
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
except ImportError:  # pragma: no cover - Windows: no flock; liveness rests on host and pid
    fcntl = None  # type: ignore[assignment]

__all__ = ["SEAL", "SpoolFile", "SpoolWriter", "is_abandoned", "list_spools", "read_complete", "spool_dir"]

SEAL = b'{"t":"_sealed"}\n'
"""The last line of a spool whose writer stopped writing it (not a relation: ingesters skip it)."""

PID_SLACK = 2.0  # seconds: process start times (from boot time + ticks) are this coarse

# The spool files this process is writing now (absolute paths). Process-wide by nature: on a file
# system where flock is a no-op, this is how a process tells its own live spools (one per store) from
# those an earlier process with the same pid left behind.
_OWN: set[str] = set()
_OWN_GUARD = threading.Lock()

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
    """True when nobody will append to the spool again, so it may be finished and deleted (see above)."""
    m = _NAME.match(path.name)
    same_host = m is not None and m["host"] == _host()
    if same_host and m is not None and int(m["pid"]) == os.getpid():
        # This process's files are known without touching their lock: where flock is emulated with POSIX
        # locks (NFS), closing any descriptor of a file drops every lock this process holds on it.
        with _OWN_GUARD:
            if str(path.absolute()) in _OWN:
                return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    return False
                raise
        st = os.fstat(fd)
        if st.st_size >= len(SEAL):
            os.lseek(fd, st.st_size - len(SEAL), os.SEEK_SET)
            if os.read(fd, len(SEAL)) == SEAL:
                return True
        return not (same_host and m is not None and _pid_wrote(int(m["pid"]), st.st_mtime))
    finally:
        os.close(fd)  # closing our own descriptor drops only our lock, never the owner's


def _pid_wrote(pid: int, last_write: float) -> bool:
    """Whether process `pid` of this host may still be writing a file last written at `last_write`."""
    if pid == os.getpid():
        return False  # not one of ours (checked first): an earlier process with this pid left it
    import psutil

    try:
        started = float(psutil.Process(pid).create_time())
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # e.g. access denied: it exists, so assume it is the writer
        return True
    return started <= last_write + PID_SLACK  # a process started after the last write reused the pid


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
        self.made_directory = not directory.is_dir()  # so a store that must give up can leave no trace
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
        with _OWN_GUARD:
            _OWN.add(str(self.path.absolute()))

    def _seal_and_close(self, *, seal: bool) -> None:
        """Mark the current file as finished (see SEAL) and let go of it; call holding `_lock`."""
        if self._fd < 0:
            return
        fd, self._fd = self._fd, -1
        try:
            if seal:
                os.write(fd, SEAL)  # one short write: a file ends with the whole marker or without it
                if self.fsync:
                    os.fdatasync(fd)
        except OSError:
            pass  # unsealed, it is still finished once this process has exited (see is_abandoned)
        finally:
            os.close(fd)
            with _OWN_GUARD:
                _OWN.discard(str(self.path.absolute()))

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
        """Start a new file; the old one (returned by name) is sealed and unlocked, to be finished and deleted."""
        with self._lock:
            old = self.name
            self._seal_and_close(seal=True)
            self._open_new()
            return old

    def close(self, *, seal: bool = True) -> None:
        """Stop writing: seal the file and drop the lock; the file stays until it is fully ingested."""
        with self._lock:
            self._seal_and_close(seal=seal)
