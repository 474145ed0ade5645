"""MCP client spans and the `mcp.client.operation.duration` histogram (OpenTelemetry MCP semantic conventions),
against real servers: meta_server.py over stdio (2026-07-28, stateless) and the npm reference server over
streamable HTTP (2025-11-25, a session with an id). Spans land in the SDK's in-memory exporter through the real
batching processor, metrics in its in-memory reader."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.trace import SpanKind, StatusCode

from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tools import ToolRegistry
from synapse_nb.errors import McpError
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.providers.scripted import ScriptedProvider
from tests.support.local_servers import free_port, wait_listening
from tests.support.npm_servers import EVERYTHING, node_for
from tests.telemetry.trace_helpers import Traced

pytestmark = [pytest.mark.anyio, pytest.mark.process]

META_SERVER = str(Path(__file__).with_name("meta_server.py"))
SECRET = "planted-secret-token-77"
SCRIPT = [{"tool_calls": [{"name": "meta__meta", "arguments": {}}, {"name": "meta__count", "arguments": {"n": 3}}]},
          "ok"]


@pytest.fixture
def metered() -> Iterator[tuple[Traced, InMemoryMetricReader]]:
    """Tracing into memory, with metrics export on (an in-memory reader)."""
    reader = InMemoryMetricReader()
    traced = Traced(secrets=(SECRET,), metric_reader=reader)
    yield traced, reader
    traced.tracing.close()


def durations(reader: InMemoryMetricReader) -> list[HistogramDataPoint]:
    data = reader.get_metrics_data()
    assert data is not None
    return [point for rm in data.resource_metrics for sm in rm.scope_metrics for metric in sm.metrics
            if metric.name == "mcp.client.operation.duration" and metric.unit == "s"
            for point in metric.data.data_points if isinstance(point, HistogramDataPoint)]


async def test_a_turn_s_tool_calls_are_client_spans_under_execute_tool(
        metered: tuple[Traced, InMemoryMetricReader]) -> None:
    traced, reader = metered
    async with McpHub(tracer=lambda: traced.tracing.mcp) as hub:
        await hub.connect("meta", command=sys.executable, args=[META_SERVER])
        sink = traced.tracing.sink
        agent = Agent(ScriptedProvider(list(SCRIPT)), ToolRegistry(hub), sinks=[sink], tool_scope=sink.tool_scope)
        result = await agent.ask("what did the server see?")
    assert result.status == "finished"
    meta_result = next(c.result for c in result.tool_calls if c.tool == "meta")
    assert meta_result is not None
    seen = json.loads(meta_result.text)

    for tool in ("meta", "count"):
        [execute] = traced.named(f"execute_tool {tool}")
        [client] = traced.named(f"tools/call {tool}")
        assert client.kind == SpanKind.CLIENT
        assert client.parent is not None
        assert client.parent.span_id == execute.context.span_id
        attrs = dict(client.attributes or {})
        assert attrs.items() >= {
            "mcp.method.name": "tools/call", "gen_ai.tool.name": tool, "gen_ai.operation.name": "execute_tool",
            "mcp.protocol.version": "2026-07-28", "network.transport": "pipe",
        }.items()
        assert str(attrs["jsonrpc.request.id"]).isdigit()
        assert "mcp.session.id" not in attrs  # stateless: no session
        assert "error.type" not in attrs
        assert client.status.status_code != StatusCode.ERROR
    # the server is the client span's child: its trace context travelled in _meta
    [meta_span] = traced.named("tools/call meta")
    ctx = meta_span.context
    assert seen["traceparent"] == f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"
    ids = {dict(s.attributes or {})["jsonrpc.request.id"] for s in traced.named("tools/call")}
    assert len(ids) == 2

    points = {dict(p.attributes or {})["gen_ai.tool.name"]: p for p in durations(reader)
              if dict(p.attributes or {}).get("mcp.method.name") == "tools/call"}
    assert set(points) == {"meta", "count"}
    for point in points.values():
        assert point.count == 1
        assert point.sum > 0
        assert "jsonrpc.request.id" not in dict(point.attributes or {})  # no high-cardinality ids in metrics
        assert dict(point.attributes or {})["mcp.protocol.version"] == "2026-07-28"


async def test_failures_set_error_type_and_a_hub_without_tracer_makes_no_span(traced: Traced) -> None:
    async with McpHub(tracer=lambda: traced.tracing.mcp) as hub:
        await hub.connect("meta", command=sys.executable, args=[META_SERVER])
        bad = await hub.call("meta__count", {"n": "three"})  # the server's validation: an isError result
        assert bad.is_error
        with pytest.raises(McpError):
            await hub.read_resource("meta", "nothing://here")  # answered with a JSON-RPC error
    [tool] = traced.named("tools/call count")
    assert dict(tool.attributes or {})["error.type"] == "tool_error"
    assert tool.status.status_code == StatusCode.ERROR
    [read] = traced.named("resources/read")
    attrs = dict(read.attributes or {})
    assert attrs["mcp.method.name"] == "resources/read"
    assert attrs["error.type"] == attrs["rpc.response.status_code"]
    assert int(str(attrs["error.type"])) < 0  # a JSON-RPC error code

    before = len(traced.spans())
    async with McpHub() as hub:
        await hub.connect("meta", command=sys.executable, args=[META_SERVER])
        await hub.call("meta__count", {"n": 2})
    assert len(traced.spans()) == before


@pytest.fixture
def everything_http() -> Iterator[str]:
    node = node_for(EVERYTHING)
    port = free_port()
    proc = subprocess.Popen([node, str(EVERYTHING), "streamableHttp"], env={**os.environ, "PORT": str(port)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not wait_listening(proc, port, cpu=30):
            pytest.fail("server-everything did not listen over streamable HTTP")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.node
async def test_a_stateful_http_session_gives_its_id_and_no_secret_reaches_a_span(
        everything_http: str, traced: Traced) -> None:
    traced.tracing.add_secret(SECRET)
    async with McpHub(tracer=lambda: traced.tracing.mcp) as hub:
        info = await hub.connect("ev", url=everything_http, headers={"Authorization": f"Bearer {SECRET}"})
        assert info.protocol == "2025-11-25"
        assert (await hub.call("ev__echo", {"message": "hi"})).text == "Echo: hi"
        await hub.get_prompt("ev", "args-prompt", {"city": "Lyon"})
    [call] = traced.named("tools/call echo")
    attrs: dict[str, Any] = dict(call.attributes or {})
    assert attrs.items() >= {"mcp.protocol.version": "2025-11-25", "network.transport": "tcp",
                             "server.address": "127.0.0.1"}.items()
    assert attrs["mcp.session.id"]
    assert isinstance(attrs["server.port"], int)
    [prompt] = traced.named("prompts/get args-prompt")
    assert dict(prompt.attributes or {})["gen_ai.prompt.name"] == "args-prompt"
    assert dict(prompt.attributes or {})["mcp.session.id"] == attrs["mcp.session.id"]
    everything = json.dumps([dict(s.attributes or {}) for s in traced.spans()] + [s.name for s in traced.spans()])
    assert SECRET not in everything
    assert "Lyon" not in everything  # no arguments in spans
