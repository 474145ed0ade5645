"""A pytest plugin that sees every child process a test starts, so `make quick` can keep its promise.

Every way this suite starts a process ends in one of a few standard-library calls: `subprocess.Popen`
(which `subprocess.run`, asyncio's and anyio's subprocesses, jupyter_client's kernels, the `mcp` SDK's
stdio client and Playwright's browser all use), `os.fork`, `os.posix_spawn[p]`, `os.system`, and
multiprocessing's `spawnv_passfds`. The plugin wraps them and attributes each start to the test running
at that moment (from any thread).

- `--forbid-spawn` (what `make quick` passes): a start raises `SpawnForbidden` and, because library code
  may swallow that error, the test is also reported failed, naming what it tried to start and the marker
  that would have kept it out of the quick run.
- `--spawn-report=FILE`: nothing is refused; the ids of the tests that started a process are written to
  FILE with what they started (this is how the markers were found).
"""

from __future__ import annotations

import multiprocessing.util
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

SPAWN_MARKERS = ("process", "kernel", "browser", "node")
QUICK_DESELECT = " or ".join((*SPAWN_MARKERS, "slow"))
"""What `make quick` leaves out: the tests that start a process, and the in-process ones marked slow."""


class SpawnForbidden(RuntimeError):
    """Raised where a quick-run test starts a process."""


def _describe(args: Any) -> str:
    if isinstance(args, (list, tuple)):
        words = [os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else str(a) for a in args]
        return " ".join(words)[:200]
    return str(args)[:200]


def _probing_libraries() -> bool:
    """Whether the start comes from `ctypes.util.find_library` (it runs `ldconfig -p` to find a shared
    library, once, for whatever library asks first): the test's own code runs in-process all the same."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.endswith(os.path.join("ctypes", "util.py")):
            return True
        frame = frame.f_back
    return False


class SpawnGuard:
    """Wraps the process-starting calls while installed, and records which test made each start."""

    def __init__(self, *, forbid: bool) -> None:
        self.forbid = forbid
        self.current: str | None = None
        self.seen: dict[str, list[str]] = {}
        self._new: list[str] = []
        self._lock = threading.Lock()
        self._undo: list[Callable[[], None]] = []

    def _started(self, what: str) -> None:
        if _probing_libraries():
            return
        who = self.current or "<outside any test>"
        with self._lock:
            self.seen.setdefault(who, []).append(what)
            self._new.append(what)
        if self.forbid and self.current is not None:  # pytest-xdist's own workers start outside any test
            raise SpawnForbidden(
                f"this test started a process ({what}); mark it with one of "
                f"{', '.join('@pytest.mark.' + m for m in SPAWN_MARKERS)} (or use a fixture that does)"
            )

    def take_new(self) -> list[str]:
        """The starts recorded since the last call (one test phase)."""
        with self._lock:
            new, self._new = self._new, []
        return new

    def _wrap(self, owner: Any, name: str, describe: Callable[..., str]) -> None:
        original = getattr(owner, name)
        guard = self

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            guard._started(describe(*args, **kwargs))
            return original(*args, **kwargs)

        wrapper.__wrapped__ = original  # type: ignore[attr-defined]
        setattr(owner, name, wrapper)
        self._undo.append(lambda: setattr(owner, name, original))

    def install(self) -> None:
        def popen(_self: Any, args: Any, *rest: Any, **kw: Any) -> str:
            return f"subprocess: {_describe(args)}"

        self._wrap(subprocess.Popen, "__init__", popen)
        self._wrap(os, "fork", lambda *a, **k: "os.fork()")
        for name in ("posix_spawn", "posix_spawnp"):
            if hasattr(os, name):
                self._wrap(os, name, lambda path, argv, *a, **k: f"os.posix_spawn: {_describe(argv)}")
        self._wrap(os, "system", lambda cmd, *a, **k: f"os.system: {cmd}")
        self._wrap(multiprocessing.util, "spawnv_passfds", lambda path, args, *a, **k: f"spawn: {_describe(args)}")

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, Any, None]:
        self.current = item.nodeid
        self.take_new()
        try:
            yield
        finally:
            self.current = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
        outcome = yield
        report = outcome.get_result()
        new = self.take_new()
        if self.forbid and new:
            said = (
                f"{item.nodeid} started {len(new)} process(es) during {call.when} under --forbid-spawn: "
                f"{new[0]}\nmark it with one of {', '.join('@pytest.mark.' + m for m in SPAWN_MARKERS)}"
            )
            # A test that failed anyway (the refused start broke it) still says why, after its own failure.
            report.longrepr = f"{report.longrepr}\n\n{said}" if report.failed else said
            report.outcome = "failed"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("spawn guard")
    group.addoption(
        "--forbid-spawn", action="store_true", help="fail any test that starts a process (make quick)"
    )
    group.addoption("--spawn-report", metavar="FILE", help="write the tests that start a process to FILE")


_GUARD_KEY = pytest.StashKey[SpawnGuard]()


def pytest_configure(config: pytest.Config) -> None:
    forbid = bool(config.getoption("--forbid-spawn"))
    if not forbid and not config.getoption("--spawn-report"):
        return
    guard = SpawnGuard(forbid=forbid)
    guard.install()
    config.stash[_GUARD_KEY] = guard
    config.pluginmanager.register(guard, "spawn-guard")


def pytest_unconfigure(config: pytest.Config) -> None:
    guard = config.stash.get(_GUARD_KEY, None)
    if guard is None:
        return
    guard.uninstall()
    report = config.getoption("--spawn-report")
    if report:
        lines = [f"{test}\t{len(starts)}\t{starts[0]}" for test, starts in sorted(guard.seen.items())]
        Path(report).write_text("\n".join(lines) + "\n")

