"""OpenTelemetry traces of agent turns (the optional `otel` extra): when tracing is on, and opening it.

Tracing is on when `SynapseMagics.otel` says so, or, when that is left unset, when the standard
`OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) variable names a collector, unless
`OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. Message and argument content goes into spans
only with `SYNAPSE_OTEL_CONTENT=1`, masked like the history. Each MCP request is a client span too
(mcp_spans.py); its duration also goes to the `mcp.client.operation.duration` histogram when metrics export
is on: `OTEL_METRICS_EXPORTER=otlp`, or an `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`, while tracing is.

This module stays light: nothing imports opentelemetry until `open_tracing` is called, so a kernel that
does not trace pays nothing. Modules: attributes.py (events -> span attributes, pure), spans.py (the
event sink that turns events into spans), export.py (provider, batching export, the one warning).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .env import (
    CONTENT_ENV,
    MISSING_EXTRA,
    available,
    content_wanted,
    endpoint,
    header_secrets,
    metrics_wanted,
    wanted,
)

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.trace.export import SpanExporter

    from .export import Tracing

__all__ = [
    "CONTENT_ENV", "MISSING_EXTRA", "available", "content_wanted", "endpoint", "header_secrets", "metrics_wanted",
    "open_tracing", "wanted",
]

def open_tracing(
    *, secrets: Iterable[str] = (), content: bool | None = None, exporter: SpanExporter | None = None,
    metric_reader: MetricReader | None = None,
) -> Tracing:
    """Start tracing: a tracer provider of this kernel's own (never the process-global one), exporting
    in batches off the event loop to the OTLP/HTTP endpoint of the environment (or `exporter`). Metrics
    (MCP request durations) go to `metric_reader`, or, when `metrics_wanted()`, to the OTLP/HTTP metrics
    endpoint of the environment every minute (`OTEL_METRIC_EXPORT_INTERVAL`).

    Raises ImportError (with MISSING_EXTRA) when the extra is not installed."""
    if not available():
        raise ImportError(MISSING_EXTRA)
    from .export import Tracing

    if metric_reader is None and metrics_wanted():
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        metric_reader = PeriodicExportingMetricReader(OTLPMetricExporter())
    return Tracing.open(
        secrets=[*secrets, *header_secrets()], content=content_wanted() if content is None else content,
        exporter=exporter, metric_reader=metric_reader,
    )
