"""Run by the langchain-mcp-adapters peer venv (make bench-tools), not by synapse_nb's: time a tool call.

    .tools/bench-peers/langchain-mcp/bin/python bench/peer_langchain.py CALLS DEFAULT_CALLS COMMAND [ARG ...]

Prints one JSON object: seconds per call (median) with the library's default use (a MultiServerMCPClient
tool, which opens a new session, i.e. starts the server, for every call) and with an explicit session
(`client.session(...)` + `load_mcp_tools(session)`, the library's fastest documented use). DEFAULT_CALLS
0 skips the default use (NaN): each of its calls starts a server, seconds on a busy machine.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from typing import Any

from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools

ARGS = {"text": "hello from the benchmark"}


async def _timed(tool: Any, calls: int) -> float:
    samples = []
    for _ in range(calls + 1):  # the first one warms up
        t0 = time.perf_counter()
        await tool.ainvoke(ARGS)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples[1:])


def _echo(tools: list[Any]) -> Any:
    return next(t for t in tools if t.name == "echo")


async def main(calls: int, default_calls: int, command: str, args: list[str]) -> dict[str, float]:
    client = MultiServerMCPClient({"demo": {"command": command, "args": args, "transport": "stdio"}})
    default = await _timed(_echo(await client.get_tools()), default_calls) if default_calls else float("nan")
    async with client.session("demo") as session:
        explicit = await _timed(_echo(await load_mcp_tools(session)), calls)
    return {"default": default, "explicit": explicit}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]))))
