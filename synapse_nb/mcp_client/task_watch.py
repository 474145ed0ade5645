"""TaskWatch: what a caller sees of one MCP task call, and its hand on it (cancel, detach)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from ..protocols import ProgressCallback
from ..task_state import TaskOrigin, TaskState

__all__ = ["OnTaskStatus", "TaskWatch", "status_text"]

logger = logging.getLogger("synapse_nb.mcp")

OnTaskStatus = Callable[[TaskState], None]
"""on_status(state): a task's status, status message or question changed; called on the event loop, must be quick."""


class TaskWatch:
    """One task call seen from the caller's side: pass it to `McpHub.call(..., task=watch)`.

    `on_status` sees every change (status, status message, the question of an `input_required` task);
    `state` is the latest. `cancel()` asks the server to cancel the task (the call then ends with TaskError,
    or with the result when the task finished first); `detach()` stops waiting and leaves the task running
    (the call raises TaskDetachedError naming the task). When the caller is cancelled (an interrupt), the task
    is cancelled on the server too, unless `detach_on_interrupt`, which leaves it running.
    `session_id`, `cell` and `tool_call_id` say who started it; they go into the history with the task.
    """

    def __init__(
        self, on_status: OnTaskStatus | None = None, *, detach_on_interrupt: bool = False,
        session_id: str | None = None, cell: str | None = None, tool_call_id: str | None = None,
    ) -> None:
        self.on_status = on_status
        self.detach_on_interrupt = detach_on_interrupt
        self.session_id = session_id
        self.cell = cell
        self.tool_call_id = tool_call_id
        self.state: TaskState | None = None
        self.cancel_requested = False
        self.detach_requested = False
        self.notified = 0  # how many looks at the task came from the server's status notifications, not polls
        self._wake = asyncio.Event()
        self._pushed: tuple[Any, TaskState] | None = None

    @classmethod
    def for_origin(cls, origin: TaskOrigin, on_progress: ProgressCallback | None) -> TaskWatch:
        """The watch of an agent's tool call: the task is the turn's (session, tool call, cell), and its status
        changes reach the turn's display as the call's progress (`task ID · working · message`)."""
        seen = 0

        def report(state: TaskState) -> None:
            nonlocal seen
            seen += 1
            if on_progress is not None:
                on_progress(seen, None, status_text(state))

        return cls(report, session_id=origin.session_id, tool_call_id=origin.tool_call_id, cell=origin.cell)

    @property
    def task_id(self) -> str | None:
        """The server's id of the task, once it created one."""
        return self.state.task_id if self.state is not None else None

    def cancel(self) -> None:
        """Ask the server to cancel the task (sent at once if the task exists, else as soon as it does)."""
        self.cancel_requested = True
        self._wake.set()

    def detach(self) -> None:
        """Stop waiting for the task and leave it running on the server."""
        self.detach_requested = True
        self._wake.set()

    def observe(self, state: TaskState) -> bool:
        """Take a new observation; True (and `on_status` told) when something a person sees changed."""
        old = self.state
        self.state = state
        if old is not None and (old.status, old.status_message, old.question) == (
                state.status, state.status_message, state.question):
            return False
        if self.on_status is not None:
            try:
                self.on_status(state)
            except Exception:  # a display callback must not end the task's call
                logger.exception("the status callback of task %s failed", state.task_id)
        return True

    def push(self, poll: Any, state: TaskState) -> None:
        """A status notification told the task's `state` (`poll`: what the loop takes instead of polling): the
        waiting loop wakes and uses it."""
        self._pushed = (poll, state)
        self._wake.set()

    def take_pushed(self) -> Any:
        """The look a notification pushed since the last call (counted in `notified`), or None; one older than
        what was seen already is dropped (notifications may be dispatched out of wire order, a poll may have
        seen further meanwhile)."""
        pushed, self._pushed = self._pushed, None
        if pushed is None:
            return None
        poll, state = pushed
        seen = self.state
        if seen is not None and seen.updated_at is not None and state.updated_at is not None \
                and state.updated_at < seen.updated_at:
            return None
        self.notified += 1
        return poll

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` before the next poll, or less when woken (cancel, detach, a notification pushed)."""
        try:
            await asyncio.wait_for(self._wake.wait(), timeout=max(seconds, 0.0))
        except TimeoutError:
            pass
        self._wake.clear()


def status_text(task: TaskState) -> str:
    """`task 3f2a… · working · Analyzing content...`, and what it asks while it waits for input."""
    parts = [f"task {task.task_id}", task.status.replace("_", " ")]
    if task.status_message:
        parts.append(task.status_message)
    if task.status == "input_required" and task.question and task.question != task.status_message:
        parts.append(f"asks: {task.question}")
    return " · ".join(parts)
