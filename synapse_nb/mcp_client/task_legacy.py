"""The experimental tasks of the MCP 2025-11-25 revision (SEP-1686), as server-everything and other servers on
the TypeScript SDK v1 serve them: `tools/call` with a `task` field, then `tasks/get`, `tasks/result`,
`tasks/cancel`, `tasks/list`.

A task waiting for input (`input_required`) asks its question as an ordinary server request (an elicitation,
a sampling request) delivered while the client waits on `tasks/result`; the connection's own callbacks answer
it (handlers.py), exactly as for a question asked during a plain call.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import mcp.types as mt
from mcp import Client, MCPError
from mcp.client.session import ClientSession
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER

from ..errors import McpError, TaskError
from ..task_state import TaskForm, TaskState
from ..types import ToolSpec
from .task_run import Poll, TaskCall, lost_or
from .task_wire import legacy_state

__all__ = ["LegacyOps", "create", "list_tasks", "serves_tasks", "wants_task"]


def serves_tasks(client: Client) -> bool:
    """The server takes task-augmented `tools/call` (capability `tasks.requests.tools.call`, 2025-11-25)."""
    tasks = client.server_capabilities.tasks
    return tasks is not None and tasks.requests is not None and tasks.requests.tools is not None \
        and tasks.requests.tools.call is not None


def wants_task(client: Client, spec: ToolSpec) -> bool:
    """Call this tool as a task: the server serves tasks and the tool says `taskSupport` required or optional."""
    return spec.task_support in ("required", "optional") and serves_tasks(client)


async def create(client: Client, tool: str, arguments: dict[str, Any], *, server: str) -> TaskState:
    """Call `tool` as a task; the server answers at once with the task it created.

    The SDK (mcp 2.3) validates every 2025-11-25 `tools/call` answer as a CallToolResult and so rejects the
    CreateTaskResult this revision specifies (python-sdk PR #3161, open); this one request therefore goes out
    through the session's dispatcher (the SDK's own JSON-RPC layer) and its answer is validated here as the
    SDK's `CreateTaskResult`. Every other task request is a typed `send_request`.
    """
    session = client.session
    request = mt.CallToolRequest(params=mt.CallToolRequestParams(
        name=tool, arguments=arguments, task=mt.TaskMetadata()))
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    # No public path in mcp 2.3 (checked): `send_request` and `call_tool` validate a `tools/call` answer against
    # the negotiated revision's result table (`mcp_types.methods.validate_server_result`: CallToolResult only
    # on 2025-11-25), ClientSession has no public raw send, and result claims (`allow_claimed`) are active on
    # 2026-07-28 connections only. Hence the private dispatcher, guarded, for this one request.
    dispatcher = getattr(session, "_dispatcher", None)
    if dispatcher is None:
        raise McpError("this version of the mcp SDK has no dispatcher to send a 2025-11-25 task call through",
                       server=server)
    raw = await dispatcher.send_raw_request(
        data["method"], data["params"],
        {"headers": {MCP_PROTOCOL_VERSION_HEADER: client.protocol_version or "2025-11-25"}})
    created = mt.CreateTaskResult.model_validate(raw)
    return legacy_state(created.task, server, tool)


async def list_tasks(client: Client, server: str) -> list[TaskState]:
    """The server's tasks (`tasks/list`, every page); tool names are not part of the answer (empty)."""
    found: list[TaskState] = []
    cursor: str | None = None
    while True:
        page = await client.session.send_request(
            mt.ListTasksRequest(params=mt.PaginatedRequestParams(cursor=cursor)), mt.ListTasksResult)
        found += [legacy_state(t, server, "") for t in page.tasks]
        cursor = page.next_cursor
        if not cursor:
            return found


class LegacyOps:
    """How the 2025-11-25 form polls, answers, finishes and cancels one task on one session."""

    form: TaskForm = "2025-11-25"

    def __init__(self, session: ClientSession, call: TaskCall) -> None:
        self._session = session
        self._call = call
        self._result: asyncio.Task[mt.CallToolResult] | None = None

    async def poll(self, task_id: str) -> Poll:
        try:
            task = await self._session.send_request(
                mt.GetTaskRequest(params=mt.GetTaskRequestParams(task_id=task_id)), mt.GetTaskResult)
        except MCPError as exc:
            raise lost_or(exc, self._call.server, task_id) from exc
        return self.noticed(task)

    def noticed(self, params: mt.Task) -> Poll:
        """A look at the task from a `tasks/get` answer or a `notifications/tasks/status` (both carry the task)."""
        question = params.status_message if params.status == "input_required" else None
        return Poll(legacy_state(params, self._call.server, self._call.tool, question))

    async def answer(self, poll: Poll) -> None:
        """The question comes with `tasks/result`: wait on it in the background (the callbacks answer), poll on."""
        self._fetch(poll.state.task_id)

    async def finish(self, poll: Poll) -> mt.CallToolResult:
        state = poll.state
        if state.status == "cancelled":
            raise TaskError(f"task {state.task_id} of {state.server}.{state.tool} was cancelled",
                            server=state.server, task_id=state.task_id, status="cancelled")
        try:
            result = await self._fetch(state.task_id)
        except MCPError as exc:
            raise TaskError(f"task {state.task_id} of {state.server}.{state.tool} failed: {exc.error.message}",
                            server=state.server, task_id=state.task_id, status=state.status) from exc
        if state.status == "failed" and not result.is_error:
            raise TaskError(f"task {state.task_id} of {state.server}.{state.tool} failed: "
                            f"{state.status_message or 'no reason given'}",
                            server=state.server, task_id=state.task_id, status="failed")
        return result

    async def cancel(self, task_id: str) -> None:
        try:
            await self._session.send_request(
                mt.CancelTaskRequest(params=mt.CancelTaskRequestParams(task_id=task_id)), mt.CancelTaskResult)
        except MCPError as exc:
            raise lost_or(exc, self._call.server, task_id) from exc

    async def aclose(self) -> None:
        result = self._result
        if result is not None and not result.done():
            result.cancel()
            with contextlib.suppress(BaseException):
                await result

    def _fetch(self, task_id: str) -> asyncio.Task[mt.CallToolResult]:
        if self._result is None:
            self._result = asyncio.ensure_future(self._session.send_request(
                mt.GetTaskPayloadRequest(params=mt.GetTaskPayloadRequestParams(task_id=task_id)),
                mt.CallToolResult))
        return self._result
