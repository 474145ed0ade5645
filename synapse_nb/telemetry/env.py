"""What the environment says about tracing (the standard OTEL_* variables and SYNAPSE_OTEL_CONTENT): read
without importing opentelemetry, by the package's door (telemetry/__init__.py) and by export.py alike."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from urllib.parse import unquote

__all__ = [
    "CONTENT_ENV", "MISSING_EXTRA", "available", "content_wanted", "endpoint", "header_secrets", "metrics_wanted",
    "wanted",
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
