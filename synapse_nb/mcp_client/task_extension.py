"""The `io.modelcontextprotocol/tasks` extension (2026-07-28 connections; SEP-2663, specification
`specification/draft/tasks.md` of modelcontextprotocol/ext-tasks), on the SDK's extension seam.

`TasksExtension` is passed to `mcp.Client(extensions=[...])`: the SDK advertises it in each request's client
capabilities (only on 2026-07-28 connections, where its claim is active), parses a `tools/call` answered with
`resultType: "task"` into `CreatedTask`, and hands it to the claim's resolver, which follows the task to its
result (task_run.drive) inside the same `Client.call_tool`. A task waiting for input lists its questions in
`inputRequests`; each is dispatched through the session's own callbacks (the elicitation forms and sampling
approval of handlers.py), once per key, and the answers go back with `tasks/update`. Status notifications
(`notifications/tasks`, and 2025-11-25's `notifications/tasks/status`) carry the task: the poll loop of their
task wakes and takes what they say instead of its next `tasks/get` (task_run.drive).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mcp.types as mt
from mcp import MCPError
from mcp.client.extension import ClaimContext, ClientExtension, NotificationBinding, ResultClaim
from mcp.client.session import ClientRequestContext, ClientSession
from pydantic import TypeAdapter

from ..errors import TaskError
from ..task_state import TaskForm
from .task_legacy import LegacyOps
from .task_run import CURRENT_CALL, Poll, TaskCall, TaskOps, TaskSink, drive, lost_or
from .task_watch import TaskWatch
from .task_wire import (
    TASKS_EXTENSION,
    CancelTask,
    CreatedTask,
    DetailedTask,
    GetTask,
    TaskIdParams,
    UpdateTask,
    UpdateTaskParams,
    question_of,
    state_of,
)

__all__ = ["ExtensionOps", "TasksExtension"]

_INPUT_REQUEST: TypeAdapter[mt.InputRequest] = TypeAdapter(mt.InputRequest)


class TasksExtension(ClientExtension):
    """The client side of MCP tasks on one connection: the extension's claim, and the watches of its running tasks."""

    identifier = TASKS_EXTENSION

    def __init__(self, server: str, sink: TaskSink) -> None:
        self.server = server
        self.sink = sink
        self.watching: dict[str, _Watched] = {}  # by task id: the ops of each task followed now

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self._resolve)]

    def notifications(self) -> Sequence[NotificationBinding[Any]]:
        return [
            NotificationBinding(method="notifications/tasks", params_type=DetailedTask, handler=self._on_task),
            NotificationBinding(method="notifications/tasks/status", params_type=mt.TaskStatusNotificationParams,
                                handler=self._on_legacy_status),
        ]

    def ops(self, form: TaskForm, session: ClientSession, call: TaskCall, task_id: str | None = None) -> TaskOps:
        """The requests of `form` for one task call; the task's notifications reach its watch meanwhile (from
        the start when `task_id` is given: the task is followed now; else from its first poll)."""
        inner: TaskOps = ExtensionOps(session, call) if form == "2026-07-28" else LegacyOps(session, call)
        watched = _Watched(inner, self, call.watch)
        if task_id is not None:
            watched.track(task_id)
        return watched

    async def _resolve(self, created: CreatedTask, ctx: ClaimContext) -> mt.CallToolResult:
        call = CURRENT_CALL.get()
        if call is None:  # a call_tool that did not come through the hub: follow it all the same, unwatched
            call = TaskCall(server=self.server, tool=ctx.tool_name, arguments={}, watch=TaskWatch(),
                            alive=lambda: None, sink=self.sink)
        ops = self.ops("2026-07-28", ctx.session, call, created.task_id)
        return await drive(ops, call, state_of(created, self.server, call.tool))

    async def _on_task(self, params: DetailedTask) -> None:
        self._notice(params.task_id, params)

    async def _on_legacy_status(self, params: mt.TaskStatusNotificationParams) -> None:
        self._notice(params.task_id, params)

    def _notice(self, task_id: str, params: Any) -> None:
        """A status notification of a task followed now: its poll loop takes it instead of its next poll."""
        watched = self.watching.get(task_id)
        if watched is not None:
            watched.noticed(params)


class _Watched:
    """A form's ops that register the task's watch for notifications from its first poll until it ends."""

    def __init__(self, inner: TaskOps, extension: TasksExtension, watch: TaskWatch) -> None:
        self.form = inner.form
        self._inner = inner
        self._extension = extension
        self._watch = watch
        self._task_id: str | None = None

    def track(self, task_id: str) -> None:
        """Take the notifications of `task_id` from now on (until aclose), unless a follower of it takes them."""
        if self._task_id is None:
            self._task_id = task_id
            self._extension.watching.setdefault(task_id, self)

    async def poll(self, task_id: str) -> Poll:
        self.track(task_id)
        return await self._inner.poll(task_id)

    def noticed(self, params: Any) -> Poll:
        """Hand a notification of this task to its watch (for the loop to take instead of polling)."""
        poll = self._inner.noticed(params)
        self._watch.push(poll, poll.state)
        return poll

    async def answer(self, poll: Poll) -> None:
        await self._inner.answer(poll)

    async def finish(self, poll: Poll) -> mt.CallToolResult:
        return await self._inner.finish(poll)

    async def cancel(self, task_id: str) -> None:
        await self._inner.cancel(task_id)

    async def aclose(self) -> None:
        if self._task_id is not None and self._extension.watching.get(self._task_id) is self:
            del self._extension.watching[self._task_id]
        await self._inner.aclose()


class ExtensionOps:
    """How the extension polls (`tasks/get`), answers (`tasks/update`), finishes and cancels one task."""

    form: TaskForm = "2026-07-28"

    def __init__(self, session: ClientSession, call: TaskCall) -> None:
        self._session = session
        self._call = call

    async def poll(self, task_id: str) -> Poll:
        try:
            task = await self._session.send_request(GetTask(params=TaskIdParams(task_id=task_id)), DetailedTask)
        except MCPError as exc:
            raise lost_or(exc, self._call.server, task_id) from exc
        return self.noticed(task)

    def noticed(self, params: DetailedTask) -> Poll:
        """A look at the task from a `tasks/get` answer or a `notifications/tasks` (the same detailed task: status,
        and by it the result, the error or the open questions)."""
        open_questions = {k: v for k, v in (params.input_requests or {}).items() if k not in self._call.answered}
        question = question_of(open_questions) if params.status == "input_required" else None
        return Poll(state_of(params, self._call.server, self._call.tool, question), params)

    async def answer(self, poll: Poll) -> None:
        """Each question not answered yet goes through the session's callbacks; the answers go back together."""
        task: DetailedTask = poll.detail
        responses: dict[str, Any] = {}
        for key, raw in (task.input_requests or {}).items():
            if key in self._call.answered:
                continue  # keys are unique for the task's life: a question seen again on a later poll is the same
            request = _INPUT_REQUEST.validate_python(raw)
            ctx = ClientRequestContext(session=self._session, request_id=f"task-{task.task_id}-{key}")
            answer = await self._session.dispatch_input_request(ctx, request)
            if isinstance(answer, mt.ErrorData):
                raise TaskError(f"task {task.task_id} of {self._call.server}.{self._call.tool} asked a question that "
                                f"was not answered: {answer.message}", server=self._call.server,
                                task_id=task.task_id, status=task.status)
            responses[key] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        if not responses:
            return
        try:
            await self._session.send_request(
                UpdateTask(params=UpdateTaskParams(task_id=task.task_id, input_responses=responses)), mt.Result)
        except MCPError as exc:
            raise lost_or(exc, self._call.server, task.task_id) from exc
        self._call.answered |= set(responses)

    async def finish(self, poll: Poll) -> mt.CallToolResult:
        task: DetailedTask = poll.detail
        where = f"task {task.task_id} of {self._call.server}.{self._call.tool}"
        if task.status == "completed":
            return mt.CallToolResult.model_validate(task.result or {"content": []})
        if task.status == "failed":
            message = (task.error or {}).get("message") or task.status_message or "no reason given"
            raise TaskError(f"{where} failed: {message}", server=self._call.server, task_id=task.task_id,
                            status="failed")
        raise TaskError(f"{where} was cancelled", server=self._call.server, task_id=task.task_id, status="cancelled")

    async def cancel(self, task_id: str) -> None:
        try:
            await self._session.send_request(CancelTask(params=TaskIdParams(task_id=task_id)), mt.Result)
        except MCPError as exc:
            raise lost_or(exc, self._call.server, task_id) from exc

    async def aclose(self) -> None:
        return None
