"""The demo server plus the misbehaving tools the tests drive (kept out of the wheel, which ships the shop alone).

    python tests/support/tools_server.py                      # stdio: the shop plus the test tools
    python tests/support/tools_server.py --http --port 8765   # streamable HTTP on 127.0.0.1:8765/mcp
    python tests/support/tools_server.py --sse --port 8765    # SSE on 127.0.0.1:8765/sse
    python tests/support/tools_server.py --legacy             # stdio in the 2025 handshake era only

Test tools: echo, sleep, progress, cancellations, fail, crash, garbage, image, large, env, add_tool, and those
that talk back while a call waits (progress_held, question, sign_in; `fire` releases them: waiting_tools.py).
`--legacy` serves stdio in the 2025 handshake era only, where a server sends requests of its own
(elicitation) and may cancel them. In-process tests use `build_server()`; subprocess tests the command line
(`ARGS` after the interpreter, or `COMMAND` whole).
"""

from __future__ import annotations

import os
import shlex
import struct
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

if not __package__:  # run by path, as a server: its imports name the tests package of this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from synapse_nb.mcp_client import demo_server
from synapse_nb.mcp_client.demo_server import NAME, serve
from tests.support.waiting_tools import add_waiting_tools, serve_legacy_stdio

__all__ = ["ARGS", "COMMAND", "PATH", "add_test_tools", "build_server", "main"]

PATH = Path(__file__).resolve()
ARGS = (str(PATH),)  # after the interpreter: [sys.executable, *ARGS]
COMMAND = f"{shlex.quote(sys.executable)} {shlex.quote(str(PATH))}"  # the whole command, for `%mcp connect -- `
_TEST = mt.ToolAnnotations(read_only_hint=True, open_world_hint=False)


def build_server(wire_fd: int = 1) -> MCPServer:
    """The shop plus the test tools; `wire_fd` is where `garbage` writes (the stdio transport's real stdout)."""
    server = demo_server.build_server()
    add_test_tools(server, wire_fd)
    add_waiting_tools(server, _TEST)
    return server


class _Count:
    """A thread-safe counter (cancelled sleeps), for the server's life."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0

    def add(self) -> None:
        with self._lock:
            self.value += 1


def _result(text: str, *, error: bool = False) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)], is_error=error)


def _png(width: int = 32, height: int = 32) -> bytes:
    """A small RGB gradient as PNG, written by hand (zlib + struct, no imaging library)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(
        b"\x00" + b"".join(bytes((x * 255 // (width - 1), y * 255 // (height - 1), 160)) for x in range(width))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def add_test_tools(server: MCPServer, wire_fd: int) -> None:
    """The tools tests need: echo, sleep (counted cancellations), errors, a crash, garbage on the wire, ..."""
    cancelled = _Count()

    @server.tool(annotations=_TEST, structured_output=False)
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool(annotations=_TEST, structured_output=False)
    async def sleep(seconds: float) -> str:
        """Sleep for that many seconds (at most an hour); a cancelled sleep is logged to stderr and counted."""
        started = time.monotonic()
        print(f"{NAME}: sleep started ({seconds:g} s)", file=sys.stderr, flush=True)
        try:
            await anyio.sleep(min(max(seconds, 0.0), 3600.0))
        except anyio.get_cancelled_exc_class():
            cancelled.add()
            print(f"{NAME}: sleep cancelled after {time.monotonic() - started:.2f} s", file=sys.stderr, flush=True)
            raise
        return f"slept {seconds:g} s"

    @server.tool(annotations=_TEST, structured_output=False)
    async def progress(steps: int, seconds: float, ctx: Context) -> str:
        """Take `steps` steps of `seconds` each (at most 1000, an hour in all), reporting progress with a message."""
        steps = max(1, min(steps, 1000))
        pause = min(max(seconds, 0.0), 3600.0 / steps)
        for step in range(1, steps + 1):
            await anyio.sleep(pause)
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
        return f"took {steps} steps"

    @server.tool(annotations=_TEST)
    def cancellations() -> int:
        """How many sleep calls were cancelled by the client so far."""
        return cancelled.value

    @server.tool(annotations=_TEST)
    def fail(message: str) -> mt.CallToolResult:
        """Return an error result (is_error) carrying the message."""
        return _result(message, error=True)

    @server.tool(annotations=_TEST, structured_output=False)
    def crash() -> str:
        """Exit the server process at once, mid-call (exit status 3)."""
        print(f"{NAME}: crashing on purpose", file=sys.stderr, flush=True)
        os._exit(3)

    @server.tool(annotations=_TEST, structured_output=False)
    def garbage(lines: int = 3) -> str:
        """Write that many lines that are not JSON-RPC to the protocol stream (stdout), then answer."""
        for i in range(max(0, min(lines, 1000))):
            os.write(wire_fd, f"this is not JSON-RPC, line {i + 1}\n".encode())
        return f"wrote {lines} non-JSON lines to stdout"

    @server.tool(annotations=_TEST)
    def image() -> Image:
        """A small PNG image (a colour gradient)."""
        return Image(data=_png(), format="png")

    @server.tool(annotations=_TEST, structured_output=False)
    def large(kb: int) -> str:
        """That many kilobytes of text (lines of digits), at most 64 MB."""
        size = max(0, min(kb, 65536)) * 1024
        line = "0123456789" * 10 + "\n"
        return (line * (size // len(line) + 1))[:size]

    @server.tool(annotations=_TEST)
    def env(name: str) -> dict[str, Any]:
        """Whether an environment variable is set in the server process (its value is never returned)."""
        return {"name": name, "set": name in os.environ}

    @server.tool()
    async def add_tool(name: str, ctx: Context) -> str:
        """Add a tool with that name (it echoes its text) and announce that the tool list changed."""

        def added(text: str) -> str:
            return text

        server.add_tool(added, name=name, description=f"Echo tool {name!r}, added at run time.",
                        structured_output=False)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await ctx.notify_tools_changed()
        else:
            await ctx.session.send_tool_list_changed()
        return f"added tool {name}"


def main() -> None:
    serve(build_server, prog="python tests/support/tools_server.py", doc=__doc__, legacy=serve_legacy_stdio)


if __name__ == "__main__":
    main()
