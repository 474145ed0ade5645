"""The event sink that turns agent events into OpenTelemetry spans, nested as they happened.

- TurnStarted opens the turn's `invoke_agent` span (a child of whatever span is current in the cell,
  so a turn inside the user's own span joins that trace); TurnFinished / TurnFailed / TurnCancelled end it.
- ToolCallStarted opens an `execute_tool` span under its session's turn; ToolCallFinished ends it (a
  call recorded only when it finished, such as `%mcp call`, becomes a span of its own then).
- LlmCallFinished becomes a `chat` span with its real start and duration, under the tool call that
  caused it (a server's sampling request) or else under its session's turn.
- TaskCreated opens an MCP task's `mcp.task` span (task_spans.py), under the tool call that started it;
  TaskStatusChanged adds its status events and, at a terminal status, ends it.

`tool_scope(call_id)` makes a tool call's span the current span while the call runs (the agent enters
it around each call): the MCP SDK then sends that span's W3C trace context in the request's `_meta`, so
a traced server's spans join the turn's trace, and any span the tool makes nests under it.
"""

from __future__ import annotations

import datetime as _dt
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from ..events import (
    Event,
    LlmCallFinished,
    SessionStarted,
    TaskCreated,
    TaskStatusChanged,
    ToolCallFinished,
    ToolCallStarted,
    TurnCancelled,
    TurnFailed,
    TurnFinished,
    TurnStarted,
)
from . import attributes as attr
from .attributes import Content, Failure
from .task_spans import TaskSpans

__all__ = ["SpanSink", "ns"]

V = TypeVar("V")
_EPOCH = _dt.datetime(1970, 1, 1)
_MAX_OPEN = 10_000  # spans started and never ended (events lost) are ended oldest-first beyond this


def ns(at: _dt.datetime) -> int:
    """Nanoseconds since the epoch of a naive-UTC (or aware) datetime, exactly."""
    if at.tzinfo is not None:
        at = at.astimezone(_dt.UTC).replace(tzinfo=None)
    return (at - _EPOCH) // _dt.timedelta(microseconds=1) * 1000


def _after(start: _dt.datetime, duration_ms: float) -> int:
    return ns(start) + max(int(duration_ms * 1_000_000), 0)


class SpanSink:
    """An EventSink that makes spans of turns, model requests and tool calls: quick (spans are only made
    here; the processor exports them elsewhere), thread-safe, shared by every session of a kernel."""

    def __init__(self, tracer: Tracer, content: Content) -> None:
        self._tracer = tracer
        self._content = content
        self._lock = threading.Lock()
        self._turns: OrderedDict[str, Span] = OrderedDict()  # session id -> its open turn span
        self._tools: OrderedDict[str, Span] = OrderedDict()  # tool call id -> its open span
        self._names: OrderedDict[str, str] = OrderedDict()  # session id -> session name
        self._tasks = TaskSpans(tracer, content.mask, self._tool_span, ns)

    def __call__(self, event: Event) -> None:
        if isinstance(event, ToolCallStarted):
            self._tool_started(event)
        elif isinstance(event, ToolCallFinished):
            self._tool_finished(event)
        elif isinstance(event, LlmCallFinished):
            self._llm_call(event)
        elif isinstance(event, TurnStarted):
            self._turn_started(event)
        elif isinstance(event, TurnFinished | TurnFailed | TurnCancelled):
            self._turn_ended(event)
        elif isinstance(event, SessionStarted):
            with self._lock:
                _remember(self._names, event.session_id, event.name)
        elif isinstance(event, TaskCreated):
            self._tasks.created(event)
        elif isinstance(event, TaskStatusChanged):
            self._tasks.changed(event)

    @contextmanager
    def tool_scope(self, call_id: str) -> Iterator[None]:
        """While inside, the span of tool call `call_id` (if it has one) is the current span of this task."""
        with self._lock:
            span = self._tools.get(call_id)
        if span is None:
            yield
            return
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            yield
        finally:
            otel_context.detach(token)

    def close(self) -> None:
        """End every span still open (their turns never ended: the kernel is closing)."""
        self._tasks.close()
        with self._lock:
            spans = [*self._tools.values(), *self._turns.values()]
            self._tools.clear()
            self._turns.clear()
        for span in spans:
            span.set_attribute("synapse.status", "unfinished")
            span.end()

    # -- turns

    def _turn_started(self, e: TurnStarted) -> None:
        with self._lock:
            name = self._names.get(e.session_id)
        span = self._tracer.start_span(
            attr.turn_span_name(), kind=SpanKind.INTERNAL, start_time=ns(e.at),
            attributes=attr.turn_start_attributes(e, self._content, name),
        )
        with self._lock:
            previous = self._turns.pop(e.session_id, None)
            _remember(self._turns, e.session_id, span)
        if previous is not None:  # its end never came (another sink's run of the session?): close it
            previous.set_attribute("synapse.status", "unfinished")
            previous.end()

    def _turn_ended(self, e: TurnFinished | TurnFailed | TurnCancelled) -> None:
        with self._lock:
            span = self._turns.pop(e.session_id, None)
        if span is None:
            return
        span.set_attributes(attr.turn_end_attributes(e, self._content))
        _fail(span, attr.turn_failure(e, self._content))
        span.end(end_time=ns(e.at))

    # -- tool calls

    def _tool_started(self, e: ToolCallStarted) -> None:
        span = self._tracer.start_span(
            attr.tool_span_name(e.tool), context=self._parent(e.session_id), kind=SpanKind.INTERNAL,
            start_time=ns(e.at), attributes=attr.tool_start_attributes(e, self._content),
        )
        with self._lock:
            _remember(self._tools, e.call.id, span)

    def _tool_finished(self, e: ToolCallFinished) -> None:
        with self._lock:
            span = self._tools.pop(e.call.id, None)
        if span is None:
            span = self._tracer.start_span(
                attr.tool_span_name(e.tool), context=self._parent(e.session_id), kind=SpanKind.INTERNAL,
                start_time=ns(e.started_at), attributes=attr.tool_start_attributes(e, self._content),
            )
        span.set_attributes(attr.tool_end_attributes(e, self._content))
        _fail(span, attr.tool_failure(e, self._content))
        span.end(end_time=_after(e.started_at, e.duration_ms))

    # -- model requests

    def _llm_call(self, e: LlmCallFinished) -> None:
        with self._lock:
            caller = self._tools.get(e.tool_call_id) if e.tool_call_id else None
        parent = trace.set_span_in_context(caller) if caller is not None else self._parent(e.session_id)
        span = self._tracer.start_span(
            attr.llm_span_name(e), context=parent, kind=SpanKind.CLIENT, start_time=ns(e.started_at),
            attributes=attr.llm_attributes(e),
        )
        _fail(span, attr.llm_failure(e, self._content))
        span.end(end_time=_after(e.started_at, e.duration_ms))

    def _tool_span(self, call_id: str) -> Span | None:
        with self._lock:
            return self._tools.get(call_id)

    def _parent(self, session_id: str) -> Context | None:
        """The context of the session's open turn; None (the current context) when it has none."""
        with self._lock:
            turn = self._turns.get(session_id) if session_id else None
        return trace.set_span_in_context(turn) if turn is not None else None


def _fail(span: Span, failure: Failure | None) -> None:
    if failure is not None:
        span.set_attribute("error.type", failure.error_type)
        span.set_status(Status(StatusCode.ERROR, failure.description))


def _remember(table: OrderedDict[str, V], key: str, value: V) -> None:
    """Keep `value` under `key`, forgetting the oldest entries beyond _MAX_OPEN (an evicted span is ended)."""
    table[key] = value
    while len(table) > _MAX_OPEN:
        _, old = table.popitem(last=False)
        if isinstance(old, Span):
            old.end()
