"""Helpers for tests that run servers on 127.0.0.1: a free port, waiting until one listens, stopping one."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released) for a server the test starts next,
    or to stand for a server that is down."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def refusing_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections while the block runs (bound and held, never listened on):
    a server that is down. A port bound and released may be handed to the next socket that asks for one, e.g.
    a kernel's ZMQ channels started right after, and requests meant to be refused then reach that socket and
    hang (seen once: a provider's POST sent to a kernel's shell channel)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


def wait_listening(proc: subprocess.Popen[bytes], port: int, timeout: float) -> bool:
    """Wait until something accepts connections on 127.0.0.1:`port`; False if `proc` ended or `timeout`
    seconds passed first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.05)


def stop(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Ask `proc` to end (SIGTERM) so it can clean up; kill it if it has not ended within `timeout` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
