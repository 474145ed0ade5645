"""Row 22: a tool call the server runs as an MCP task vs a plain call of the same tool.

The server is FastMCP + fastmcp-tasks (tests/support/tasks_server.py, the `io.modelcontextprotocol/tasks`
extension of 2026-07-28) over streamable HTTP, one process for both sides. Its `sleep_sum` may run as a task:
the server runs it as one for a client that declares the extension (McpHub, which then polls `tasks/get` from
50 ms on, doubling up to the 300 ms the server asks for), inline for one that does not (the bare `mcp.Client`).
The difference is what a task costs on top of the tool: creating it on the server, and the polls until it ends.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from _common import Measure, Row, Size, ainterleaved, fmt_seconds, median, run_async

from synapse_nb.mcp_client.hub import McpHub

__all__ = ["row_tasks"]

ARGS = {"a": 2, "b": 3, "seconds": 0}


async def _task_vs_plain(size: Size) -> Row:
    from mcp import Client

    from tests.support.task_servers import tasks_http

    n, rounds = size.pick((3, 2), (10, 20))
    with tempfile.TemporaryDirectory() as tmp, tasks_http(Path(tmp) / "server.log") as url:
        async with McpHub() as hub, Client(url) as bare:
            await hub.connect("fm", url=url)
            await bare.list_tools()

            async def plain() -> None:
                for _ in range(n):
                    result = await bare.call_tool("sleep_sum", ARGS)
                    assert not result.is_error

            async def task() -> None:
                for _ in range(n):
                    result = await hub.call("fm__sleep_sum", ARGS)
                    assert result.text == "sum=5"

            s = await ainterleaved({"plain": plain, "task": task}, rounds, per=n)
    base, measured = median(s["plain"]), median(s["task"])
    return Row(
        "22", "the same tool as an MCP task (McpHub, tasks extension) vs a plain call (bare mcp.Client)",
        Measure("plain tools/call", base), Measure("as a task", measured), "informational", None,
        note=f"a task costs {fmt_seconds(measured - base)} more per call on a tool that does nothing: creating "
             f"it on the server and polling until it ends (first poll after 50 ms); fastmcp-tasks over streamable "
             f"HTTP, {n * rounds} sequential calls per side in blocks of {n} alternating with the other side",
    )


def row_tasks(size: Size) -> list[Row]:
    return [run_async(_task_vs_plain(size))]
