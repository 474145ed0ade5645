"""WireTap: what tracing reads off one connection's wire: the JSON-RPC id and method of each traced request as
the SDK writes it, and the `Mcp-Session-Id` a 2025-era streamable HTTP server gives its session."""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Awaitable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

import httpx2
import mcp.types as mt
from mcp import MCPError
from mcp.shared.message import SessionMessage

from ..request_trace import McpRequestTrace, RequestTracer
from ..types import ToolResult

__all__ = ["TRACED", "WireTap", "traced"]

T = TypeVar("T")

TRACED: contextvars.ContextVar[McpRequestTrace | None] = contextvars.ContextVar("synapse_mcp_traced", default=None)
"""The traced request the current task is sending (set around the SDK call; the SDK writes in that task)."""

_NAMED = ("tools/call", "prompts/get")
"""Methods whose `params.name` is the span's low-cardinality target (a tool, a prompt)."""


class _TappedWrite:
    """The transport's write stream, noting the first request of the traced request being sent."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def send(self, item: SessionMessage, /) -> None:
        trace = TRACED.get()
        if trace is not None and trace.request_id is None and isinstance(item, SessionMessage):
            message = item.message
            if isinstance(message, mt.JSONRPCRequest):
                trace.method = message.method
                trace.request_id = str(message.id)
                name = (message.params or {}).get("name")
                trace.target = name if message.method in _NAMED and isinstance(name, str) else None
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _TappedWrite:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class WireTap:
    """One connection's tap: wraps its transport's write stream and watches its HTTP responses."""

    SESSION_HEADER = "mcp-session-id"

    def __init__(self) -> None:
        self.session_id: str | None = None

    def transport(self, inner: AbstractAsyncContextManager[Any]) -> AbstractAsyncContextManager[Any]:
        """`inner` (a transport yielding read and write streams) with its write stream tapped."""

        @asynccontextmanager
        async def tapped() -> AsyncIterator[Any]:
            async with inner as streams:
                read, write, *rest = streams
                yield (read, _TappedWrite(write), *rest)

        return tapped()

    async def on_response(self, response: httpx2.Response) -> None:
        """An httpx2 response hook: keep the session id the server gave (it stays the same for a session)."""
        session = response.headers.get(self.SESSION_HEADER)
        if session:
            self.session_id = session


async def traced(tracer: RequestTracer, trace: McpRequestTrace, run: Awaitable[T]) -> T:
    """Await `run` (one request to the server) inside the tracer's span for it, `trace` filled as it goes.

    The span is entered in this task, the one the request runs in (the SDK then sends its trace context in the
    request's `_meta`), which sees `trace` through TRACED."""
    with tracer.request(trace):
        token = TRACED.set(trace)
        try:
            result = await run
        except BaseException as exc:
            trace.error_type, trace.status_code = _error_kind(exc)
            raise
        finally:
            TRACED.reset(token)
        if isinstance(result, ToolResult) and result.is_error:
            trace.error_type = "tool_error"
        return result


def _error_kind(exc: BaseException) -> tuple[str, str | None]:
    """error.type and rpc.response.status_code: the JSON-RPC error code when the server answered with one
    (the SDK's error is the cause of ours), else the exception's type."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, MCPError):
            return str(cause.code), str(cause.code)
        cause = cause.__cause__
    return type(exc).__qualname__, None
