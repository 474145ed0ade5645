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

import importlib.util
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import unquote

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.trace.export import SpanExporter

    from .export import Tracing

__all__ = [
    "CONTENT_ENV", "MISSING_EXTRA", "available", "content_wanted", "endpoint", "header_secrets", "metrics_wanted",
    "open_tracing", "wanted",
]

CONTENT_ENV = "SYNAPSE_OTEL_CONTENT"
"""`1` (or true/yes/on) puts prompts, answers, tool arguments and results into spans, masked."""

MISSING_EXTRA = "OpenTelemetry tracing needs the otel extra: pip install 'synapse_nb[otel]'"
"""The one line shown when tracing is asked for and the SDK or the OTLP/HTTP exporter is missing."""

_ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_HEADER_VARS = ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS")
_REQUIRED = ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")
_DEFAULT_ENDPOINT = "http://localhost:4318/"
_TRUE = ("1", "true", "yes", "on")


def wanted(setting: bool | None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether to trace: `setting` (SynapseMagics.otel) when set, else whether the environment names a collector."""
    env = os.environ if environ is None else environ
    if setting is not None:
        return setting
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return any(env.get(name, "").strip() for name in _ENDPOINT_VARS)


def metrics_wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether MCP request durations are exported as metrics too (asked for explicitly: `OTEL_METRICS_EXPORTER`
    naming otlp, or a metrics endpoint; `OTEL_METRICS_EXPORTER=none` says no)."""
    env = os.environ if environ is None else environ
    exporters = {e.strip().lower() for e in env.get("OTEL_METRICS_EXPORTER", "").split(",") if e.strip()}
    if "none" in exporters:
        return False
    return "otlp" in exporters or bool(env.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "").strip())


def endpoint(environ: Mapping[str, str] | None = None) -> str:
    """Where spans go, as the OTLP/HTTP exporter resolves it from the environment (for messages and
    `%synapse status`; light: imports no SDK). Show it through masking.mask_url: a URL may carry a token."""
    env = os.environ if environ is None else environ
    traces = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return traces
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or _DEFAULT_ENDPOINT
    return base.rstrip("/") + "/v1/traces"


def content_wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether prompts, answers, arguments and results go into spans (`SYNAPSE_OTEL_CONTENT=1`)."""
    env = os.environ if environ is None else environ
    return env.get(CONTENT_ENV, "").strip().lower() in _TRUE


def header_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of the OTLP exporter's headers (`k=v,k2=v2`, URL-encoded): credentials for the collector,
    so secrets of the history, the display and the spans like any header value."""
    env = os.environ if environ is None else environ
    values: list[str] = []
    for name in _HEADER_VARS:
        for pair in env.get(name, "").split(","):
            _, sep, value = pair.partition("=")
            if sep and unquote(value).strip():
                values.append(unquote(value).strip())
    return values


def available() -> bool:
    """Whether the `otel` extra (the SDK and the OTLP/HTTP exporter) is installed (imports nothing heavy)."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in _REQUIRED)
    except (ImportError, ValueError):  # a parent package missing, or a module blocked in sys.modules
        return False


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
