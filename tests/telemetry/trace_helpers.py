"""Tracing into the SDK's in-memory exporter through the real batching processor, spans read back."""

from __future__ import annotations

from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from synapse_nb.telemetry import open_tracing
from synapse_nb.telemetry.export import Tracing


class Traced:
    """A Tracing pipeline (the real batching processor) whose spans land in memory."""

    def __init__(
        self, *, content: bool = False, secrets: tuple[str, ...] = (), metric_reader: MetricReader | None = None,
    ) -> None:
        self.memory = InMemorySpanExporter()
        self.tracing: Tracing = open_tracing(secrets=secrets, content=content, exporter=self.memory,
                                             metric_reader=metric_reader)

    def spans(self) -> list[ReadableSpan]:
        """Every span ended so far, exported (the batch flushed) and ordered by start time."""
        assert self.tracing.flush()
        return sorted(self.memory.get_finished_spans(), key=lambda s: s.start_time or 0)

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith(prefix)]
