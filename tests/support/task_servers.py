"""The MCP servers that serve tasks in the tests, and a sink for the task events the hub emits.

- server-everything (npm, pinned by the Makefile) serves the experimental tasks of 2025-11-25, over stdio
  and streamable HTTP (`node dist/index.js streamableHttp`, port from $PORT, path /mcp).
- tests/support/tasks_server.py on FastMCP + fastmcp-tasks (PyPI, the venv .tools/taskservers made by the
  Makefile) serves the `io.modelcontextprotocol/tasks` extension of 2026-07-28, over stdio and HTTP.

A server that is missing means the setup is broken: the test fails naming the make target, it never skips.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from synapse_nb.events import Event, TaskCreated, TaskStatusChanged
from tests.support.local_servers import free_port, stop, wait_listening
from tests.support.npm_servers import EVERYTHING, TOOLS, node_for

if TYPE_CHECKING:
    from synapse_nb.mcp_client.hub import McpHub

TASKS_SERVER = Path(__file__).resolve().parent / "tasks_server.py"
TASKS_PYTHON = TOOLS / "taskservers" / "bin" / "python"
RESEARCH = "everything__simulate-research-query"
"""server-everything's task tool (taskSupport required; `ambiguous: true` asks a form half way)."""


def tasks_python() -> str:
    """The tool venv's Python that runs the fastmcp-tasks server; missing: fail with the fix."""
    if not TASKS_PYTHON.is_file():
        pytest.fail(f"fastmcp-tasks is not installed at {TASKS_PYTHON.parents[1]}: run `make tools`")
    return str(TASKS_PYTHON)


def everything_stdio() -> dict[str, object]:
    """Connect arguments for server-everything over stdio."""
    return {"command": node_for(EVERYTHING), "args": [str(EVERYTHING), "stdio"]}


async def connect_everything(hub: McpHub, timeout: float, name: str = "everything", **how: object) -> None:
    """Connect server-everything and wait for its second tool list: it adds its task tool only once initialised
    (and says so with list_changed)."""
    await hub.connect(name, **how)  # type: ignore[arg-type]
    tool = RESEARCH.replace("everything__", f"{name}__", 1)
    deadline = asyncio.get_running_loop().time() + timeout
    while tool not in {t.name for t in hub.all_tools}:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{name} did not list its task tool within {timeout} s")
        await asyncio.sleep(0.02)


def tasks_stdio() -> dict[str, object]:
    """Connect arguments for the fastmcp-tasks server over stdio."""
    return {"command": tasks_python(), "args": [str(TASKS_SERVER), "stdio"]}


@contextlib.contextmanager
def tasks_http(log: Path) -> Iterator[str]:
    """The fastmcp-tasks server over streamable HTTP on 127.0.0.1; yields its URL."""
    port = free_port()
    with _serving([tasks_python(), str(TASKS_SERVER), "http", str(port)], port, log, None) as url:
        yield url


@contextlib.contextmanager
def everything_http(log: Path) -> Iterator[str]:
    """server-everything over streamable HTTP on 127.0.0.1; yields its URL."""
    port = free_port()
    node = node_for(EVERYTHING)
    with _serving([node, str(EVERYTHING), "streamableHttp"], port, log, {"PORT": str(port)}) as url:
        yield url


@contextlib.contextmanager
def _serving(argv: list[str], port: int, log: Path, env: dict[str, str] | None) -> Iterator[str]:
    with log.open("wb") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT,
                                env={**os.environ, **env} if env else None)
    try:
        if not wait_listening(proc, port, cpu=30):
            raise AssertionError(f"{argv[1]} did not listen on {port}: {log.read_text(errors='replace')[-2000:]}")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc, 5)


class TaskEvents:
    """An EventSink that keeps the task events (and ignores server events) and lets a test wait for one."""

    def __init__(self) -> None:
        self.created: list[TaskCreated] = []
        self.changed: list[TaskStatusChanged] = []
        self._seen: asyncio.Event | None = None

    def __call__(self, event: Event) -> None:
        if isinstance(event, TaskCreated):
            self.created.append(event)
        elif isinstance(event, TaskStatusChanged):
            self.changed.append(event)
        if self._seen is not None:
            self._seen.set()

    def statuses(self, task_id: str) -> list[str]:
        return [e.task.status for e in self.changed if e.task.task_id == task_id]
