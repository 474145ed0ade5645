"""TaskWatch: what a caller sees of one MCP task call, and its hand on it (cancel, detach)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from ..task_state import TaskState

__all__ = ["OnTaskStatus", "TaskWatch"]

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
        self._wake = asyncio.Event()

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

    def wake(self) -> None:
        """Something happened (a status notification): the waiting poll loop looks again now."""
        self._wake.set()

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` before the next poll, or less when woken (cancel, detach, a notification)."""
        try:
            await asyncio.wait_for(self._wake.wait(), timeout=max(seconds, 0.0))
        except TimeoutError:
            pass
        self._wake.clear()
