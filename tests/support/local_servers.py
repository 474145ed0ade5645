"""Helpers for tests that run servers on 127.0.0.1: a free port, waiting until one listens, stopping one.

A wait for a process to start is bounded by the CPU time the process has used, not by the clock: a start
that takes 13 s of CPU answers after 15 s on an idle machine and after 100 s beside a build on 2 cores, so a
bound in seconds of the clock is a bet on how busy the machine is. A bound in CPU seconds (several times what
the start needs) still fails a server that spins or hangs, whatever else runs; a wall bound stays as the
last resort against a process that sleeps for ever.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Callable, Iterator

import psutil

LAST_RESORT = 900.0  # seconds of the clock a start may take at most, however little CPU it used


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


def cpu_seconds(proc: subprocess.Popen[bytes]) -> float:
    """CPU time `proc` and the processes under it have used so far (what they have used of it once they ended)."""
    try:
        top = psutil.Process(proc.pid)
        processes = [top, *top.children(recursive=True)]
    except psutil.Error:
        return float("inf") if proc.poll() is not None else 0.0
    total = 0.0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    return total


def wait_started(proc: subprocess.Popen[bytes], ready: Callable[[], bool], cpu: float,
                 last_resort: float = LAST_RESORT) -> bool:
    """Poll `ready()` until it is true; False once `proc` has ended, or has used `cpu` seconds of CPU without
    being ready, or after `last_resort` seconds (see the module docstring)."""
    deadline = time.monotonic() + last_resort
    while not ready():
        if proc.poll() is not None or cpu_seconds(proc) > cpu or time.monotonic() > deadline:
            return ready()
        time.sleep(0.05)
    return True


def listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:`port`."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def wait_listening(proc: subprocess.Popen[bytes], port: int, cpu: float) -> bool:
    """Wait until something accepts connections on 127.0.0.1:`port`; False if `proc` ended, or used `cpu`
    seconds of CPU without listening (see `wait_started`)."""
    return wait_started(proc, lambda: listening(port), cpu)


def stop(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Ask `proc` to end (SIGTERM) so it can clean up; kill it if it has not ended within `timeout` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
