"""The test server's tools (tools_server.py) that talk back while a call waits (held progress, a question,
a sign-in link), and its stdio loop for the 2025 handshake era (`--legacy`), where a server sends requests of
its own and may cancel them.

Each waiting tool goes on when `fire(SIGNAL)` is called on the same server: tests drive what the server does
next by a second call, never by time.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import mcp.types as mt
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from pydantic import BaseModel

__all__ = ["add_waiting_tools", "serve_legacy_stdio"]


class _Name(BaseModel):
    name: str


class _Signals:
    """What `fire` sets; each waiting call takes a fresh event once the last one was fired."""

    def __init__(self) -> None:
        self._events: dict[str, anyio.Event] = {}

    def get(self, name: str) -> anyio.Event:
        event = self._events.get(name)
        if event is None or event.is_set():
            event = self._events[name] = anyio.Event()
        return event


def add_waiting_tools(server: MCPServer, annotations: mt.ToolAnnotations) -> None:
    """fire, progress_held, question and sign_in (see each tool's description)."""
    signals = _Signals()

    @server.tool(annotations=annotations)
    def fire(signal: str) -> str:
        """Release the tool waiting on `signal` ("release" a progress_held call, "withdraw" a question,
        "complete" a sign-in)."""
        signals.get(signal).set()
        return f"fired {signal}"

    @server.tool(annotations=annotations, structured_output=False)
    async def progress_held(steps: int, message: str, ctx: Context) -> str:
        """Report `steps` progress notifications ("MESSAGE i of N"), then wait until fire("release")."""
        released = signals.get("release")
        for i in range(1, max(1, min(steps, 1000)) + 1):
            await ctx.report_progress(i, steps, f"{message} {i} of {steps}")
        with anyio.move_on_after(120):
            await released.wait()
        return f"done after {steps} steps"

    @server.tool(annotations=annotations, structured_output=False)
    async def question(message: str, ctx: Context) -> str:
        """Ask the client for a name (form elicitation); fire("withdraw") withdraws the question (on a
        2025-era connection the client gets `notifications/cancelled` for it)."""
        withdrawn = signals.get("withdraw")
        answer: Any = None
        async with anyio.create_task_group() as tg:
            async def ask() -> None:
                nonlocal answer
                answer = await ctx.elicit(message, _Name)
                tg.cancel_scope.cancel()

            tg.start_soon(ask)
            await withdrawn.wait()
            tg.cancel_scope.cancel()
        if answer is None:
            return "the question was withdrawn"
        return f"answer: {answer.action}" + (f" name={answer.data.name}" if answer.action == "accept" else "")

    @server.tool(annotations=annotations, structured_output=False)
    async def sign_in(url: str, ctx: Context) -> str:
        """Ask the client to open `url` (URL elicitation); fire("complete") tells it the sign-in is done
        (`notifications/elicitation/complete`) without waiting for the user."""
        elicitation_id = f"sign-in-{time.monotonic_ns()}"
        completed = signals.get("complete")
        async with anyio.create_task_group() as tg:
            async def complete() -> None:
                await completed.wait()
                await ctx.request_context.session.send_elicit_complete(elicitation_id, ctx.request_context.request_id)

            tg.start_soon(complete)
            result = await ctx.elicit_url("Sign in to the shop", url, elicitation_id)
            tg.cancel_scope.cancel()
        return f"sign-in {elicitation_id}: {result.action}"


async def serve_legacy_stdio(server: MCPServer) -> None:
    """stdio in the 2025 handshake era only (the SDK's handshake loop), whatever the client opens with."""
    low = server._lowlevel_server  # the SDK's handshake loop drives the low-level server
    async with stdio_server() as (read, write), low.lifespan(low) as state:
        await serve_loop(low, read, write, lifespan_state=state, init_options=low.create_initialization_options())
