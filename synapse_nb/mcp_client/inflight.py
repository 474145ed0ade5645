"""Requests in flight on one server session: each one's worker task, its deadline, and how it ends.

The SDK call of a request runs in a worker task of its own, so that the caller (whatever task or
nested loop it is) only awaits a task. A request ends in one of four ways, and in each the SDK sends
`notifications/cancelled` to the server before the worker ends: it finishes; the caller is cancelled
(asyncio propagates that to the worker); its deadline passes (the worker's anyio cancel scope from
deadline.py, the one timeout mechanism of every request: progress reports push it back, a question
to the user holds it); or the connection ends it because the server stopped or crashed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp import Client

from ..errors import McpError, ToolCallTimeout
from .deadline import Deadline, Deadlines
from .tasks import wait_through_cancel

__all__ = ["DRAIN_TIMEOUT", "OnError", "Request", "Session"]

T = TypeVar("T")
OnError = Callable[[Exception, int, str], McpError]
"""Maps an SDK or transport error of a request (error, session generation, label) to the McpError raised."""

DRAIN_TIMEOUT = 2.0
"""Seconds the workers of ended requests get to finish (the SDK sends notifications/cancelled)."""


class Request:
    """One request: what it is for, its timeout, its worker task, and why the hub (not the caller) ended it.

    `timeout` seconds from the last sign of life (`alive()`), never past `max_total` seconds from the
    start; None: no deadline.
    """

    __slots__ = ("deadline", "ended", "label", "max_total", "server", "task", "timeout")

    def __init__(self, label: str, server: str, timeout: float | None, max_total: float | None = None) -> None:
        self.label = label
        self.server = server
        self.timeout = timeout
        self.max_total = max_total if max_total is not None else (timeout or 0.0)
        self.task: asyncio.Task[Any] | None = None
        self.deadline: Deadline | None = None  # once its worker runs
        self.ended: McpError | None = None

    def alive(self) -> None:
        """A sign of life from the server (a progress report): the deadline moves back by `timeout`."""
        if self.deadline is not None:
            self.deadline.push()

    def end(self, error: McpError) -> None:
        """Cancel the worker (the SDK then sends notifications/cancelled); the caller gets `error`."""
        if self.ended is None and self.task is not None and not self.task.done():
            self.ended = error
            self.task.cancel()

    def timed_out(self) -> ToolCallTimeout:
        return ToolCallTimeout(
            f"{self.label} on MCP server {self.server!r} did not finish within {self.timeout:g} s; it was cancelled",
            server=self.server, timeout=self.timeout or 0.0,
        )


class Session:
    """What one generation's owner task shares with its request workers: the client and the requests in flight.

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
        """Run `fn(client)` in a worker task under `req`'s deadline; the caller awaits the worker."""
        worker = asyncio.get_running_loop().create_task(self._work(req, fn))
        req.task = worker
        self.requests.add(req)
        worker.add_done_callback(lambda _: self.requests.discard(req))
        try:
            return await worker
        except asyncio.CancelledError:
            caller = asyncio.current_task()
            if req.ended is not None and (caller is None or caller.cancelling() == 0):
                raise req.ended from None  # the hub ended the worker before it ran; the caller was not cancelled
            raise

    async def _work(self, req: Request, fn: Callable[[Client], Awaitable[T]]) -> T:
        try:
            with self.deadlines.track(req.timeout, req.max_total) as deadline:
                req.deadline = deadline
                return await fn(self.client)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if req.ended is None or task is None or task.cancelling() > 1:
                raise  # the caller was cancelled (perhaps as well): it gets its CancelledError
            task.uncancel()
            raise req.ended from None
        except Exception as exc:  # the boundary for SDK and transport errors of one request
            raise self.on_error(exc, self.gen, req.label) from exc
        # only reached when the deadline's scope swallowed its own cancellation: the request timed out
        raise req.timed_out()

    async def end_all(self, interrupted: Callable[[str], McpError]) -> None:
        """End every request still running (the server stopped or crashed) and wait for its worker."""
        requests = list(self.requests)
        for req in requests:
            req.end(interrupted(req.label))
        workers = {req.task for req in requests if req.task is not None and not req.task.done()}
        if workers:
            await wait_through_cancel(workers, DRAIN_TIMEOUT)
