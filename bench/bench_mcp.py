"""MCP client benchmarks: McpHub.call round trip vs the bare SDK, tool discovery, connecting 5 servers at once.

    .venv/bin/python bench/bench_mcp.py [--small]

Every server is the bundled demo server (or the npm reference server, for discovery) started by this
interpreter; timings alternate with their baseline block by block (see _common.py) and are medians.
Prints a Markdown table; exits 0 whether targets are met or not (they are reported, not asserted).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from typing import Any, TextIO

from _common import DEMO_ARGS, REPO, Measure, Row, Size, ainterleaved, bench_dir, fmt_seconds, median, run_async, table

from synapse_nb.mcp_client.hub import McpHub

ARGS = {"text": "hello from the benchmark"}
EVERYTHING = REPO / ".tools" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
SERVERS = 5


def _devnull() -> TextIO:
    return open(os.devnull, "w")  # closed by the caller's `with`


def _demo() -> dict[str, Any]:
    return {"command": sys.executable, "args": list(DEMO_ARGS)}


async def _round_trip(size: Size) -> list[Row]:
    """Row A: the hub's layer alone (same SDK client and server process on both sides).
    Row B: hub vs a separate bare mcp.Client on its own demo server process (what a user would compare)."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    n, rounds = size.pick((20, 3), (50, 60))
    async with McpHub() as hub:
        await hub.connect("demo", **_demo())

        async def grab(client: Any) -> Any:
            return client

        # the benchmark reaches the hub's own SDK client through the connection (not an API for users)
        own = await hub._conn("demo").request(grab, "benchmark", None)
        with _devnull() as devnull:
            params = StdioServerParameters(command=sys.executable, args=list(DEMO_ARGS))
            async with Client(stdio_client(params, errlog=devnull), cache=None) as bare:

                def calls(fn: Any) -> Any:
                    async def run() -> None:
                        for _ in range(n):
                            result = await fn()
                            assert not result.is_error

                    return run

                s = await ainterleaved(
                    {
                        "same": calls(lambda: own.call_tool("echo", ARGS)),
                        "hub": calls(lambda: hub.call("demo__echo", ARGS)),
                        "separate": calls(lambda: bare.call_tool("echo", ARGS)),
                    },
                    rounds, warmup=1, per=n,
                )
    same, ours, separate = median(s["same"]), median(s["hub"]), median(s["separate"])
    over = ours / same - 1
    return [
        Row("A", "tool call round trip: McpHub.call vs bare mcp.Client.call_tool (same session)",
            Measure("mcp.Client.call_tool", same), Measure("McpHub.call", ours), "overhead < 10%", over < 0.10,
            note=f"overhead {over:+.1%} ({fmt_seconds(ours - same)} per call): worker task, timeout timer, "
                 f"result conversion; {n * rounds} sequential `echo` calls per side"),
        Row("B", "tool call round trip: McpHub.call vs a bare mcp.Client on its own server process",
            Measure("separate mcp.Client.call_tool", separate), Measure("McpHub.call", ours), "informational",
            None, note="two server processes differ by more than the hub's layer on a busy machine"),
    ]


async def _discovery(size: Size) -> list[Row]:
    rounds = size.pick(1, 5)
    servers: dict[str, dict[str, Any]] = {"demo": _demo()}
    node = shutil.which("node")
    if node and EVERYTHING.is_file():
        servers["everything"] = {"command": node, "args": [str(EVERYTHING), "stdio"]}
    rows = []
    for name, spec in servers.items():
        found: list[float] = []
        tools = 0
        for _ in range(rounds):
            async with McpHub() as hub:
                info = await hub.connect(name, **spec)
                assert info.discovery_ms is not None
                found.append(info.discovery_ms / 1000)
                tools = info.tool_count
        measured = median(found)
        rows.append(Row(f"C-{name}", f"tool discovery after connect: {name} ({tools} tools)", None,
                        Measure("list + register", measured), "< 100 ms", measured < 0.1,
                        note=f"ServerInfo.discovery_ms, median of {rounds} connects"))
    if "everything" not in servers:
        rows.append(Row("C-everything", "tool discovery after connect: everything", None,
                        Measure("not installed", float("nan")), "< 100 ms", None, note="run `make tools`"))
    return rows


def _children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


async def _connect_five(size: Size) -> list[Row]:
    rounds = size.pick(1, 3)
    path = bench_dir() / "bench_mcp_servers.json"
    path.write_text(json.dumps({"mcpServers": {f"demo{i}": _demo() for i in range(SERVERS)}}))
    singles: list[float] = []
    together: list[float] = []
    cpu: list[float] = []
    for _ in range(rounds):
        times = []
        for i in range(SERVERS):
            cpu0 = _children_cpu()
            async with McpHub() as hub:
                t0 = time.perf_counter()
                await hub.connect(f"demo{i}", **_demo())
                times.append(time.perf_counter() - t0)
            cpu.append(_children_cpu() - cpu0)  # the server's CPU, counted once it has exited
        singles.append(max(times))
        async with McpHub() as hub:
            t0 = time.perf_counter()
            results = await hub.connect_config(path)
            together.append(time.perf_counter() - t0)
            assert all(not isinstance(r, Exception) for r in results.values()), results
    slowest, total = median(singles), median(together)
    cores = os.cpu_count() or 1
    floor = max(slowest, SERVERS * median(cpu) / cores)
    return [Row("D", f"connect {SERVERS} servers from a config file vs the slowest single connect",
                Measure("slowest single", slowest), Measure(f"{SERVERS} via connect_config", total),
                "≈ slowest (< 1.5x)", total < 1.5 * slowest,
                note=f"the starts run concurrently (connect_config gathers them), but each demo server start "
                     f"costs {fmt_seconds(median(cpu))} of CPU (its interpreter importing the mcp SDK), so "
                     f"{SERVERS} starts on {cores} cores need at least {fmt_seconds(floor)}: the hub took "
                     f"{total / floor:.2f}x that floor; median of {rounds}")]


async def main(size: Size) -> list[Row]:
    return [*await _round_trip(size), *await _discovery(size), *await _connect_five(size)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="a quick run (a few seconds), as the tests do")
    options = parser.parse_args()
    started = time.perf_counter()
    rows = run_async(main(Size(small=options.small)))
    print(table(rows))
    print()
    for row in rows:
        if row.note:
            print(f"- {row.id}: {row.note}")
    print(f"\n{sum(r.met is True for r in rows)} met, {sum(r.met is False for r in rows)} missed; "
          f"{time.perf_counter() - started:.1f} s")
