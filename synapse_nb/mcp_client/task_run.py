"""The life of one MCP task seen from the client: poll at the server's interval, answer its questions, fetch
its result, cancel it; the same loop for both forms (task_legacy.py, task_extension.py say how each asks).

A task runs inside the request of the tool call that created it (or of the resume that found it again), so
the connection's one deadline mechanism bounds it: each answer of the server is a sign of life that pushes
the deadline back, a question to the user holds it, and there is no cap on the task's whole life. An
interrupt cancels the task on the server (`tasks/cancel`, sent even while the caller unwinds) unless the
watch says to leave it running, or the interrupt came from the kernel's restart or shutdown (synapse_nb/departure.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import anyio
import mcp.types as mt
from mcp import MCPError

from ..departure import DEPARTURE
from ..errors import TaskDetachedError, TaskError, TaskLostError
from ..events import TaskCreated, TaskStatusChanged
from ..task_state import TaskForm, TaskState
from .task_watch import TaskWatch

__all__ = ["CANCEL_TIMEOUT", "CURRENT_CALL", "Poll", "TaskCall", "TaskOps", "TaskSink", "drive", "lost_or",
           "record_lost"]

logger = logging.getLogger("synapse_nb.mcp")

CANCEL_TIMEOUT = 2.0
"""Seconds `tasks/cancel` gets when the caller was interrupted (it is sent while the caller unwinds)."""
MIN_POLL = 0.05
"""The shortest wait between two polls, whatever the server asks (a server saying 0 must not spin the loop)."""
DEFAULT_POLL = 1.0
"""The wait between polls when the server names no interval."""

TaskSink = Callable[[TaskCreated | TaskStatusChanged], None]
"""Where a task's creation and status changes go (the hub's event sink)."""


@dataclass(slots=True)
class TaskCall:
    """A task call in progress: which server and tool, its arguments, the caller's watch, and the hooks of its request.

    `alive()` pushes the request's deadline back, `uncap()` lifts its maximum (a task lives as long as it takes),
    `hold()` stops it while the client waits between polls (a server may ask for polls further apart than the
    timeout);
    `sink` records the task's events; `ending()` is true once the
    hub itself ended the request (the server is stopping or crashed): that cancellation leaves the task running.
    """

    server: str
    tool: str
    arguments: Mapping[str, Any]
    watch: TaskWatch
    alive: Callable[[], None]
    sink: TaskSink
    uncap: Callable[[], None] = lambda: None
    hold: Callable[[], None] = lambda: None
    ending: Callable[[], bool] = lambda: False
    created: bool = False
    answered: set[str] = field(default_factory=set)  # input request keys already answered (unique per task)


CURRENT_CALL: ContextVar[TaskCall | None] = ContextVar("synapse_task_call", default=None)
"""The task call of the tool call running in this asyncio task: how the SDK's claim resolver (which gets no
arguments of ours) finds its watch."""


@dataclass(frozen=True, slots=True)
class Poll:
    """One look at a task: its state, and what comes with it (the extension inlines result, error and questions)."""

    state: TaskState
    detail: Any = None


class TaskOps(Protocol):
    """How one form asks the server about a task."""

    form: TaskForm

    async def poll(self, task_id: str) -> Poll: ...
    def noticed(self, params: Any) -> Poll: ...
    async def answer(self, poll: Poll) -> None: ...
    async def finish(self, poll: Poll) -> mt.CallToolResult: ...
    async def cancel(self, task_id: str) -> None: ...
    async def aclose(self) -> None: ...


async def drive(ops: TaskOps, call: TaskCall, first: TaskState) -> mt.CallToolResult:
    """Follow the task `first` describes to its result; raises TaskError (failed, cancelled), TaskLostError (the
    server forgot it), TaskDetachedError (the watch detached), or CancelledError (after cancelling it on the server,
    unless the watch leaves it running on an interrupt)."""
    watch = call.watch
    call.uncap()
    _observe(call, first)
    task_id = first.task_id
    cancel_sent = False
    polls = 0
    state = first
    try:
        while True:
            if watch.detach_requested:
                raise TaskDetachedError(
                    f"left task {task_id} of {call.server}.{call.tool} running on the server", server=call.server,
                    task_id=task_id)
            if watch.cancel_requested and not cancel_sent:
                await ops.cancel(task_id)
                cancel_sent = True
            if polls or state.status != "working":
                # a status notification's look at the task stands in for a poll (no tasks/get after it)
                poll = watch.take_pushed() or await ops.poll(task_id)
                state = poll.state
                call.alive()
                _observe(call, state)
                if state.terminal:
                    return await ops.finish(poll)
                if state.status == "input_required":
                    await ops.answer(poll)
                    call.alive()
            call.hold()
            await watch.sleep(_interval(state, polls))
            call.alive()
            polls += 1
    except asyncio.CancelledError:
        if not watch.detach_on_interrupt and not cancel_sent and not call.ending():
            await _cancel_unwinding(ops, task_id, call)
        raise
    except TaskLostError as exc:
        record_lost(call, task_id, ops.form, exc)
        raise
    finally:
        await ops.aclose()


def record_lost(call: TaskCall, task_id: str, form: TaskForm, exc: TaskLostError) -> None:
    """A task the server no longer knows ends, in the history, as failed (it will not be followed again)."""
    last = call.watch.state
    state = replace(last, status="failed", status_message=str(exc)) if last is not None else TaskState(
        task_id=task_id, server=call.server, tool=call.tool, form=form, status="failed", status_message=str(exc))
    _record(call, TaskStatusChanged(task=state, tool_call_id=call.watch.tool_call_id))


def _interval(state: TaskState, polls: int) -> float:
    """MIN_POLL, doubling each poll up to the interval the server asks for: a quick task is seen quickly, a long
    one is polled at the server's pace (the specification's SHOULD), never faster."""
    asked = state.poll_interval_ms / 1000 if state.poll_interval_ms else DEFAULT_POLL
    ramp: float = MIN_POLL * 2.0 ** min(polls, 16)
    return max(min(ramp, asked), MIN_POLL)


def _observe(call: TaskCall, state: TaskState) -> None:
    """Tell the watch, and record the creation and every change a person would see."""
    first = not call.created
    changed = call.watch.observe(state)
    if first:
        call.created = True
        w = call.watch
        _record(call, TaskCreated(task=state, arguments=dict(call.arguments), session_id=w.session_id,
                                  cell=w.cell, tool_call_id=w.tool_call_id))
    elif changed:
        _record(call, TaskStatusChanged(task=state, tool_call_id=call.watch.tool_call_id))


def _record(call: TaskCall, event: TaskCreated | TaskStatusChanged) -> None:
    try:
        call.sink(event)
    except Exception:  # a sink must not raise (protocols.EventSink); if one does, the task goes on
        logger.exception("event sink failed on a task event")


async def _cancel_unwinding(ops: TaskOps, task_id: str, call: TaskCall) -> None:
    """`tasks/cancel` while the caller is being cancelled: in a task of its own, awaited through a shield, bounded.

    Not when the interrupt only preceded the kernel's restart or shutdown (synapse_nb/departure.py): the task then
    runs on and the next kernel follows it again."""
    with anyio.CancelScope(shield=True):
        try:
            leaving = await DEPARTURE.coming()
        except asyncio.CancelledError:  # interrupted again while waiting: cancel now
            leaving = False
    if leaving:
        logger.info("MCP server %r: the kernel is ending; task %s runs on", call.server, task_id)
        return
    sent = asyncio.ensure_future(ops.cancel(task_id))
    with anyio.CancelScope(shield=True):
        try:
            await asyncio.wait_for(asyncio.shield(sent), CANCEL_TIMEOUT)
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # the caller is cancelled either way; say why the server may go on
            logger.warning("MCP server %r: could not cancel task %s: %s", call.server, task_id, exc)
        else:
            if call.watch.state is not None:
                _record(call, TaskStatusChanged(
                    task=_cancelled(call.watch.state), tool_call_id=call.watch.tool_call_id))
    with contextlib.suppress(BaseException):
        sent.cancel()


def _cancelled(state: TaskState) -> TaskState:
    return replace(state, status="cancelled", status_message="cancelled by the client")


def lost_or(exc: MCPError, server: str, task_id: str) -> Exception:
    """An SDK error of a task request as ours: -32602 means the server no longer knows the task."""
    if exc.code == mt.INVALID_PARAMS:
        return TaskLostError(
            f"MCP server {server!r} no longer knows task {task_id} (expired or forgotten): {exc.error.message}",
            server=server, task_id=task_id, status="unknown")
    return TaskError(f"MCP server {server!r} failed a request about task {task_id}: {exc.error.message}",
                     server=server, task_id=task_id, status="unknown")
