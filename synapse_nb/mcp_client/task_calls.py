"""Tool calls that run as MCP tasks, and the requests about a task by its id (follow, look at, cancel, list).

Each function runs as one request of a server's connection (inflight.py), with the SDK client of that moment
and the connection's TasksExtension; it returns synapse values, never SDK types.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable

from mcp import Client, MCPError

from ..errors import TaskLostError
from ..task_state import TaskForm, TaskState
from ..types import ToolResult
from . import task_legacy
from .convert import tool_result
from .features import is_modern
from .task_extension import TasksExtension
from .task_run import CURRENT_CALL, TaskCall, drive, lost_or, record_lost
from .task_wire import TASKS_EXTENSION

__all__ = ["cancel", "follow", "form_of", "list_tasks", "look", "run_as_task", "serves_tasks", "with_task_call"]


def form_of(client: Client) -> TaskForm:
    """The tasks this connection speaks: the extension on 2026-07-28, the experimental tasks before."""
    return "2026-07-28" if is_modern(client) else "2025-11-25"


def serves_tasks(client: Client) -> bool:
    """The server runs tool calls as tasks in the form of this connection."""
    if form_of(client) == "2026-07-28":
        extensions = client.server_capabilities.extensions or {}
        return TASKS_EXTENSION in extensions
    return task_legacy.serves_tasks(client)


async def with_task_call(call: TaskCall, run: Awaitable[ToolResult]) -> ToolResult:
    """Await `run` (a plain `Client.call_tool` underneath) with `call` as this task's task call: a 2026-07-28 server
    that answers with a task is followed by the extension's resolver, which finds the watch here."""
    token = CURRENT_CALL.set(call)
    try:
        return await run
    finally:
        CURRENT_CALL.reset(token)


async def run_as_task(client: Client, tasks: TasksExtension, call: TaskCall) -> ToolResult:
    """Call the tool as a 2025-11-25 task and follow it to its result (the duration is the whole task's)."""
    started = time.perf_counter()
    first = await task_legacy.create(client, call.tool, dict(call.arguments), server=call.server)
    result = await drive(tasks.ops("2025-11-25", client.session, call, first.task_id), call, first)
    return tool_result(result, (time.perf_counter() - started) * 1000)


async def follow(client: Client, call: TaskCall, *, tasks: TasksExtension, task_id: str) -> ToolResult:
    """Follow a task known by its id (one started before a kernel restart) to its result; the duration is the
    task's own, by the server's clock (created to last update)."""
    call.created = True  # recorded when it was created
    form = form_of(client)
    ops = tasks.ops(form, client.session, call, task_id)
    try:
        first = (await ops.poll(task_id)).state
    except TaskLostError as exc:
        await ops.aclose()
        record_lost(call, task_id, form, exc)
        raise
    started = time.perf_counter()
    result = await drive(ops, call, first)
    state = call.watch.state
    took = state.duration_ms if state is not None and state.duration_ms is not None else None
    return tool_result(result, took if took is not None else (time.perf_counter() - started) * 1000)


async def look(client: Client, call: TaskCall, *, tasks: TasksExtension, task_id: str) -> TaskState:
    """The task's state now (one `tasks/get`)."""
    ops = tasks.ops(form_of(client), client.session, call)
    try:
        return (await ops.poll(task_id)).state
    finally:
        await ops.aclose()


async def cancel(client: Client, call: TaskCall, *, tasks: TasksExtension, task_id: str) -> None:
    """Ask the server to cancel the task (`tasks/cancel`)."""
    ops = tasks.ops(form_of(client), client.session, call)
    try:
        await ops.cancel(task_id)
    finally:
        await ops.aclose()


async def list_tasks(client: Client, server: str) -> list[TaskState]:
    """The server's tasks (2025-11-25 `tasks/list`); the extension has no list (the client keeps the ids)."""
    if form_of(client) == "2026-07-28":
        return []
    try:
        return await task_legacy.list_tasks(client, server)
    except MCPError as exc:
        raise lost_or(exc, server, "") from exc
