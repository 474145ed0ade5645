"""A stdio MCP server for the hub tests whose prompts ask the user (form elicitation) or never answer.

Run as `python tests/mcp_client/asking_server.py`. It serves stdio in the 2025 handshake era only: a
server asks the client in the middle of a request there (protocol 2026-07-28 has no back-channel for
it, in memory or over stdio).
"""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from pydantic import BaseModel

server = MCPServer("asker")


class Name(BaseModel):
    name: str


@server.prompt()
async def greet(ctx: Context) -> str:  # type: ignore[type-arg]
    """Greet whoever answers the question it asks."""
    answer = await ctx.elicit("Your name?", Name)
    return f"hello {answer.data.name}" if answer.action == "accept" else f"no name ({answer.action})"


@server.prompt()
async def hang() -> str:
    """Never answer."""
    await anyio.sleep(3600)
    return "late"


async def serve() -> None:
    low = server._lowlevel_server  # the SDK's handshake loop drives the low-level server
    async with stdio_server() as (read, write), low.lifespan(low) as state:
        await serve_loop(low, read, write, lifespan_state=state, init_options=low.create_initialization_options())


if __name__ == "__main__":
    anyio.run(serve)
