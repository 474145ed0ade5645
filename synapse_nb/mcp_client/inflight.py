"""Requests in flight on one server session: each one's worker task, its timeout, and how it ends.

The SDK call of a request runs in a worker task of its own, so that the caller (whatever task or
nested loop it is) only awaits a task; cancelling the caller cancels the worker (asyncio propagates
it), a timer ends it at the request's timeout, and the connection ends it when the server stops or
crashes. In each case the SDK sends `notifications/cancelled` to the server before the worker ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp import Client

from ..errors import McpError, ToolCallTimeout
from .tasks import wait_through_cancel

__all__ = ["DRAIN_TIMEOUT", "OnError", "Request", "Session", "end_requests", "submit"]

T = TypeVar("T")
OnError = Callable[[Exception, int, str], McpError]
"""Maps an SDK or transport error of a request (error, session generation, label) to the McpError raised."""

DRAIN_TIMEOUT = 2.0
"""Seconds the workers of ended requests get to finish (the SDK sends notifications/cancelled)."""


class Request:
    """One request in flight: its worker task, and why the hub (not the caller) ended it, if it did."""

    __slots__ = ("ended", "label", "server", "task", "timeout")

    def __init__(self, label: str, timeout: float | None, server: str) -> None:
        self.label = label
        self.timeout = timeout
        self.server = server
        self.task: asyncio.Task[Any] | None = None
        self.ended: McpError | None = None

    def end(self, error: McpError) -> None:
        """Cancel the worker (the SDK then sends notifications/cancelled); the caller gets `error`."""
        if self.ended is None and self.task is not None and not self.task.done():
            self.ended = error
            self.task.cancel()

    def expire(self) -> None:
        self.end(ToolCallTimeout(
            f"{self.label} on MCP server {self.server!r} did not finish within {self.timeout:g} s; it was cancelled",
            server=self.server, timeout=self.timeout or 0.0,
        ))


class Session:
    """What one generation's owner task shares with its request workers."""

    __slots__ = ("client", "gen", "requests", "stop")

    def __init__(self, client: Client, gen: int) -> None:
        self.client = client
        self.gen = gen
        self.requests: set[Request] = set()
        self.stop = asyncio.Event()


async def submit(session: Session, req: Request, fn: Callable[[Client], Awaitable[T]], on_error: OnError) -> T:
    """Run `fn(session.client)` in a worker task bounded by `req.timeout`; the caller awaits the worker."""
    worker = asyncio.get_running_loop().create_task(_run(session, req, fn, on_error))
    req.task = worker
    session.requests.add(req)
    worker.add_done_callback(lambda _: session.requests.discard(req))
    try:
        return await worker
    except asyncio.CancelledError:
        caller = asyncio.current_task()
        if req.ended is not None and (caller is None or caller.cancelling() == 0):
            raise req.ended from None  # the hub ended the worker before it ran; the caller was not cancelled
        raise


async def _run(session: Session, req: Request, fn: Callable[[Client], Awaitable[T]], on_error: OnError) -> T:
    timer = None
    if req.timeout is not None:
        timer = asyncio.get_running_loop().call_later(req.timeout, req.expire)
    try:
        return await fn(session.client)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if req.ended is None or task is None or task.cancelling() > 1:
            raise  # the caller was cancelled (perhaps as well): it gets its CancelledError
        task.uncancel()
        raise req.ended from None
    except Exception as exc:  # the boundary for SDK and transport errors of one request
        raise on_error(exc, session.gen, req.label) from exc
    finally:
        if timer is not None:
            timer.cancel()


async def end_requests(session: Session, interrupted: Callable[[str], McpError]) -> None:
    """End every request still running (the server stopped or crashed) and wait for its worker."""
    requests = list(session.requests)
    for req in requests:
        req.end(interrupted(req.label))
    workers = {req.task for req in requests if req.task is not None and not req.task.done()}
    if workers:
        await wait_through_cancel(workers, DRAIN_TIMEOUT)
