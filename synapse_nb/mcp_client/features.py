"""The SDK calls behind the hub's requests: tool calls with progress, resources, prompts, log level, roots,
subscriptions.

Each function runs as one of a server's requests (inflight.py, under the request's deadline) with
the SDK client of that moment, and returns synapse values (convert.py), never SDK types. Calls the
SDK marks deprecated for protocol 2026-07-28 (logging/setLevel, roots, resources/subscribe) are still
the protocol on 2025-era servers (server-everything speaks 2025-11-25), so their warning is silenced
exactly there.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager

import mcp.types as mt
from mcp import Client, MCPDeprecationWarning, MCPError, UrlElicitationRequiredError
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from ..errors import McpError
from ..types import ContentBlock, ToolResult
from .convert import prompt_info, prompt_result, resource_blocks, resource_info, resource_template_info, tool_result
from .info import PromptInfo, PromptResult, ResourceInfo, ResourceTemplateInfo
from .logs import LogLevel

__all__ = [
    "OnProgress",
    "OnUrlRequired",
    "call_tool",
    "get_prompt",
    "is_modern",
    "list_prompts",
    "list_resource_templates",
    "list_resources",
    "notify_roots_changed",
    "read_resource",
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
    client: Client, tool: str, arguments: dict[str, object], *, alive: Callable[[], None],
    on_progress: OnProgress | None = None, on_url_required: OnUrlRequired | None = None,
) -> ToolResult:
    """Call a tool; each progress report is a sign of life (`alive()` pushes the request's deadline back).

    The result's duration counts from here (inside the request, under its deadline). A server that answers "URL
    elicitation required" (-32042) has its URLs shown through `on_url_required`; once the user
    completed them the call is retried, once.
    """

    async def report(progress: float, total: float | None, message: str | None) -> None:
        alive()
        if on_progress is not None:
            try:
                on_progress(progress, total, message)
            except Exception:  # a display callback must not end the call
                logger.exception("the progress callback of a call to %r failed", tool)

    started = time.perf_counter()
    try:
        result = await client.call_tool(tool, arguments, progress_callback=report)
    except MCPError as exc:
        if exc.code != mt.URL_ELICITATION_REQUIRED or on_url_required is None:
            raise
        required = UrlElicitationRequiredError.from_error(exc.error).elicitations
        if not required or not await on_url_required(required):
            raise
        result = await client.call_tool(tool, arguments, progress_callback=report)
    return tool_result(result, (time.perf_counter() - started) * 1000)


async def list_resources(client: Client) -> list[ResourceInfo]:
    """The server's resources; none when it offers no `resources` capability."""
    if client.server_capabilities.resources is None:
        return []
    return [resource_info(r) for r in (await client.list_resources()).resources]


async def list_resource_templates(client: Client) -> list[ResourceTemplateInfo]:
    """The server's resource templates (URIs with `{variables}`); none without the `resources` capability."""
    if client.server_capabilities.resources is None:
        return []
    return [resource_template_info(t) for t in (await client.list_resource_templates()).resource_templates]


async def read_resource(client: Client, uri: str) -> tuple[ContentBlock, ...]:
    return resource_blocks(await client.read_resource(uri))


async def list_prompts(client: Client) -> list[PromptInfo]:
    """The server's prompts; none when it offers no `prompts` capability."""
    if client.server_capabilities.prompts is None:
        return []
    return [prompt_info(p) for p in (await client.list_prompts()).prompts]


async def get_prompt(client: Client, prompt: str, arguments: Mapping[str, str]) -> PromptResult:
    return prompt_result(await client.get_prompt(prompt, dict(arguments)))


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
