"""What is known of one MCP task (a tool call the server runs in the background) at one moment."""

from __future__ import annotations

import datetime as _dt
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal

__all__ = ["TASK_ORIGIN", "TERMINAL", "TaskForm", "TaskOrigin", "TaskState", "TaskStatus"]

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
"""The five states of a task in both forms; the last three are terminal."""

TaskForm = Literal["2025-11-25", "2026-07-28"]
"""Which tasks the server speaks: the experimental tasks of the 2025-11-25 revision (`tools/call` with a `task`
field, `tasks/get|result|list|cancel`), or the `io.modelcontextprotocol/tasks` extension on 2026-07-28
connections (`resultType: "task"`, `tasks/get|update|cancel`)."""

TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskState:
    """One observation of a task: its status and message, as the server last told them.

    `server` is the server's config name, `tool` the name the server knows; `created_at` and `updated_at` are
    the server's own timestamps (naive UTC), so a task's duration is the task's, whoever watched it and when.
    `poll_interval_ms` is how often the server asks to be polled; `question` the message of the input the task
    waits for (`input_required`), when it asks one.
    """

    task_id: str
    server: str
    tool: str
    form: TaskForm
    status: TaskStatus
    status_message: str | None = None
    created_at: _dt.datetime | None = None
    updated_at: _dt.datetime | None = None
    poll_interval_ms: int | None = None
    ttl_ms: int | None = None
    question: str | None = None

    @property
    def terminal(self) -> bool:
        """The task will not change again (completed, failed or cancelled)."""
        return self.status in TERMINAL

    @property
    def duration_ms(self) -> float | None:
        """From the task's creation to its last update, by the server's clock; None when it did not say."""
        if self.created_at is None or self.updated_at is None:
            return None
        return max((self.updated_at - self.created_at).total_seconds() * 1000, 0.0)


@dataclass(frozen=True, slots=True)
class TaskOrigin:
    """Who is calling a tool now: the session, the tool call (its id in the history) and the cell."""

    session_id: str | None = None
    tool_call_id: str | None = None
    cell: str | None = None


TASK_ORIGIN: ContextVar[TaskOrigin | None] = ContextVar("synapse_task_origin", default=None)
"""The origin of the tool call running in this asyncio task (the agent sets it around each call, the notebook
the cell around a turn): a call the server runs as an MCP task records it as the task's, so the task's row links
to its tool call and session."""
