"""The servers as the commands show and find them: a server's state in words, its "connected" line, a live
progress line, and the one way to name a server (one UsageError line when there is none)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ...errors import UnknownServerError
from ..turns.view import duration

if TYPE_CHECKING:
    from ...mcp_client.hub import McpHub
    from ...mcp_client.info import ServerInfo

__all__ = ["LOADING_SHOWN_MS", "connected_line", "find_server", "loading", "progress", "state_words"]


def connected_line(
    info: ServerInfo, waited_ms: float | None = None, *, already: bool = False, loading_ms: float = 0.0,
) -> str:
    """`connected, 9 tools (stdio, pid 123) in 0.4 s (+1.2 s loading the MCP client, first time only)`: the
    time is what the user waited (`waited_ms`, the command's wall time, which includes the process start
    before the hub's own `connect_ms` starts counting) less `loading_ms`, the one-time import of the MCP
    client, said apart so that the server is not blamed for it; `already` says the hub kept the running
    server of the same config."""
    where = f"{info.transport}" + (f", pid {info.pid}" if info.pid else "")
    tools = f"{info.tool_count} tool" + ("" if info.tool_count == 1 else "s")
    if already:
        return f"already connected, {tools} ({where}){loading(loading_ms)}"
    ms = waited_ms - loading_ms if waited_ms is not None else info.connect_ms
    took = f" in {duration(ms)}" if ms is not None else ""
    return f"connected, {tools} ({where}){took}{loading(loading_ms)}"


LOADING_SHOWN_MS = 50.0
"""A one-time load shorter than this is not worth a word."""


def loading(loading_ms: float) -> str:
    if loading_ms < LOADING_SHOWN_MS:
        return ""
    return f" (+{duration(loading_ms)} loading the MCP client, first time only)"


def progress(text: str) -> dict[str, Any]:
    return {"text/plain": text, "text/markdown": f"*{html.escape(text)}*"}


def state_words(info: ServerInfo) -> str:
    """`connected`, or what a server that is not running is and the command that gets it going
    (`failed — %mcp restart bad to retry`): a listing never leaves a dead server looking usable."""
    return info.state if info.usable else info.status.replace("`", "")


def find_server(hub: McpHub | None, name: str) -> ServerInfo:
    if hub is None:
        raise UsageError(f"%mcp: unknown server {name!r}; no servers are connected (%mcp connect {name} -- COMMAND)")
    try:
        return hub.server(name)
    except UnknownServerError:
        known = ", ".join(s.name for s in hub.servers) or "none"
        raise UsageError(f"%mcp: unknown server {name!r}; connected servers: {known} (see %mcp list)") from None
