"""Agent loop benchmarks: overhead per iteration, and concurrency of the tool calls of one reply.

    python bench/bench_agent.py [--small] [--check]

Every figure is compared with a baseline measured in the same run on the same machine:
- overhead: a turn of N iterations (scripted model -> in-process tool -> ...) against calling the
  same tool directly N times; target: under 1 ms of agent overhead per iteration.
- concurrency: one reply asking for 8 tool calls of D ms each, against a reply asking for one such
  call; target: the 8 take under 1.3x the time of one (async tools and sync tools in threads).
`--check` exits 1 when a target is missed (the tests only run `--small`, without `--check`).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tools import ToolRegistry, tool
from synapse_nb.providers.scripted import ScriptedProvider


@dataclass(frozen=True)
class Row:
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


@tool
async def noop(i: int = 0) -> str:
    """Return at once."""
    return "ok"


def registry_with(*fns: Callable[..., Any]) -> ToolRegistry:
    registry = ToolRegistry()
    for fn in fns:
        registry.register(fn)
    return registry


async def timed(fn: Callable[[], Awaitable[Any]], repeats: int) -> float:
    """Median seconds of `repeats` runs (after one warm-up run)."""
    await fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


async def overhead(iterations: int, repeats: int) -> list[Row]:
    registry = registry_with(noop)

    async def direct() -> None:
        for i in range(iterations):
            await registry.call("noop", {"i": i})

    async def agent_turn() -> None:
        script: list[Any] = [{"tool": "noop", "arguments": {"i": i}} for i in range(iterations)] + ["done"]
        agent = Agent(ScriptedProvider(script), registry, max_iterations=iterations + 1)
        result = await agent.ask("loop")
        if result.status != "finished" or result.iterations != iterations + 1:
            raise RuntimeError(f"the benchmark turn did not run as scripted: {result}")

    try:
        direct_us = await timed(direct, repeats) / iterations * 1e6
        agent_us = await timed(agent_turn, repeats) / iterations * 1e6
    finally:
        registry.close()
    extra = agent_us - direct_us
    return [
        Row("tool called directly (per call)", direct_us, "us"),
        Row(f"agent iteration, {iterations}-iteration turn", agent_us, "us", baseline=direct_us),
        Row("agent overhead per iteration", extra, "us", target="< 1,000 us", ok=extra < 1000),
    ]


async def concurrency(seconds: float, repeats: int) -> list[Row]:
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

    registry = registry_with(wait_async, wait_sync)

    def turn(name: str, calls: int) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            script = [{"tool_calls": [{"name": name, "arguments": {"i": i}} for i in range(calls)]}, "done"]
            result = await Agent(ScriptedProvider(script), registry).ask("wait")
            if result.status != "finished" or len(result.tool_calls) != calls:
                raise RuntimeError(f"the benchmark turn did not run as scripted: {result}")

        return run

    ms = seconds * 1000
    rows: list[Row] = []
    try:
        for kind in ("async", "sync"):
            one = await timed(turn(f"wait_{kind}", 1), repeats) * 1000
            eight = await timed(turn(f"wait_{kind}", 8), repeats) * 1000
            rows.append(Row(f"1 x {kind} tool of {ms:.0f} ms in a reply", one, "ms"))
            rows.append(Row(f"8 x {kind} tools of {ms:.0f} ms in one reply", eight, "ms", baseline=one,
                            target="< 1.3x", ok=eight < 1.3 * one))
    finally:
        registry.close()
    return rows


def table(rows: list[Row]) -> str:
    header = ["measurement", "value", "vs baseline", "target", ""]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---", "---:", "---:", "---", "---"]) + "|"]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines)


async def main_async(small: bool) -> list[Row]:
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
