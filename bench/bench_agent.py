"""Agent loop benchmarks (rows 4 and 7 of bench/run.py): overhead per iteration, concurrent tool calls.

    python bench/bench_agent.py [--small] [--check]     # this module's own table
    python bench/run.py --only 4,7                       # the same measurements as rows of results.md

Every figure is compared with a baseline measured in the same run on the same machine:
- overhead: a turn of N iterations (scripted model -> in-process tool -> ...) against calling the
  same tool directly N times; target: under 1 ms of agent overhead per iteration.
- concurrency: one reply asking for 8 tool calls of D ms each, against a reply asking for one such
  call; target: the 8 take under 1.3x the time of one (MCP tools through the hub, async tools, and
  sync tools in threads).
`--check` exits 1 when a target is missed (the tests only run `--small`, without `--check`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import DEMO_ARGS, Measure, Row, Size, ainterleaved, fmt_seconds, median, run_async

from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tools import ToolRegistry, tool
from synapse_nb.providers.scripted import ScriptedProvider

__all__ = ["row_concurrency", "row_overhead"]

Turn = Callable[[], Awaitable[None]]


@tool
async def noop(i: int = 0) -> str:
    """Return at once."""
    return "ok"


def registry_with(*fns: Callable[..., Any], source: Any = None) -> ToolRegistry:
    registry = ToolRegistry(source)
    for fn in fns:
        registry.register(fn)
    return registry


def waiting_tools(seconds: float) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """An async tool and a sync tool (run in a worker thread) that each take `seconds`."""

    @tool
    async def wait_async(i: int = 0) -> str:
        """Wait a while without blocking."""
        await asyncio.sleep(seconds)
        return "ok"

    @tool
    def wait_sync(i: int = 0) -> str:
        """Block a worker thread for a while."""
        time.sleep(seconds)
        return "ok"

    return wait_async, wait_sync


def loop_turns(registry: ToolRegistry, iterations: int) -> tuple[Turn, Turn]:
    """(N direct calls of `noop`, one agent turn of N iterations each calling `noop`)."""

    async def direct() -> None:
        for i in range(iterations):
            await registry.call("noop", {"i": i})

    async def agent_turn() -> None:
        script: list[Any] = [{"tool": "noop", "arguments": {"i": i}} for i in range(iterations)] + ["done"]
        agent = Agent(ScriptedProvider(script), registry, max_iterations=iterations + 1)
        result = await agent.ask("loop")
        if result.status != "finished" or result.iterations != iterations + 1:
            raise RuntimeError(f"the benchmark turn did not run as scripted: {result}")

    return direct, agent_turn


def reply_turn(registry: ToolRegistry, name: str, calls: int, arguments: Callable[[int], Mapping[str, Any]]) -> Turn:
    """A turn whose first reply asks for `calls` calls of `name` at once."""

    async def run() -> None:
        script = [{"tool_calls": [{"name": name, "arguments": dict(arguments(i))} for i in range(calls)]}, "done"]
        result = await Agent(ScriptedProvider(script), registry).ask("wait")
        if result.status != "finished" or len(result.tool_calls) != calls:
            raise RuntimeError(f"the benchmark turn did not run as scripted: {result}")
        errors = [c for c in result.tool_calls if c.is_error]
        if errors:
            raise RuntimeError(f"a benchmark tool call failed: {errors[0].error or errors[0].result}")

    return run


# ---- rows of bench/run.py ------------------------------------------------------------------------------------


async def _overhead_row(size: Size) -> Row:
    iterations, rounds = size.pick((10, 2), (20, 40))
    registry = registry_with(noop)
    direct, agent_turn = loop_turns(registry, iterations)
    try:
        s = await ainterleaved({"direct": direct, "agent": agent_turn}, rounds, warmup=2, per=iterations)
    finally:
        registry.close()
    base, per_iteration = median(s["direct"]), median(s["agent"])
    extra = per_iteration - base
    return Row(
        "7", "agent loop overhead per iteration (scripted model, in-process tool)",
        Measure("ToolRegistry.call directly", base), Measure("one agent iteration", per_iteration),
        "< 1 ms extra per iteration", extra < 1e-3,
        note=f"{fmt_seconds(extra)} of agent work per iteration (model request, events, transcript, tool "
             f"message); turns of {iterations} iterations, median of {rounds}",
        why="" if extra < 1e-3 else
            f"an iteration costs {fmt_seconds(extra)} beyond the tool call itself; profile Agent._loop "
            "(events to sinks, transcript copies sent to the provider each iteration)",
    )


def row_overhead(size: Size) -> list[Row]:
    return [run_async(_overhead_row(size))]


async def _concurrency_rows(size: Size) -> list[Row]:
    from synapse_nb.mcp_client.hub import McpHub

    seconds, rounds = size.pick((0.05, 1), (0.2, 5))
    wait_async, wait_sync = waiting_tools(seconds)
    kinds = [
        ("4a", "MCP tool (demo server `sleep`, through the hub)", "demo__sleep", lambda i: {"seconds": seconds}),
        ("4b", "native async tool", "wait_async", lambda i: {"i": i}),
        ("4c", "native sync tool (worker threads)", "wait_sync", lambda i: {"i": i}),
    ]
    rows: list[Row] = []
    async with McpHub() as hub:
        await hub.connect("demo", command=sys.executable, args=DEMO_ARGS)
        registry = registry_with(wait_async, wait_sync, source=hub)
        try:
            for row_id, kind, name, arguments in kinds:
                one, eight = reply_turn(registry, name, 1, arguments), reply_turn(registry, name, 8, arguments)
                s = await ainterleaved({"one": one, "eight": eight}, rounds)
                base, total = median(s["one"]), median(s["eight"])
                ok = total < 1.3 * base
                rows.append(Row(
                    row_id, f"8 concurrent calls of {seconds * 1000:.0f} ms in one reply: {kind}",
                    Measure("a reply with 1 call", base), Measure("a reply with 8 calls", total),
                    "< 1.3x", ok,
                    note=f"{kind}: whole turns (scripted model, two replies), median of {rounds}",
                    why="" if ok else
                        f"8 calls took {total / base:.2f}x one call: they did not all run at once; check "
                        "Agent._run_tools (one task per call) and, for MCP, that the server handles requests "
                        "concurrently",
                ))
        finally:
            registry.close()
    return rows


def row_concurrency(size: Size) -> list[Row]:
    return run_async(_concurrency_rows(size))


# ---- this module's own table ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    name: str
    value: float
    unit: str
    baseline: float | None = None
    target: str = ""
    ok: bool | None = None

    def cells(self) -> list[str]:
        ratio = f"{self.value / self.baseline:.2f}x" if self.baseline else "baseline" if self.target == "" else ""
        verdict = "" if self.ok is None else ("ok" if self.ok else "MISSED")
        return [self.name, f"{self.value:,.1f} {self.unit}", ratio, self.target, verdict]


async def overhead(iterations: int, repeats: int) -> list[Line]:
    registry = registry_with(noop)
    direct, agent_turn = loop_turns(registry, iterations)
    try:
        s = await ainterleaved({"direct": direct, "agent": agent_turn}, repeats, per=iterations)
    finally:
        registry.close()
    direct_us, agent_us = median(s["direct"]) * 1e6, median(s["agent"]) * 1e6
    extra = agent_us - direct_us
    return [
        Line("tool called directly (per call)", direct_us, "us"),
        Line(f"agent iteration, {iterations}-iteration turn", agent_us, "us", baseline=direct_us),
        Line("agent overhead per iteration", extra, "us", target="< 1,000 us", ok=extra < 1000),
    ]


async def concurrency(seconds: float, repeats: int) -> list[Line]:
    registry = registry_with(*waiting_tools(seconds))
    ms = seconds * 1000
    rows: list[Line] = []
    try:
        for kind in ("async", "sync"):
            name = f"wait_{kind}"
            s = await ainterleaved({
                "one": reply_turn(registry, name, 1, lambda i: {"i": i}),
                "eight": reply_turn(registry, name, 8, lambda i: {"i": i}),
            }, repeats)
            one, eight = median(s["one"]) * 1000, median(s["eight"]) * 1000
            rows.append(Line(f"1 x {kind} tool of {ms:.0f} ms in a reply", one, "ms"))
            rows.append(Line(f"8 x {kind} tools of {ms:.0f} ms in one reply", eight, "ms", baseline=one,
                             target="< 1.3x", ok=eight < 1.3 * one))
    finally:
        registry.close()
    return rows


def table(rows: list[Line]) -> str:
    header = ["measurement", "value", "vs baseline", "target", ""]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---", "---:", "---:", "---", "---"]) + "|"]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines)


async def main_async(small: bool) -> list[Line]:
    iterations, repeats = (10, 3) if small else (20, 15)
    seconds, conc_repeats = (0.05, 2) if small else (0.2, 5)
    return [*await overhead(iterations, repeats), *await concurrency(seconds, conc_repeats)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a quick run with fewer, shorter measurements")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = parser.parse_args(argv)
    rows = asyncio.run(main_async(args.small))
    print(f"## agent loop ({'small' if args.small else 'full'} run, Python {sys.version.split()[0]})\n")
    print(table(rows))
    missed = [r.name for r in rows if r.ok is False]
    if missed:
        print(f"\nmissed: {', '.join(missed)}")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
