"""McpSpans: the client span of each MCP request and the `mcp.client.operation.duration` histogram, following
the OpenTelemetry MCP semantic conventions (development status, gen-ai/mcp.md).

A span is named `{mcp.method.name} {target}` (the tool or prompt name; the method alone otherwise), has kind
CLIENT, and is the current span while the request is sent, so it nests under the turn's `execute_tool` span
and the MCP SDK carries its trace context to the server in `_meta`. Attributes: `mcp.method.name`,
`mcp.protocol.version`, `jsonrpc.request.id`, `gen_ai.tool.name` / `gen_ai.prompt.name` and
`gen_ai.operation.name` (`execute_tool` for tools/call), `mcp.session.id` where the protocol has a session
id, `network.transport` (`pipe` for stdio, `tcp` for HTTP), `server.address` / `server.port`, and on failure
`error.type` (the JSON-RPC code, `tool_error`, or the exception type) with `rpc.response.status_code`.
Nothing of the arguments or results goes in; every value passes the kernel's secret mask.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from opentelemetry.metrics import Histogram, Meter
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import Attributes

from ..request_trace import McpRequestTrace

__all__ = ["DURATION_BUCKETS", "DURATION_METRIC", "McpSpans", "span_attributes"]

DURATION_METRIC = "mcp.client.operation.duration"
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""Seconds: the conventions' advice for MCP operations (they run from milliseconds to minutes)."""

_NETWORK = {"stdio": "pipe", "http": "tcp", "sse": "tcp"}
_METRIC_KEYS = ("mcp.method.name", "mcp.protocol.version", "gen_ai.tool.name", "gen_ai.prompt.name",
                "gen_ai.operation.name", "network.transport", "server.address", "server.port", "error.type",
                "rpc.response.status_code")
"""The histogram's attributes: the span's without the high-cardinality ones (request and session ids)."""


def span_name(trace: McpRequestTrace) -> str:
    target = trace.target_name
    return f"{trace.method_name} {target}" if target else trace.method_name


def span_attributes(trace: McpRequestTrace, mask: Callable[[str], str]) -> dict[str, str | int]:
    """The attributes of the request's span (masked), as they stand when it ends."""
    method = trace.method_name
    attrs: dict[str, str | int] = {"mcp.method.name": method, "synapse.mcp.server": trace.server}
    target = trace.target_name
    if target and method == "tools/call":
        attrs["gen_ai.tool.name"] = target
        attrs["gen_ai.operation.name"] = "execute_tool"
    elif target and method == "prompts/get":
        attrs["gen_ai.prompt.name"] = target
    optional: dict[str, str | int | None] = {
        "mcp.protocol.version": trace.protocol_version, "jsonrpc.request.id": trace.request_id,
        "mcp.session.id": trace.session_id, "network.transport": _NETWORK.get(trace.transport),
        "server.address": trace.server_address, "server.port": trace.server_port,
        "error.type": trace.error_type, "rpc.response.status_code": trace.status_code,
    }
    attrs.update({k: v for k, v in optional.items() if v is not None})
    return {k: mask(v) if isinstance(v, str) else v for k, v in attrs.items()}


class McpSpans:
    """A RequestTracer (request_trace.py): one client span per MCP request, and the duration histogram when a
    meter is given (metrics export on)."""

    def __init__(self, tracer: Tracer, mask: Callable[[str], str], meter: Meter | None = None) -> None:
        self._tracer = tracer
        self._mask = mask
        self._duration: Histogram | None = None
        if meter is not None:
            self._duration = meter.create_histogram(
                DURATION_METRIC, unit="s", explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
                description="The duration of an MCP request, from sending it until its answer came")

    @contextmanager
    def request(self, trace: McpRequestTrace) -> Iterator[None]:
        started = time.perf_counter()
        # named once the request is on the wire (its method and target are known then)
        with self._tracer.start_as_current_span(
            span_name(trace), kind=SpanKind.CLIENT, record_exception=False, set_status_on_exception=False,
        ) as span:
            try:
                yield
            finally:
                attrs = span_attributes(trace, self._mask)
                span.update_name(self._mask(span_name(trace)))
                span.set_attributes(attrs)
                if trace.error_type is not None:
                    span.set_status(Status(StatusCode.ERROR, trace.error_type))
                if self._duration is not None:
                    metric: Attributes = {k: attrs[k] for k in _METRIC_KEYS if k in attrs}
                    self._duration.record(time.perf_counter() - started, metric)
