"""Events the agent and the MCP hub emit as things happen; the display and the history store consume them.

Every event is a frozen value; times are naive UTC datetimes (`utcnow()`), durations milliseconds.
The history recorder maps each event to rows, so an event carries everything its row needs.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .task_state import TaskState
from .types import Message, ToolCall, ToolResult, Usage

__all__ = [
    "Event",
    "LlmCallFinished",
    "MessageAdded",
    "ServerEvent",
    "SessionStarted",
    "TaskCreated",
    "TaskStatusChanged",
    "TextDelta",
    "ToolCallArgumentsDelta",
    "ToolCallFinished",
    "ToolCallProgress",
    "ToolCallStarted",
    "TurnCancelled",
    "TurnFailed",
    "TurnFinished",
    "TurnStarted",
    "utcnow",
]


def utcnow() -> _dt.datetime:
    """Now, as a naive UTC datetime (what the history file stores)."""
    return _dt.datetime.now(_dt.UTC).replace(tzinfo=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStarted:
    """A new conversation session was created."""

    session_id: str
    name: str
    model: str
    notebook: str | None = None
    kernel_id: str | None = None
    at: _dt.datetime = field(default_factory=utcnow)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnStarted:
    """The agent started answering one prompt."""

    session_id: str
    turn_id: str
    prompt: str
    model: str
    at: _dt.datetime = field(default_factory=utcnow)
    replayed: bool = False  # answered from a cassette (record/replay), not by the model


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    """A piece of the assistant's answer arrived (not recorded: the full message is)."""

    session_id: str
    turn_id: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageAdded:
    """A message joined the transcript (`seq` orders messages within the session)."""

    session_id: str
    message_id: str
    seq: int
    message: Message
    model: str | None = None
    # For tool messages: the full result (the message itself holds the bounded text the model saw).
    result: ToolResult | None = None
    at: _dt.datetime = field(default_factory=utcnow)


@dataclass(frozen=True, slots=True, kw_only=True)
class LlmCallFinished:
    """One request to the model finished, successfully or not.

    `origin` is None for the agent's own calls and `sampling:SERVER` when an MCP server asked for it
    (sampling/createMessage); `tool_call_id` is then the tool call during which the server asked, if known.
    """

    session_id: str
    llm_call_id: str
    provider: str
    model: str
    started_at: _dt.datetime
    duration_ms: float
    ttft_ms: float | None = None
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    error: str | None = None
    origin: str | None = None
    tool_call_id: str | None = None
    # Cost (see synapse_nb/pricing.py): usage.cost_usd is the call's cost, None when unknown.
    price_source: str | None = None  # bundled:DATE | file:PATH | local | replay | None (no price)
    input_cost_usd: float | None = None  # the prompt side of usage.cost_usd
    tool_result_tokens: Mapping[str, int] = field(default_factory=dict)  # tool_call_id -> tokens it added
    # Record/replay (synapse_nb/cassette.py): what the request held besides the transcript (system, params,
    # tools digest and names, how many transcript messages), so a cassette can be exported from the history;
    # and whether a cassette answered it.
    request: Mapping[str, Any] | None = None
    replayed: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStarted:
    """A tool call was approved (or not) and is about to run."""

    session_id: str
    call: ToolCall
    server: str | None
    tool: str
    approval: str  # auto | approved | denied | always
    message_id: str | None = None
    at: _dt.datetime = field(default_factory=utcnow)
    origin: str = "agent"  # who asked: see ToolCallFinished.origin


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallArgumentsDelta:
    """A piece of a tool call's arguments streamed by the model (not recorded: the finished call is).

    `index` orders the calls of one model reply; `call_id` and `name` come with the first piece of
    each call (and are None after it), so a consumer keys the pieces on `index`.
    """

    session_id: str
    turn_id: str
    index: int
    arguments_delta: str
    call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallProgress:
    """A running tool reported progress (an MCP progress notification); not recorded.

    `progress` only grows; `total` is None when the server does not know it; `message` is the server's.
    """

    session_id: str
    call_id: str
    progress: float
    total: float | None = None
    message: str | None = None
    at: _dt.datetime = field(default_factory=utcnow)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallFinished:
    """A tool call ended: `result` when the tool answered (maybe `is_error`), `error` when it raised.

    `origin` says who asked for it: "agent" (the model, in a turn), "manual" (a person: `%mcp call`, the
    inspector) or "app:SERVER" (an MCP Apps View of that server).
    """

    session_id: str
    call: ToolCall
    server: str | None
    tool: str
    approval: str
    started_at: _dt.datetime
    duration_ms: float
    result: ToolResult | None = None
    error: str | None = None
    message_id: str | None = None
    origin: str = "agent"

    @property
    def is_error(self) -> bool:
        """The call did not give a usable answer (an error, a cancel or a refusal: the model is told so)."""
        return self.error is not None or (self.result is not None and self.result.is_error)

    @property
    def outcome(self) -> str:
        """What became of the call, as recorded: `ok`, `error` (the tool or the server failed), `cancelled`
        (interrupted or stopped, usually by the user) or `denied` (approval refused it). Only `error` is
        recorded with `is_error = true`: a cancel or a refusal is not the tool's failure."""
        if self.error == "cancelled":
            return "cancelled"
        if self.approval == "denied":
            return "denied"
        return "error" if self.is_error else "ok"


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnFinished:
    """The model answered without asking for more tools."""

    session_id: str
    turn_id: str
    text: str
    iterations: int
    usage: Usage
    duration_ms: float
    at: _dt.datetime = field(default_factory=utcnow)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnFailed:
    """The turn ended with an error (provider failure, max iterations, a budget: error_type
    BudgetExceededError); the transcript so far is kept."""

    session_id: str
    turn_id: str
    error: str
    error_type: str
    iterations: int
    usage: Usage
    duration_ms: float
    at: _dt.datetime = field(default_factory=utcnow)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnCancelled:
    """The turn was cancelled (interrupt or Stop); the transcript so far is kept."""

    session_id: str
    turn_id: str
    iterations: int
    usage: Usage
    duration_ms: float
    at: _dt.datetime = field(default_factory=utcnow)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerEvent:
    """Something happened to an MCP server: connected, failed, crashed, restarted, disconnected, ..."""

    server: str
    event: str
    detail: Mapping[str, Any] | str | None = None
    at: _dt.datetime = field(default_factory=utcnow)


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskCreated:
    """A server took a tool call as an MCP task (it runs on after the request that started it).

    `arguments` are the call's (masked like tool call arguments when recorded); `session_id`, `cell` and
    `tool_call_id` say who started it: the session and cell, and the tool call whose result the task's becomes.
    """

    task: TaskState
    arguments: Mapping[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    cell: str | None = None
    tool_call_id: str | None = None
    at: _dt.datetime = field(default_factory=utcnow)


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStatusChanged:
    """A task's status or status message changed (seen on a poll or in a notification); a terminal status
    ends it. `tool_call_id` links it to the tool call whose result it becomes (None for a task resumed
    from the history, whose row carries it already)."""

    task: TaskState
    tool_call_id: str | None = None
    at: _dt.datetime = field(default_factory=utcnow)


Event = (
    SessionStarted
    | TurnStarted
    | TextDelta
    | MessageAdded
    | LlmCallFinished
    | ToolCallArgumentsDelta
    | ToolCallStarted
    | ToolCallProgress
    | ToolCallFinished
    | TurnFinished
    | TurnFailed
    | TurnCancelled
    | ServerEvent
    | TaskCreated
    | TaskStatusChanged
)
"""Any event the agent or the hub emits."""
