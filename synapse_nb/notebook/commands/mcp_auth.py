"""`%mcp auth NAME` (sign in again) and `%mcp logout NAME` (forget the tokens) for OAuth-protected HTTP servers."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ...errors import SynapseError
from ..output.live import LiveOutput
from ..turns.view import GLYPH
from ..usage import usage_error
from .servers import connected_line, find_server, progress

if TYPE_CHECKING:
    from ...mcp_client.hub import McpHub
    from ...mcp_client.info import ServerInfo
    from ..kernel.port import KernelPort

__all__ = ["auth_async", "logout_async"]


def _httpfind_server(hub: McpHub | None, name: str, command: str) -> McpHub:
    info = find_server(hub, name)
    assert hub is not None  # it has that server
    if not info.url:
        raise UsageError(f"%mcp {command}: {name} is a stdio server; only HTTP servers sign in with OAuth")
    return hub


async def auth_async(hub: McpHub | None, port: KernelPort, name: str) -> ServerInfo:
    """`%mcp auth NAME`: drop the server's tokens, sign in again (the link shows in this cell), reconnect."""
    hub = _httpfind_server(hub, name, "auth")
    out = LiveOutput(live=port.live, publish=port.publish, withdraw=port.withdraw)
    out.start(progress(f"signing in to {name} again …"))
    try:
        info = await hub.authenticate(name)
    except SynapseError as exc:
        out.finish(progress(f"✗ {name}: not signed in"))
        raise usage_error(exc) from None
    except asyncio.CancelledError:
        out.finish(progress(f"{GLYPH['cancelled']} signing in to {name} was interrupted"))
        raise
    out.finish(progress(f"{GLYPH['ok']} {name}: signed in, {connected_line(info)}"))
    return info


async def logout_async(hub: McpHub | None, name: str) -> bool:
    """`%mcp logout NAME`: disconnect the server and forget its tokens and registered client (keyring or
    token file); the next connect asks to sign in. Returns whether anything was stored."""
    hub = _httpfind_server(hub, name, "logout")
    try:
        forgot = await hub.logout(name)
    except SynapseError as exc:
        raise usage_error(exc) from None
    if forgot:
        print(f"{name}: signed out and disconnected; its tokens are forgotten (%mcp connect {name} signs in again)")
    else:
        print(f"{name}: disconnected; no sign-in was stored for it")
    return bool(forgot)
