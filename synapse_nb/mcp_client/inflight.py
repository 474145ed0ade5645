"""Requests in flight on one server session: the task each one runs in, its deadline, and how it ends.

The SDK call of a request runs in the caller's own task (no worker task: handing each call to one and
back cost two event-loop turns, ~5% of a 3 ms tool call). A request ends in one of four ways, and in
each the SDK sends `notifications/cancelled` to the server before the call returns: it finishes; the
caller is cancelled; its deadline passes (deadline.py, the one timeout mechanism of every request:
progress reports push it back, a question to the user holds it); or the connection ends it because the
server stopped or crashed. The hub ends a request (at its deadline, or for the connection) by cancelling
the caller's task, as `asyncio.timeout` does, and turns that cancellation into its error once the SDK call
has unwound; a caller cancelled as well still gets its CancelledError.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp import Client

from ..errors import McpError, ToolCallTimeout
from .asyncwork import wait_through_cancel
from .deadline import Deadline, Deadlines

__all__ = ["DRAIN_TIMEOUT", "OnError", "Request", "Session"]

T = TypeVar("T")
OnError = Callable[[Exception, int, str], McpError]
"""Maps an SDK or transport error of a request (error, session generation, label) to the McpError raised."""

DRAIN_TIMEOUT = 2.0
"""Seconds ended requests get to unwind (the SDK sends notifications/cancelled)."""


class Request:
    """One request: what it is for, its timeout, the task it runs in, and why the hub (not the caller) ended it.

    `timeout` seconds from the last sign of life (`alive()`), never past `max_total` seconds from the
    start; None: no deadline.
    """

    __slots__ = ("deadline", "ended", "finished", "label", "max_total", "running", "server", "task", "timeout")

    def __init__(self, label: str, server: str, timeout: float | None, max_total: float | None = None) -> None:
        self.label = label
        self.server = server
        self.timeout = timeout
        self.max_total = max_total if max_total is not None else (timeout or 0.0)
        self.task: asyncio.Task[Any] | None = None  # the caller's, once it runs
        self.running = False  # its SDK call is under way in `task`
        self.finished: asyncio.Future[None] | None = None  # done once the SDK call has unwound
        self.deadline: Deadline | None = None  # once it runs
        self.ended: McpError | None = None

    def alive(self) -> None:
        """A sign of life from the server (a progress report): the deadline moves back by `timeout`."""
        if self.deadline is not None:
            self.deadline.push()

    def hold(self) -> None:
        """The client itself waits (between two polls of an MCP task): the deadline stops until `alive()`."""
        if self.deadline is not None:
            self.deadline.hold()

    def uncap(self) -> None:
        """The request became an MCP task: `timeout` still bounds each wait for the server, `max_total` no more."""
        if self.deadline is not None:
            self.deadline.uncap()

    def expire(self) -> None:
        """Its deadline passed: end it with ToolCallTimeout."""
        self.end(self.timed_out())

    def end(self, error: McpError) -> None:
        """Cancel the SDK call (the SDK then sends notifications/cancelled); the caller gets `error`."""
        if self.ended is None and self.running and self.task is not None:
            self.ended = error
            self.task.cancel()

    def timed_out(self) -> ToolCallTimeout:
        return ToolCallTimeout(
            f"{self.label} on MCP server {self.server!r} did not finish within {self.timeout:g} s; it was cancelled",
            server=self.server, timeout=self.timeout or 0.0,
        )


class Session:
    """What one generation's owner task shares with the requests' callers: the client and the requests in flight.

    `deadlines` are the connection's (a question to the user holds them all); `on_error` maps a
    request's SDK or transport error.
    """

    __slots__ = ("client", "deadlines", "gen", "on_error", "requests", "stop")

    def __init__(self, client: Client, gen: int, deadlines: Deadlines, on_error: OnError) -> None:
        self.client = client
        self.gen = gen
        self.deadlines = deadlines
        self.on_error = on_error
        self.requests: set[Request] = set()
        self.stop = asyncio.Event()

    async def run(self, req: Request, fn: Callable[[Client], Awaitable[T]]) -> T:
        """Run `fn(client)` in the caller's task under `req`'s deadline."""
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("an MCP request must be awaited in an asyncio task")
        req.task = task
        req.finished = task.get_loop().create_future()
        self.requests.add(req)
        try:
            return await self._work(req, fn, task)
        finally:
            self.requests.discard(req)
            req.finished.set_result(None)

    async def _work(self, req: Request, fn: Callable[[Client], Awaitable[T]], task: asyncio.Task[Any]) -> T:
        before = task.cancelling()
        req.running = True
        try:
            with self.deadlines.track(req.timeout, req.max_total, req.expire) as deadline:
                req.deadline = deadline
                return await fn(self.client)
        except asyncio.CancelledError:
            if req.ended is None:
                raise  # the caller was cancelled
            task.uncancel()  # the hub's own cancellation (Request.end)
            if task.cancelling() > before:
                raise  # the caller was cancelled as well: it gets its CancelledError
            raise req.ended from None
        except McpError:
            raise  # ours already (a task that failed, was lost or detached: task_run.py)
        except Exception as exc:  # the boundary for SDK and transport errors of one request
            raise self.on_error(exc, self.gen, req.label) from exc
        finally:
            req.running = False

    async def end_all(self, interrupted: Callable[[str], McpError]) -> None:
        """End every request still running (the server stopped or crashed) and wait for each to unwind."""
        requests = list(self.requests)
        for req in requests:
            req.end(interrupted(req.label))
        unwinding = {req.finished for req in requests if req.finished is not None and not req.finished.done()}
        if unwinding:
            await wait_through_cancel(unwinding, DRAIN_TIMEOUT)
