"""TurnOptions: everything one turn of an Agent is told (provider, system, approval, sinks...), as one value;
TurnChanges: the same fields as keyword arguments (an Agent's defaults, or a turn's changes to them)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from ..errors import AgentError
from ..protocols import AgentTool, ApprovalCallback, EventSink, Provider, ToolAnswer, ToolScope
from .approval import ApprovalPolicy
from .held import HeldResults, HoldPolicy
from .spend import Budget
from .tool_search import ToolSearch

__all__ = ["TurnChanges", "TurnOptions"]


@dataclass(frozen=True, slots=True)
class TurnOptions:
    """How one turn runs. The Agent keeps the session (id, transcript, usage, spend); a turn is told the rest.

    `provider` answers the turn; `system` is the system prompt; `tool_patterns` select the registry's tools
    offered (None: all of them, empty: none); `max_iterations` bounds the model requests of the turn;
    `max_result_chars` truncates what the model sees of a tool result that is
    not held (only where `held` is None or the hold budget is 0; None or 0: no limit); `approval`
    decides which tool calls need asking (its "always" answers are remembered in it); `ask` asks the user
    (None: calls that need approval are denied); `sinks` see every event of the turn; `tool_scope` is
    entered around each running tool call (tracing); `budget` is checked before each model call;
    `tool_answer` (a replayed cassette) answers tool calls instead of running them, without approval;
    `tool_timeout` bounds each tool call in seconds. `held`, when given, keeps the results `hold` says to hold
    (a table of many rows, a text over the budget) whole, by name, and the model sees a summary of each
    (agent/held.py); `agent_tools` are tools the turn serves itself beside the registry's (`results__sql`),
    offered while they give specs. `tool_search`, when given, offers `tools__search` and the tools the session
    loaded instead of every tool when the turn's tools are more than its budget (agent/tool_search.py).
    """

    provider: Provider
    system: str | None = None
    tool_patterns: tuple[str, ...] | None = None
    max_iterations: int = 10
    max_result_chars: int | None = 20000
    approval: ApprovalPolicy = dataclasses.field(default_factory=ApprovalPolicy)
    ask: ApprovalCallback | None = None
    sinks: tuple[EventSink, ...] = ()
    tool_scope: ToolScope | None = None
    budget: Budget | None = None
    tool_answer: ToolAnswer | None = None
    tool_timeout: float | None = None
    held: HeldResults | None = None
    hold: HoldPolicy = dataclasses.field(default_factory=HoldPolicy)
    agent_tools: tuple[AgentTool, ...] = ()
    tool_search: ToolSearch | None = None

    def __post_init__(self) -> None:
        if self.max_iterations < 1:
            raise AgentError(f"max_iterations must be at least 1, got {self.max_iterations}")
        # Sequences given as lists still make a value (hashable, never shared with the caller's list).
        if self.tool_patterns is not None and not isinstance(self.tool_patterns, tuple):
            object.__setattr__(self, "tool_patterns", tuple(self.tool_patterns))
        if not isinstance(self.sinks, tuple):
            object.__setattr__(self, "sinks", tuple(self.sinks))
        if not isinstance(self.agent_tools, tuple):
            object.__setattr__(self, "agent_tools", tuple(self.agent_tools))

    @property
    def model_id(self) -> str:
        """`provider:model`, as recorded for the session and its messages."""
        return f"{self.provider.name}:{self.provider.model}"

    @property
    def replays(self) -> bool:
        """True when the provider replays a cassette (providers/replay.py): nothing is spent."""
        return getattr(self.provider, "replays", False) is True

    def replace(self, **changes: Any) -> TurnOptions:
        """A copy with some options changed (`agent.options.replace(system="...")`)."""
        return dataclasses.replace(self, **changes)


class TurnChanges(TypedDict, total=False):
    """TurnOptions' fields but the provider, as keyword arguments: `Agent(provider, tools, system=...)` makes
    its defaults from them (sequences may be lists)."""

    system: str | None
    tool_patterns: Sequence[str] | None
    max_iterations: int
    max_result_chars: int | None
    approval: ApprovalPolicy
    ask: ApprovalCallback | None
    sinks: Iterable[EventSink]
    tool_scope: ToolScope | None
    budget: Budget | None
    tool_answer: ToolAnswer | None
    tool_timeout: float | None
    held: HeldResults | None
    hold: HoldPolicy
    agent_tools: Iterable[AgentTool]
    tool_search: ToolSearch | None
