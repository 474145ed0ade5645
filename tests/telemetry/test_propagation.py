"""Trace context reaches MCP servers: a real server over stdio (meta_server.py) answers with the `_meta` it
received, whose W3C `traceparent` must name the tool call's own span; without tracing, none is sent."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tools import ToolRegistry
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.providers.scripted import ScriptedProvider
from tests.telemetry.trace_helpers import Traced

pytestmark = [pytest.mark.slow, pytest.mark.process]

META_SERVER = str(Path(__file__).with_name("meta_server.py"))
SCRIPT = [{"tool_calls": [{"name": "meta__meta", "arguments": {}}, {"name": "meta__count", "arguments": {"n": 3}}]},
          "ok"]


async def run_turn(traced: Traced | None) -> dict[str, Any]:
    """One turn that calls both tools of the server; the `_meta` the server saw."""
    async with McpHub() as hub:
        await hub.connect("meta", command=sys.executable, args=[META_SERVER])
        sink = traced.tracing.sink if traced is not None else None
        agent = Agent(ScriptedProvider(list(SCRIPT)), ToolRegistry(hub), sinks=[sink] if sink is not None else [],
                      tool_scope=sink.tool_scope if sink is not None else None)
        result = await agent.ask("what did the server see?")
    assert result.status == "finished"
    calls = {c.tool: c for c in result.tool_calls}
    assert calls["count"].result is not None
    assert calls["count"].result.text == "1 2 3"
    meta_result = calls["meta"].result
    assert meta_result is not None
    assert not meta_result.is_error
    seen: dict[str, Any] = json.loads(meta_result.text)
    return seen


@pytest.mark.anyio
async def test_the_tool_call_span_travels_to_the_server_in_meta(traced: Traced) -> None:
    seen = await run_turn(traced)
    [span] = traced.named("execute_tool meta")
    ctx = span.context
    assert seen["traceparent"] == f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"
    assert ctx.trace_flags.sampled
    [turn] = traced.named("invoke_agent")
    assert span.parent is not None
    assert span.parent.span_id == turn.context.span_id
    attrs = dict(span.attributes or {})
    assert attrs.items() >= {
        "gen_ai.tool.name": "meta", "synapse.tool": "meta__meta", "synapse.server": "meta",
        "gen_ai.tool.type": "extension",
    }.items()
    [count] = traced.named("execute_tool count")
    assert dict(count.attributes or {})["synapse.server"] == "meta"


@pytest.mark.anyio
async def test_without_tracing_no_trace_context_is_sent() -> None:
    seen = await run_turn(None)
    assert "traceparent" not in seen
