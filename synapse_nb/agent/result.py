"""TurnResult: what one agent turn produced, collected from its events."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..errors import AgentError
from ..events import (
    Event,
    MessageAdded,
    ToolCallFinished,
    ToolCallStarted,
    TurnCancelled,
    TurnFailed,
    TurnFinished,
    TurnStarted,
)
from ..types import Message, Usage

__all__ = ["TurnResult", "TurnStatus", "turn_result"]

TurnStatus = Literal["finished", "failed", "cancelled", "budget_exceeded"]


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What one turn produced: the answer, the messages it added, its tool calls, usage and how it ended."""

    text: str
    messages: tuple[Message, ...]
    tool_calls: tuple[ToolCallFinished, ...]
    session_id: str
    turn_id: str
    usage: Usage
    iterations: int
    status: TurnStatus
    error: str | None = None
    error_type: str | None = None
    duration_ms: float = 0.0


def turn_result(events: Sequence[Event]) -> TurnResult:
    """The TurnResult of one turn's events."""
    end = next((e for e in reversed(events) if isinstance(e, TurnFinished | TurnFailed | TurnCancelled)), None)
    start = next((e for e in events if isinstance(e, TurnStarted)), None)
    if end is None or start is None:
        raise AgentError("the turn did not end")
    added = [e.message for e in events if isinstance(e, MessageAdded) and e.message.role != "system"]
    replies = [m for m in added if m.role == "assistant"]
    order = {e.call.id: i for i, e in enumerate(e for e in events if isinstance(e, ToolCallStarted))}
    finished = [e for e in events if isinstance(e, ToolCallFinished)]  # in call order, not finishing order
    status: TurnStatus = (
        "finished" if isinstance(end, TurnFinished) else "failed" if isinstance(end, TurnFailed) else "cancelled"
    )
    if isinstance(end, TurnFailed) and end.error_type == "BudgetExceededError":
        status = "budget_exceeded"
    return TurnResult(
        text=end.text if isinstance(end, TurnFinished) else (replies[-1].content if replies else ""),
        messages=tuple(added),
        tool_calls=tuple(sorted(finished, key=lambda e: order.get(e.call.id, len(order)))),
        session_id=start.session_id,
        turn_id=start.turn_id,
        usage=end.usage,
        iterations=end.iterations,
        status=status,
        error=end.error if isinstance(end, TurnFailed) else None,
        error_type=end.error_type if isinstance(end, TurnFailed) else None,
        duration_ms=end.duration_ms,
    )
