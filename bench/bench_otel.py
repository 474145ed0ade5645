"""Tracing benchmark (row 15 of bench/run.py): what OpenTelemetry tracing adds to a turn.

    python bench/run.py --only 15

A turn with two tool calls (scripted model, in-process tools), untraced, against the same turn traced
(the span sink and tool scope, the SDK's batching processor) exporting over OTLP/HTTP to a collector
that cannot be reached (a closed port on 127.0.0.1): spans are made on the loop, the export fails in the
processor's worker thread, and the turn must not wait for it. Target: under 1 ms extra per turn.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import Measure, Row, Size, ainterleaved, fmt_seconds, median, run_async

from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tools import ToolRegistry, tool
from synapse_nb.protocols import EventSink, ToolScope
from synapse_nb.providers.scripted import ScriptedProvider

__all__ = ["row_otel"]


@tool
async def count(n: int) -> str:
    """Count to n."""
    return " ".join(str(i) for i in range(1, n + 1))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _turn(registry: ToolRegistry, sinks: list[EventSink], scope: ToolScope | None) -> None:
    script: list[Any] = [{"tool_calls": [{"name": "count", "arguments": {"n": 3}},
                                         {"name": "count", "arguments": {"n": 4}}]}, "done"]
    agent = Agent(ScriptedProvider(script), registry, sinks=sinks, tool_scope=scope)
    result = await agent.ask("count twice")
    if result.status != "finished" or len(result.tool_calls) != 2:
        raise RuntimeError(f"the benchmark turn did not run as scripted: {result}")


async def _otel_row(size: Size) -> Row:
    from synapse_nb.telemetry import open_tracing

    rounds = size.pick(3, 200)
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{_closed_port()}"
    registry = ToolRegistry()
    registry.register(count)
    tracing = open_tracing()
    try:
        async def untraced() -> None:
            await _turn(registry, [], None)

        async def traced() -> None:
            await _turn(registry, [tracing.sink], tracing.sink.tool_scope)

        s = await ainterleaved({"off": untraced, "on": traced}, rounds, warmup=3)
    finally:
        registry.close()
        tracing.close(timeout=1.0)
    base, measured = median(s["off"]), median(s["on"])
    extra = measured - base
    ok = extra < 1e-3
    return Row(
        "15", "OpenTelemetry tracing on vs off, per turn (2 tool calls), collector unreachable",
        Measure("untraced turn", base), Measure("traced turn, OTLP export failing", measured),
        "< 1 ms extra per turn", ok,
        note=f"{fmt_seconds(extra)} per turn for 5 spans (turn, 2 model requests, 2 tool calls); the failing "
             f"export runs in the batching processor's thread; median of {rounds}",
        why="" if ok else
            f"tracing costs {fmt_seconds(extra)} per turn: profile telemetry/spans.py (span creation, attribute "
            "building) and check that no export runs on the event loop",
    )


def row_otel(size: Size) -> list[Row]:
    return [run_async(_otel_row(size))]
