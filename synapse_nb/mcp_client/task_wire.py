"""The wire shapes of MCP tasks in both forms, as typed SDK requests and results (no hand-written JSON-RPC).

The 2025-11-25 form uses the SDK's own types (`mcp_types.GetTaskRequest`, `CreateTaskResult`, ...). The
`io.modelcontextprotocol/tasks` extension (2026-07-28; specification `specification/draft/tasks.md` of
modelcontextprotocol/ext-tasks) has no types in the SDK, so they are declared here on the SDK's bases:
requests go out through `ClientSession.send_request`, which stamps each with the protocol version and the
client's capabilities, and sets the `Mcp-Name: <taskId>` routing header from `name_param` on streamable HTTP.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, ClassVar, Literal

import mcp.types as mt
from pydantic import Field

from ..task_state import TaskForm, TaskState, TaskStatus

__all__ = [
    "TASKS_EXTENSION",
    "CancelTask",
    "CreatedTask",
    "DetailedTask",
    "GetTask",
    "TaskIdParams",
    "UpdateTask",
    "UpdateTaskParams",
    "legacy_state",
    "parse_time",
    "question_of",
    "state_of",
]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""The extension's identifier, advertised in the client's capabilities and seen in the server's."""


class _TaskFields(mt.Result):
    """The task fields every extension task result carries (camelCase on the wire, by the SDK's alias generator)."""

    task_id: str
    status: TaskStatus
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    status_message: str | None = None
    poll_interval_ms: int | None = None


class CreatedTask(_TaskFields):
    """A `tools/call` answered with a task (`resultType: "task"`): the claim the extension resolves."""

    result_type: Literal["task"]


class DetailedTask(_TaskFields):
    """A `tasks/get` answer or a `notifications/tasks` payload: the task, and by its status the result (completed),
    the JSON-RPC error (failed) or the open questions (input_required)."""

    result_type: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = Field(default=None)


class TaskIdParams(mt.RequestParams):
    task_id: str


class UpdateTaskParams(mt.RequestParams):
    task_id: str
    input_responses: dict[str, Any]


class GetTask(mt.Request[TaskIdParams, Literal["tasks/get"]]):
    """`tasks/get` of the extension."""

    name_param: ClassVar[str | None] = "taskId"
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams


class UpdateTask(mt.Request[UpdateTaskParams, Literal["tasks/update"]]):
    """`tasks/update`: answers to a task's `inputRequests`."""

    name_param: ClassVar[str | None] = "taskId"
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateTaskParams


class CancelTask(mt.Request[TaskIdParams, Literal["tasks/cancel"]]):
    """`tasks/cancel` of the extension (never `notifications/cancelled`, which the specification forbids for tasks)."""

    name_param: ClassVar[str | None] = "taskId"
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams


def parse_time(value: str | None) -> _dt.datetime | None:
    """An ISO 8601 timestamp of the server as naive UTC; None when absent or unreadable."""
    if not value:
        return None
    try:
        parsed = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(_dt.UTC).replace(tzinfo=None)
    return parsed


def state_of(task: _TaskFields, server: str, tool: str, question: str | None = None) -> TaskState:
    """A TaskState from an extension task."""
    return _state(task.task_id, task.status, task.status_message, task.created_at, task.last_updated_at,
                  task.poll_interval_ms, task.ttl_ms, server, tool, "2026-07-28", question)


def legacy_state(task: mt.Task, server: str, tool: str, question: str | None = None) -> TaskState:
    """A TaskState from a 2025-11-25 task."""
    return _state(task.task_id, task.status, task.status_message, task.created_at, task.last_updated_at,
                  task.poll_interval, task.ttl, server, tool, "2025-11-25", question)


def _state(task_id: str, status: TaskStatus, message: str | None, created: str, updated: str,
           poll_ms: int | None, ttl_ms: int | None, server: str, tool: str, form: TaskForm,
           question: str | None) -> TaskState:
    return TaskState(task_id=task_id, server=server, tool=tool, form=form, status=status, status_message=message,
                     created_at=parse_time(created), updated_at=parse_time(updated), poll_interval_ms=poll_ms,
                     ttl_ms=ttl_ms, question=question)


def question_of(input_requests: dict[str, Any] | None) -> str | None:
    """The text a person reads of a task's open questions (each elicitation's message, a sampling request's kind)."""
    if not input_requests:
        return None
    texts = []
    for request in input_requests.values():
        params = request.get("params") if isinstance(request, dict) else None
        message = params.get("message") if isinstance(params, dict) else None
        method = request.get("method") if isinstance(request, dict) else None
        texts.append(str(message) if message else f"a {method or 'request'} of the server")
    return "; ".join(texts)
