"""The SDK calls behind the hub's client features: tool calls with progress, log level, roots, subscriptions.

Each function runs inside a server's request worker (`ServerConnection.request`) with the SDK client
of that moment. Calls the SDK marks deprecated for protocol 2026-07-28 (logging/setLevel, roots,
resources/subscribe) are still the protocol on 2025-era servers (server-everything speaks
2025-11-25), so their warning is silenced exactly there.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import mcp.types as mt
from mcp import Client, MCPDeprecationWarning, MCPError, UrlElicitationRequiredError
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from ..errors import McpError
from .deadline import Deadlines
from .logs import LogLevel

__all__ = [
    "OnProgress",
    "OnUrlRequired",
    "call_tool",
    "is_modern",
    "notify_roots_changed",
    "set_log_level",
    "subscribe",
    "unsubscribe",
]

logger = logging.getLogger("synapse_nb.mcp")

OnProgress = Callable[[float, float | None, str | None], None]
"""on_progress(progress, total, message): called on the event loop for each progress report."""
OnUrlRequired = Callable[[list[mt.ElicitRequestURLParams]], Awaitable[bool]]
"""Show the URLs a server requires (error -32042); True when the user completed them all, so the call is retried."""


def is_modern(client: Client) -> bool:
    """The connection speaks 2026-07-28 or later (no logging/setLevel, roots notifications or resources/subscribe)."""
    return client.protocol_version in MODERN_PROTOCOL_VERSIONS


@contextmanager
def _legacy_call() -> Iterator[None]:
    # The session's own methods (not Client's, whose coroutines call them) warn when the sync
    # `deprecated` wrapper is called, so the guard covers the call alone, never an await.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield


async def call_tool(
    client: Client, tool: str, arguments: dict[str, object], *, timeout: float | None, max_total: float,
    on_progress: OnProgress | None, on_url_required: OnUrlRequired | None = None, deadlines: Deadlines | None = None,
) -> mt.CallToolResult | None:
    """Call a tool; None when it ran past its deadline (it is then cancelled on the server).

    The deadline is `timeout` seconds, pushed back by `timeout` on every progress report (as the
    MCP Inspector does), but never past `max_total` seconds from the start. A server that answers
    "URL elicitation required" (-32042) has its URLs shown through `on_url_required`; once the user
    completed them the call is retried, once. While the server's `deadlines` say the user is being
    asked something, the deadline is held (deadline.py).
    """
    tracker = deadlines if deadlines is not None else Deadlines()
    with tracker.track(timeout, max_total) as deadline:

        async def report(progress: float, total: float | None, message: str | None) -> None:
            deadline.push()
            if on_progress is not None:
                try:
                    on_progress(progress, total, message)
                except Exception:  # a display callback must not end the call
                    logger.exception("the progress callback of a call to %r failed", tool)

        try:
            result = await client.call_tool(tool, arguments, progress_callback=report)
        except MCPError as exc:
            if exc.code != mt.URL_ELICITATION_REQUIRED or on_url_required is None:
                raise
            required = UrlElicitationRequiredError.from_error(exc.error).elicitations
            if not required or not await on_url_required(required):
                raise
            result = await client.call_tool(tool, arguments, progress_callback=report)
    return None if deadline.scope.cancelled_caught else result


async def set_log_level(client: Client, level: LogLevel) -> bool:
    """Ask a 2025-era server for messages at `level` and above; False on 2026-07-28 (set at connect there)."""
    if is_modern(client):
        return False
    if client.server_capabilities.logging is None:
        raise McpError("the server does not offer logging (no `logging` capability)")
    with _legacy_call():
        pending = client.session.set_logging_level(level)
    await pending
    return True


async def notify_roots_changed(client: Client) -> bool:
    """Tell a 2025-era server its roots changed; False on 2026-07-28, where servers ask for roots per request."""
    if is_modern(client):
        return False
    with _legacy_call():
        pending = client.session.send_roots_list_changed()
    await pending
    return True


async def subscribe(client: Client, uri: str) -> None:
    """resources/subscribe on a 2025-era server; updates then arrive as notifications."""
    _check_subscribe(client)
    with _legacy_call():
        pending = client.session.subscribe_resource(uri)
    await pending


async def unsubscribe(client: Client, uri: str) -> None:
    _check_subscribe(client)
    with _legacy_call():
        pending = client.session.unsubscribe_resource(uri)
    await pending


def _check_subscribe(client: Client) -> None:
    caps = client.server_capabilities.resources
    if caps is None or not caps.subscribe:
        raise McpError("the server does not offer resource subscriptions (resources.subscribe capability)")
    if is_modern(client):
        raise McpError("resource subscriptions over protocol 2026-07-28 (subscriptions/listen) are not supported yet")
