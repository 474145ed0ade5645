"""Maps each agent / hub event to the row it becomes in one history relation (pure; no I/O).

- SessionStarted -> sessions; MessageAdded -> messages; LlmCallFinished -> llm_calls;
  ToolCallFinished -> tool_calls; ServerEvent -> server_events; TaskCreated and TaskStatusChanged ->
  task_events (event `created` / `status`; the `tasks` view folds them into one row per task);
  TurnFinished / TurnFailed / TurnCancelled -> turns (one row per ended turn, written at its end;
  status finished | failed | cancelled | budget_exceeded).
- TurnStarted writes nothing itself: `Recorder` remembers its prompt, model and start time until the
  turn ends, so the turn row is complete without updating rows later. A turn whose process died
  before it ended has no row (its messages and calls are recorded as they happened).
- ToolCallStarted and TextDelta write nothing: ToolCallFinished carries the whole call, and the full
  assistant text arrives as a MessageAdded.

Rows hold JSON-native values (timestamps as ISO strings, JSON columns as nested values); the redactor
then makes them safe to write.
"""

from __future__ import annotations

import datetime as _dt
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..events import (
    Event,
    LlmCallFinished,
    MessageAdded,
    ServerEvent,
    SessionStarted,
    TaskCreated,
    TaskStatusChanged,
    ToolCallFinished,
    TurnCancelled,
    TurnFailed,
    TurnFinished,
    TurnStarted,
)
from ..task_state import TaskState
from ..types import ContentBlock, ToolResult, Usage

__all__ = ["Recorder", "Row", "timestamp"]

Row = tuple[str, dict[str, Any]]
"""(relation, column -> value)."""

_MAX_OPEN_TURNS = 10_000  # turns started but never ended are forgotten oldest-first beyond this


def timestamp(value: _dt.datetime | None) -> str | None:
    """A naive-UTC ISO string; aware datetimes are converted to UTC first."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(_dt.UTC).replace(tzinfo=None)
    return value.isoformat(sep=" ")


class Recorder:
    """Turns events into rows; keeps only the starts of turns in flight. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._turns: OrderedDict[str, TurnStarted] = OrderedDict()

    def rows(self, event: Event) -> list[Row]:
        """The rows `event` becomes (none for events that are not recorded).

        Looked up by the event's exact type (events are final dataclasses): a turn streams a TextDelta per
        token through here, and a miss costs a dict lookup and two isinstance checks."""
        kind = type(event)
        plain = _PLAIN.get(kind)
        if plain is not None:
            relation, row = plain
            return [(relation, row(event))]
        if isinstance(event, TurnStarted):
            with self._lock:
                self._turns[event.turn_id] = event
                while len(self._turns) > _MAX_OPEN_TURNS:
                    self._turns.popitem(last=False)
            return []
        if isinstance(event, _TURN_ENDS):
            with self._lock:
                start = self._turns.pop(event.turn_id, None)
            return [("turns", _turn_row(event, start))]
        return []


def _session_row(e: SessionStarted) -> dict[str, Any]:
    return {
        "session_id": e.session_id,
        "name": e.name,
        "created_at": timestamp(e.at),
        "model": e.model,
        "notebook": e.notebook,
        "kernel_id": e.kernel_id,
    }


def _message_row(e: MessageAdded) -> dict[str, Any]:
    m = e.message
    tool_results: dict[str, Any] | None = None
    if m.role == "tool":
        result = e.result or ToolResult(
            content=(ContentBlock("text", text=m.content), *m.images), is_error=m.is_error
        )
        tool_results = result.to_dict()
    return {
        "message_id": e.message_id,
        "session_id": e.session_id,
        "seq": e.seq,
        "role": m.role,
        "content": m.content,
        "tool_call_id": m.tool_call_id,
        "model": e.model,
        "created_at": timestamp(e.at),
        "tool_calls": [c.to_dict() for c in m.tool_calls] if m.tool_calls else None,
        "tool_results": tool_results,
    }


def _tool_call_row(e: ToolCallFinished) -> dict[str, Any]:
    result = e.result
    row = {
        "tool_call_id": e.call.id,
        "session_id": e.session_id or None,  # empty: called by hand outside any session
        "message_id": e.message_id,
        "server": e.server,
        "tool": e.tool,
        "arguments": dict(e.call.arguments),
        "result_text": result.text if result is not None else e.error,
        "result": result.to_dict() if result is not None else None,
        "is_error": e.outcome == "error",  # a cancel or a refusal is not an error: `outcome` says which
        "error": e.error,
        "approval": e.approval,
        "started_at": timestamp(e.started_at),
        "duration_ms": e.duration_ms,
        "outcome": e.outcome,
        "origin": e.origin,
    }
    if result is not None and len(result.content) == 1 and result.content[0].kind == "text" \
            and result.content[0].text is not None:
        # The text of a one-block result is its result_text: spooled once (a 10 MB result is encoded, masked and
        # written once, not twice), and filled in from the block by the ingest (ingest.py, _FILL).
        del row["result_text"]
    return row


def _llm_call_row(e: LlmCallFinished) -> dict[str, Any]:
    return {
        "llm_call_id": e.llm_call_id,
        "session_id": e.session_id or None,  # empty: a server's sampling request outside any session
        "provider": e.provider,
        "model": e.model,
        "started_at": timestamp(e.started_at),
        "duration_ms": e.duration_ms,
        "ttft_ms": e.ttft_ms,
        "input_tokens": e.usage.input_tokens,
        "output_tokens": e.usage.output_tokens,
        "stop_reason": e.stop_reason,
        "error": e.error,
        "origin": e.origin,
        "tool_call_id": e.tool_call_id,
        "cached_input_tokens": e.usage.cached_input_tokens,
        "cache_write_tokens": e.usage.cache_write_tokens,
        "cost_usd": e.usage.cost_usd,
        "price_source": e.price_source,
        "input_cost_usd": e.input_cost_usd,
        "tool_result_tokens": dict(e.tool_result_tokens) or None,
        "request": dict(e.request) if e.request is not None else None,
        "replayed": e.replayed,
    }


def _server_event_row(e: ServerEvent) -> dict[str, Any]:
    detail: Any = e.detail
    return {"server": e.server, "event": e.event, "detail": detail, "at": timestamp(e.at)}


def _task_created_row(e: TaskCreated) -> dict[str, Any]:
    row = _task_row(e.task, "created", e.at, e.tool_call_id)
    row.update(arguments=dict(e.arguments), session_id=e.session_id or None, cell=e.cell)
    return row


def _task_status_row(e: TaskStatusChanged) -> dict[str, Any]:
    return _task_row(e.task, "status", e.at, e.tool_call_id)


def _task_row(task: TaskState, event: str, at: _dt.datetime, tool_call_id: str | None) -> dict[str, Any]:
    return {
        "task_id": task.task_id,
        "event": event,
        "server": task.server,
        "tool": task.tool or None,  # a task resumed by id before its tool was known
        "form": task.form,
        "status": task.status,
        "status_message": task.status_message,
        "tool_call_id": tool_call_id,
        "created_at": timestamp(task.created_at),
        "updated_at": timestamp(task.updated_at),
        "poll_interval_ms": task.poll_interval_ms,
        "at": timestamp(at),
    }


def _turn_row(e: TurnFinished | TurnFailed | TurnCancelled, start: TurnStarted | None) -> dict[str, Any]:
    if isinstance(e, TurnFinished):
        status, error, error_type = "finished", None, None
    elif isinstance(e, TurnFailed):
        status = "budget_exceeded" if e.error_type == "BudgetExceededError" else "failed"
        error, error_type = e.error, e.error_type
    else:
        status, error, error_type = "cancelled", None, None
    # Without its TurnStarted (recorded by another store), the start is derived from end and duration.
    started = start.at if start is not None else e.at - _dt.timedelta(milliseconds=e.duration_ms)
    usage: Usage = e.usage
    return {
        "turn_id": e.turn_id,
        "session_id": e.session_id,
        "prompt": start.prompt if start is not None else None,
        "status": status,
        "started_at": timestamp(started),
        "duration_ms": e.duration_ms,
        "iterations": e.iterations,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "error": error,
        "model": start.model if start is not None else None,
        "error_type": error_type,
        "cost_usd": usage.cost_usd,
        "cached_input_tokens": usage.cached_input_tokens,
        "replayed": start.replayed if start is not None else None,
    }


_PLAIN: dict[type, tuple[str, Callable[[Any], dict[str, Any]]]] = {
    MessageAdded: ("messages", _message_row),
    ToolCallFinished: ("tool_calls", _tool_call_row),
    LlmCallFinished: ("llm_calls", _llm_call_row),
    SessionStarted: ("sessions", _session_row),
    ServerEvent: ("server_events", _server_event_row),
    TaskCreated: ("task_events", _task_created_row),
    TaskStatusChanged: ("task_events", _task_status_row),
}
"""The events that each become one row of their own."""
_TURN_ENDS = (TurnFinished, TurnFailed, TurnCancelled)
