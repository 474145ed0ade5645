"""Run by the langchain-mcp-adapters peer venv (make bench-tools), not by synapse_nb's: time tool calls on request.

    .tools/bench-peers/langchain-mcp/bin/python bench/peer_langchain.py DEFAULT_CALLS SERVERS COMMAND [ARG ...]

First prints one JSON line: seconds per call (median of DEFAULT_CALLS; NaN for 0) with the library's default
use (a MultiServerMCPClient tool, which opens a new session, i.e. starts the server, for every call). Then opens
SERVERS explicit sessions (`client.session(...)` + `load_mcp_tools(session)`, the library's fastest documented
use), prints `ready`, and for each line `N` it reads runs N calls (the sessions in turn) and prints the seconds
per call: the benchmark interleaves these blocks with its own, so the machine's drift falls on both.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import sys
import time
from typing import Any

from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools

ARGS = {"text": "hello from the benchmark"}


def _echo(tools: list[Any]) -> Any:
    return next(t for t in tools if t.name == "echo")


async def _default(command: str, args: list[str], calls: int) -> float:
    if not calls:
        return float("nan")
    client = MultiServerMCPClient({"demo": {"command": command, "args": args, "transport": "stdio"}})
    tool = _echo(await client.get_tools())
    samples = []
    for _ in range(calls + 1):  # the first one warms up
        t0 = time.perf_counter()
        await tool.ainvoke(ARGS)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples[1:])


async def main(default_calls: int, servers: int, command: str, args: list[str]) -> None:
    print(json.dumps({"default": await _default(command, args, default_calls)}), flush=True)
    config = {f"demo{n}": {"command": command, "args": args, "transport": "stdio"} for n in range(servers)}
    client = MultiServerMCPClient(config)  # type: ignore[arg-type]
    async with contextlib.AsyncExitStack() as stack:
        tools = []
        for name in config:
            session = await stack.enter_async_context(client.session(name))
            tools.append(_echo(await load_mcp_tools(session)))
        print("ready", flush=True)
        loop = asyncio.get_running_loop()
        while line := (await loop.run_in_executor(None, sys.stdin.readline)).strip():
            block = int(line)
            t0 = time.perf_counter()
            for n in range(block):
                await tools[n % len(tools)].ainvoke(ARGS)
            print(json.dumps((time.perf_counter() - t0) / block), flush=True)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]))
