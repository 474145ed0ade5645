"""TaskSpans: one span per MCP task's life, from its creation to its terminal status, by the server's clock.

A task outlives the request that created it (and maybe the kernel), so its span is its own: `mcp.task {tool}`,
kind INTERNAL, a child of the tool call's `execute_tool` span when that is still open (a `%mcp call` or a turn
waiting for it), else a trace of its own (a task followed again after a restart). Each status change is a span
event (`status`, with the status and, masked, its message); a terminal status ends the span, `failed` and
`cancelled` as errors. Attributes: `mcp.task.id`, `synapse.mcp.task.form`, `synapse.mcp.server`,
`gen_ai.tool.name`, `synapse.mcp.task.status` (the last one seen).
"""

from __future__ import annotations

import datetime as _dt
import threading
from collections import OrderedDict
from collections.abc import Callable

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from ..events import TaskCreated, TaskStatusChanged
from ..task_state import TaskState

__all__ = ["TaskSpans"]

_MAX_OPEN = 10_000  # tasks never seen ending (their kernel went away) are ended oldest-first beyond this


class TaskSpans:
    """The open spans of MCP tasks, keyed by task id; `tool_span(call_id)` finds the span of the tool call
    that started one. Thread-safe."""

    def __init__(self, tracer: Tracer, mask: Callable[[str], str], tool_span: Callable[[str], Span | None],
                 ns: Callable[[_dt.datetime], int]) -> None:
        self._tracer = tracer
        self._mask = mask
        self._tool_span = tool_span
        self._ns = ns
        self._lock = threading.Lock()
        self._open: OrderedDict[str, Span] = OrderedDict()

    def created(self, e: TaskCreated) -> None:
        task = e.task
        caller = self._tool_span(e.tool_call_id) if e.tool_call_id else None
        span = self._tracer.start_span(
            f"mcp.task {task.tool}", context=trace.set_span_in_context(caller) if caller is not None else None,
            kind=SpanKind.INTERNAL, start_time=self._ns(task.created_at or e.at), attributes={
                "mcp.task.id": task.task_id, "synapse.mcp.task.form": task.form, "synapse.mcp.server": task.server,
                "gen_ai.tool.name": task.tool, "synapse.mcp.task.status": task.status,
            })
        self._event(span, task, e.at)
        with self._lock:
            self._open[task.task_id] = span
            while len(self._open) > _MAX_OPEN:
                self._open.popitem(last=False)[1].end()
        if task.terminal:
            self._end(task, e.at)

    def changed(self, e: TaskStatusChanged) -> None:
        with self._lock:
            span = self._open.get(e.task.task_id)
        if span is None:
            return  # created in another kernel: its span was there
        self._event(span, e.task, e.at)
        span.set_attribute("synapse.mcp.task.status", e.task.status)
        if e.task.terminal:
            self._end(e.task, e.at)

    def close(self) -> None:
        """End the spans of tasks still open (the kernel closes; the tasks may go on on their servers)."""
        with self._lock:
            spans = list(self._open.values())
            self._open.clear()
        for span in spans:
            span.set_attribute("synapse.status", "unfinished")
            span.end()

    def _event(self, span: Span, task: TaskState, at: _dt.datetime) -> None:
        attributes: dict[str, str] = {"synapse.mcp.task.status": task.status}
        if task.status_message:
            attributes["synapse.mcp.task.status_message"] = self._mask(task.status_message)
        span.add_event("status", attributes=attributes, timestamp=self._ns(at))

    def _end(self, task: TaskState, at: _dt.datetime) -> None:
        with self._lock:
            span = self._open.pop(task.task_id, None)
        if span is None:
            return
        if task.status in ("failed", "cancelled"):
            span.set_attribute("error.type", f"task_{task.status}")
            span.set_status(Status(StatusCode.ERROR, self._mask(task.status_message or task.status)))
        span.end(end_time=self._ns(task.updated_at or at))
