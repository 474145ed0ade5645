"""TurnResult: what one agent turn produced, and TurnRecord, the event sink that collects it as the turn runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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

__all__ = ["TurnRecord", "TurnResult", "TurnStatus"]

TurnStatus = Literal["finished", "failed", "cancelled", "budget_exceeded"]


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What one turn produced: the answer, the messages it added, its tool calls, usage and how it ended.

    `text` is the answer (a turn that did not finish: its last reply's text); `messages` the turn's messages
    without the system prompt (prompt, replies, tool results); `tool_calls` its finished tool calls in the
    order the model asked for them; `model` is `provider:model`; `usage.cost_usd` its cost (None: unknown);
    `error`/`error_type` say why a turn that did not finish failed.
    """

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
    model: str = ""


class TurnRecord:
    """An event sink that collects one turn's TurnResult as its events pass (the Agent keeps one per turn).

    Built with what a turn that never emitted an event still has (its session, turn id and model), so that
    `result()` always answers: a turn without an end event (interrupted before it could say so) is cancelled.
    """

    __slots__ = ("_calls", "_end", "_messages", "_model", "_order", "_session_id", "_turn_id")

    def __init__(self, session_id: str, turn_id: str, model: str) -> None:
        self._session_id, self._turn_id, self._model = session_id, turn_id, model
        self._messages: list[Message] = []
        self._order: dict[str, int] = {}  # call id -> the order its ToolCallStarted came in
        self._calls: list[ToolCallFinished] = []
        self._end: TurnFinished | TurnFailed | TurnCancelled | None = None

    @property
    def turn_id(self) -> str:
        return self._turn_id

    @property
    def ended(self) -> bool:
        """True once the turn's end event (finished, failed or cancelled) passed."""
        return self._end is not None

    def __call__(self, event: Event) -> None:
        if isinstance(event, MessageAdded):
            if event.message.role != "system":
                self._messages.append(event.message)
        elif isinstance(event, ToolCallStarted):
            self._order.setdefault(event.call.id, len(self._order))
        elif isinstance(event, ToolCallFinished):
            self._calls.append(event)
        elif isinstance(event, TurnStarted):
            self._session_id, self._turn_id, self._model = event.session_id, event.turn_id, event.model
        elif isinstance(event, TurnFinished | TurnFailed | TurnCancelled):
            self._end = event

    def result(self) -> TurnResult:
        """The turn's result as far as its events went."""
        end = self._end
        replies = [m for m in self._messages if m.role == "assistant"]
        status: TurnStatus = (
            "finished" if isinstance(end, TurnFinished) else "failed" if isinstance(end, TurnFailed) else "cancelled"
        )
        if isinstance(end, TurnFailed) and end.error_type == "BudgetExceededError":
            status = "budget_exceeded"
        failed = end if isinstance(end, TurnFailed) else None
        return TurnResult(
            text=end.text if isinstance(end, TurnFinished) else (replies[-1].content if replies else ""),
            messages=tuple(self._messages),
            tool_calls=tuple(sorted(self._calls, key=lambda e: self._order.get(e.call.id, len(self._order)))),
            session_id=self._session_id,
            turn_id=self._turn_id,
            usage=end.usage if end is not None else Usage(),
            iterations=end.iterations if end is not None else 0,
            status=status,
            error=failed.error if failed is not None else None,
            error_type=failed.error_type if failed is not None else None,
            duration_ms=end.duration_ms if end is not None else 0.0,
            model=self._model,
        )

