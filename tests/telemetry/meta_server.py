"""A small MCP server (stdio) for the tracing tests: `meta` answers with the request `_meta` it received,
`count` with a number; run as `python meta_server.py`.

When OTEL_EXPORTER_OTLP_ENDPOINT is set it is a traced server too: it installs the OpenTelemetry SDK as
the process-global provider, so the MCP SDK's own server spans (`tools/call NAME`, parented by the
`traceparent` in `_meta`) are exported to the same collector and join the caller's trace.
"""

from __future__ import annotations

import json
import os
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations


def _trace_to_collector() -> Any:
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "meta-server"}))
    # one export per span: the test reads the collector right after the call, with no batch to wait for
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


def build() -> MCPServer:
    server = MCPServer("meta")

    @server.tool(structured_output=False, annotations=ToolAnnotations(readOnlyHint=True))
    def meta(ctx: Context) -> str:
        """The request's _meta, as JSON."""
        return json.dumps(dict(ctx.request_context.meta or {}), sort_keys=True, default=str)

    @server.tool(structured_output=False, annotations=ToolAnnotations(readOnlyHint=True))
    def count(n: int) -> str:
        """Count to n."""
        return " ".join(str(i) for i in range(1, n + 1))

    return server


if __name__ == "__main__":
    provider = _trace_to_collector() if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") else None
    try:
        build().run("stdio")
    finally:
        if provider is not None:
            provider.shutdown()
