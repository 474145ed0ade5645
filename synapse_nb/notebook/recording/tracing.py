"""KernelTracing: one kernel's OpenTelemetry tracing, opened on first use while wanted, closed when not."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...telemetry.export import Tracing
    from ...telemetry.mcp_spans import McpSpans
    from ...telemetry.spans import SpanSink
    from ..secrets import SecretRegistry

__all__ = ["KernelTracing"]

logger = logging.getLogger("synapse_nb.notebook")


class KernelTracing:
    """Tracing of one kernel: on while `wanted()` says so (`SynapseMagics.otel`, else the standard
    OTEL_EXPORTER_OTLP_* variables), never opened again once `closed()`. Its spans are masked with the
    kernel's `secrets`, and the collector's header values join them."""

    def __init__(
        self, secrets: SecretRegistry, *, wanted: Callable[[], bool | None], closed: Callable[[], bool]
    ) -> None:
        self._secrets = secrets
        self._wanted = wanted
        self._closed = closed
        self._tracing: Tracing | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._said = False  # the missing-extra line was given

    def sink(self) -> SpanSink | None:
        """The span sink while tracing is on, opened on first use; None when off. Tracing asked for without
        the otel extra installed says so in one line, once, and the turn runs untraced."""
        from ... import telemetry

        if not telemetry.wanted(self._wanted()):
            self.close()
            return None
        if self._tracing is None and not self._closed():
            for value in telemetry.header_secrets():  # the collector's credentials: secrets everywhere
                self._secrets.add(value)
            try:
                self._tracing = telemetry.open_tracing(secrets=self._secrets.values)
            except ImportError:
                if not self._said:
                    self._said = True
                    logger.warning("%s", telemetry.MISSING_EXTRA)
                return None
            self._unsubscribe = self._secrets.subscribe(self._tracing.add_secret, known=False)
        return self._tracing.sink if self._tracing is not None else None

    def requests(self) -> McpSpans | None:
        """The maker of MCP client spans while tracing is on (opened on first use, as `sink`), else None."""
        return self._tracing.mcp if self.sink() is not None and self._tracing is not None else None

    @property
    def pipeline(self) -> Tracing | None:
        """The open tracing pipeline (for `%synapse status`), or None: off, or not opened yet."""
        return self._tracing

    def flush(self) -> bool:
        """Export the spans of ended turns now, in this thread (they otherwise go in batches, off the loop);
        False when tracing is off. A collector that cannot be reached is said once, as always."""
        return self._tracing.flush() if self._tracing is not None else False

    def close(self) -> None:
        """Stop tracing: open spans end, queued ones get a bounded moment to export."""
        tracing, self._tracing = self._tracing, None
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if tracing is not None:
            tracing.close()
