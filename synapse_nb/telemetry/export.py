"""The kernel's OpenTelemetry pipeline: a tracer provider of its own, batching export off the event loop,
and the one warning when the collector cannot be reached.

Spans go through the SDK's BatchSpanProcessor, whose worker thread does every export, so a slow or dead
collector never holds up a cell. The OTLP/HTTP exporter is configured by the standard variables
(`OTEL_EXPORTER_OTLP_ENDPOINT`, `..._HEADERS`, `..._TIMEOUT`; `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`;
`OTEL_BSP_*`). Its own retry and failure log lines are kept out of the notebook: the first failed export
is said once, as one warning of the `synapse_nb.telemetry` logger, and later failures only counted.

The provider is never made the process-global one: the user's own OpenTelemetry setup is left alone, and
the extension's spans stop when it is unloaded.
"""

from __future__ import annotations

import atexit
import logging
import re
import socket
import threading
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from .._version import __version__
from ..masking import SecretMask, mask_url
from .attributes import AGENT_NAME, Content
from .env import endpoint
from .mcp_spans import McpSpans
from .spans import SpanSink

__all__ = ["Tracing", "endpoint"]

logger = logging.getLogger("synapse_nb.telemetry")

_EXPORTER_LOGGER = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
_ERRNO = re.compile(r"\[Errno -?\d+\][^'\")]*")
_EXIT_TIMEOUT = 2.0  # seconds the last spans get at interpreter exit
_PROBE_TIMEOUT = 2.0


class _Quiet(logging.Filter):
    """Keeps the OTLP exporter's own log lines (one per retry) out of the notebook, remembering those of
    the export in progress: one may say why it failed."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if len(self.lines) < 20:
            self.lines.append(record.getMessage())
        return False

    def reason(self) -> str | None:
        """The first line that says more than "failed due to timeout, max retries or shutdown"."""
        return next((line for line in self.lines if "due to timeout, max retries" not in line), None)


class _WarnOnce(SpanExporter):
    """Wraps the real exporter: the first failed export is one warning; the rest are counted, not said."""

    def __init__(self, inner: SpanExporter, where: str, mask: SecretMask, quiet: _Quiet) -> None:
        self.inner = inner
        self.where = where
        self.mask = mask
        self.quiet = quiet
        self.failures = 0
        self.warned = False
        self._shut = False
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.quiet.lines = []
        reason: str | None = None
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # an exporter that raises must not reach the SDK's log (and the notebook)
            result, reason = SpanExportResult.FAILURE, f"{type(exc).__name__}: {exc}"
        if result is SpanExportResult.SUCCESS:
            return result
        self.failures += 1
        if not self.warned:
            self.warned = True
            why = reason or self.quiet.reason() or _probe(self.where)
            logger.warning(
                "OpenTelemetry: could not export spans to %s (%s); spans are dropped while it cannot be reached "
                "(this is said once)", mask_url(self.where), _reason(self.mask(why)),
            )
        return result

    def shutdown(self) -> None:
        self.abort()

    def abort(self) -> None:
        """Shut the real exporter down (once): a retry in progress stops, later exports fail at once."""
        with self._lock:
            if self._shut:
                return
            self._shut = True
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _probe(url: str) -> str:
    """Why the collector did not answer, when the exporter did not say: one TCP connect, bounded, once per
    pipeline, in the thread that exports (the processor's worker; the caller of an explicit flush)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "localhost", port), timeout=_PROBE_TIMEOUT):
            return "it accepts connections but did not take the spans in time"
    except OSError as exc:
        return str(exc) or type(exc).__name__


def _reason(text: str) -> str:
    """The useful part of a requests/urllib3 error (`[Errno 111] Connection refused`), else the text, bounded."""
    found = _ERRNO.search(text)
    if found:
        return found.group(0).strip()
    text = " ".join(text.split())
    return (text[:200] + "...") if len(text) > 200 else (text or "no answer")


class Tracing:
    """Tracing in one kernel: the provider, its batching processor, `sink` (the turns' span sink) and `mcp`
    (the client spans of MCP requests, and their duration histogram when `meters` exports metrics).

    `close` ends open spans, exports what is queued (bounded) and stops the worker thread.
    """

    def __init__(
        self, provider: TracerProvider, processor: BatchSpanProcessor, exporter: _WarnOnce, sink: SpanSink,
        mask: SecretMask, mcp: McpSpans | None = None, meters: MeterProvider | None = None,
    ) -> None:
        self.provider = provider
        self.processor = processor
        self.exporter = exporter
        self.sink = sink
        self.mcp = mcp if mcp is not None else McpSpans(provider.get_tracer("synapse_nb.mcp"), mask.mask)
        self.meters = meters
        self._mask = mask
        self._closed = False
        self._lock = threading.Lock()

    @classmethod
    def open(
        cls, *, secrets: Iterable[str] = (), content: bool = False, exporter: SpanExporter | None = None,
        metric_reader: MetricReader | None = None,
    ) -> Tracing:
        """Build the pipeline (`exporter`: OTLP/HTTP from the environment when None); metrics go to
        `metric_reader` when given (none are made without one)."""
        mask = SecretMask(secrets)
        quiet = _Quiet()
        logging.getLogger(_EXPORTER_LOGGER).addFilter(quiet)
        where = endpoint()
        wrapped = _WarnOnce(exporter if exporter is not None else OTLPSpanExporter(), where, mask, quiet)
        resource = Resource.create({SERVICE_VERSION: __version__})
        if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
            resource = resource.merge(Resource({SERVICE_NAME: AGENT_NAME}))
        provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        processor = BatchSpanProcessor(wrapped)
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("synapse_nb", __version__)
        meters = MeterProvider([metric_reader], resource=resource, shutdown_on_exit=False) if metric_reader else None
        mcp = McpSpans(provider.get_tracer("synapse_nb.mcp", __version__), mask.mask,
                       meters.get_meter("synapse_nb.mcp", __version__) if meters is not None else None)
        tracing = cls(provider, processor, wrapped, SpanSink(tracer, Content(enabled=content, mask=mask.mask)), mask,
                      mcp, meters)
        atexit.register(tracing._at_exit)
        return tracing

    @property
    def export_failed(self) -> bool:
        """Whether an export has failed (the warning was given)."""
        return self.exporter.warned

    def add_secret(self, value: str) -> None:
        """Mask `value` in every span attribute from now on."""
        self._mask.add_secret(value)

    def flush(self) -> bool:
        """Export every ended span now, in the calling thread (tests; before a kernel shuts down); False once
        closed. Turns never wait for this: their spans go in batches from the processor's worker thread."""
        spans = self.processor.force_flush()
        return spans and (self.meters is None or self.meters.force_flush())

    def close(self, timeout: float = 5.0) -> None:
        """End open spans and export what is queued, waiting at most `timeout` seconds; then stop.

        A collector known to be unreachable is not waited for at all; one that stops answering now
        has its retries cut short after `timeout` (the SDK's own shutdown could wait 30 s)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        atexit.unregister(self._at_exit)
        self.sink.close()
        if self.exporter.warned:
            self.exporter.abort()
        done = threading.Thread(target=self._shutdown, name="synapse_nb: OpenTelemetry shutdown", daemon=True)
        done.start()
        done.join(timeout)
        if done.is_alive():
            self.exporter.abort()

    def _shutdown(self) -> None:
        try:
            self.provider.shutdown()  # the processor exports what is queued, then its worker ends
            if self.meters is not None:
                self.meters.shutdown()  # the reader exports the last measurements
        finally:
            logging.getLogger(_EXPORTER_LOGGER).removeFilter(self.exporter.quiet)

    def _at_exit(self) -> None:
        self.close(timeout=_EXIT_TIMEOUT)
