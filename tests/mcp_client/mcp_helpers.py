"""Helpers for the MCP client tests: demo server arguments, an in-process gate server, an event recorder to
wait on, polling helpers."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio

from synapse_nb.events import Event, ServerEvent
from tests.support import tools_server
from tests.support.local_servers import free_port, wait_listening

DEMO_ARGS = tools_server.ARGS


def demo_stdio() -> dict[str, object]:
    """Keyword arguments for `hub.connect(name, **demo_stdio())`."""
    return {"command": sys.executable, "args": list(DEMO_ARGS)}


class Gate:
    """A real SDK server in this process (for `hub.connect_in_process`) whose `wait` tool counts the calls
    that started, finished and were cancelled on the server side, so a test can wait for them."""

    def __init__(self, name: str = "gate") -> None:
        from mcp.server.mcpserver import MCPServer

        self.started = 0
        self.finished = 0
        self.cancelled = 0
        self.server = MCPServer(name)

        @self.server.tool(structured_output=False)
        async def wait(seconds: float) -> str:
            """Wait that many seconds."""
            self.started += 1
            try:
                await anyio.sleep(seconds)
            except anyio.get_cancelled_exc_class():
                self.cancelled += 1
                raise
            self.finished += 1
            return f"waited {seconds:g} s"


class Events:
    """An EventSink that keeps the server events and lets a test wait for one."""

    def __init__(self) -> None:
        self.items: list[ServerEvent] = []
        self._changed: asyncio.Event | None = None

    def __call__(self, event: Event) -> None:
        assert isinstance(event, ServerEvent)
        self.items.append(event)
        if self._changed is not None:
            self._changed.set()

    def names(self, server: str | None = None) -> list[str]:
        return [e.event for e in self.items if server is None or e.server == server]

    async def wait_for(self, event: str, server: str | None = None, *, count: int = 1, timeout: float = 10.0) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while self.names(server).count(event) < count:
            self._changed = asyncio.Event()
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                raise AssertionError(f"no {event!r} event from {server!r} within {timeout} s; got {self.names()}")
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except TimeoutError:
                continue


async def wait_until(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Poll a condition under a deadline (for state held outside this process, e.g. a server's stderr)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not become true within {timeout} s")
        await asyncio.sleep(0.02)


def is_gone(pid: int) -> bool:
    """No live (non-zombie) process has that pid."""
    import psutil

    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    """True once the process is gone (blocking: for sync tests, or once the hub is closed)."""
    deadline = time.monotonic() + timeout
    while not is_gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


async def gone(pid: int, timeout: float = 10.0) -> bool:
    """`wait_gone` that lets the event loop run meanwhile (the hub may still be cleaning up)."""
    deadline = time.monotonic() + timeout
    while not is_gone(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True



@dataclass
class WebServer:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")


def start_web(kind: str, log: Path) -> Iterator[WebServer]:
    port = free_port()
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, *DEMO_ARGS, f"--{kind}", "--host", "127.0.0.1", "--port", str(port)],
            stdout=subprocess.DEVNULL, stderr=sink,
        )
    try:
        if not wait_listening(proc, port, cpu=20):
            raise RuntimeError(f"the demo server did not listen on port {port}")
        yield WebServer(f"http://127.0.0.1:{port}/{'mcp' if kind == 'http' else 'sse'}", proc, log)
    finally:
        proc.kill()
        proc.wait(10)


