"""The small protocols the agent sees its parts through: a model provider, a tool source, an event sink."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .events import Event
from .skill_entry import LoadedSkill, SkillEntry, SkillText
from .types import Message, ToolCall, ToolResult, ToolSpec, Usage

__all__ = [
    "AgentTool",
    "ApprovalCallback",
    "ProgressCallback",
    "Completion",
    "EventSink",
    "Provider",
    "ProviderChunk",
    "SkillSource",
    "TextChunk",
    "ToolCallChunk",
    "ToolAnswer",
    "ToolScope",
    "ToolSource",
]


@dataclass(frozen=True, slots=True)
class TextChunk:
    """A piece of streamed answer text."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """A piece of a streamed tool call: the first piece of index `index` has id and name."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments_delta: str = ""


@dataclass(frozen=True, slots=True)
class Completion:
    """The end of one streamed response: the whole assistant message, usage, stop reason, TTFT."""

    message: Message
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    ttft_ms: float | None = None


ProviderChunk = TextChunk | ToolCallChunk | Completion


@runtime_checkable
class Provider(Protocol):
    """A model behind one wire format. `stream` yields chunks and ends with exactly one Completion."""

    name: str  # provider id: anthropic, openai, deepseek, ollama, scripted
    model: str  # model id without the provider prefix

    def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        system: str | None = None,
    ) -> AsyncIterator[ProviderChunk]: ...

    async def aclose(self) -> None: ...


ProgressCallback = Callable[[float, float | None, str | None], None]
"""Receives a running tool's progress: (progress, total or None, message or None). Quick; must not raise."""


@runtime_checkable
class ToolSource(Protocol):
    """Where MCP tools come from (the hub): the current tool list and a way to call one.

    `on_progress` receives the server's progress notifications for this call (MCP `progressToken`),
    as they arrive; a source that has none never calls it.
    """

    @property
    def tools(self) -> Sequence[ToolSpec]: ...

    async def call(
        self, qualified_name: str, arguments: Mapping[str, Any], timeout: float | None = None,
        *, on_progress: ProgressCallback | None = None,
    ) -> ToolResult: ...


@runtime_checkable
class SkillSource(Protocol):
    """The skills connected servers offer (SEP-2640; the hub's `skills`): their entries as listed, loading one by
    its `SERVER/PATH` key (SKILL.md read and verified), and reading a file of a loaded one against its held entry."""

    def listed(self, server: str | None = None) -> list[SkillEntry]: ...

    async def load_skill(self, key: str) -> LoadedSkill: ...

    async def read_skill_file(self, entry: SkillEntry, path: str) -> SkillText: ...


@runtime_checkable
class AgentTool(Protocol):
    """Tools a turn serves itself, beside the registry's (the SQL over held results; a tool search may join):
    offered to the model while `specs()` gives any, called by their name. A failure is an error result."""

    def specs(self) -> Sequence[ToolSpec]: ...

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult: ...


EventSink = Callable[[Event], None]
"""Receives every event as it happens (history recorder, display). Must be quick and must not raise."""

ApprovalCallback = Callable[[ToolSpec, Mapping[str, Any]], Awaitable[str]]
"""Asks the user whether a tool call may run: returns "yes", "no" or "always"."""

ToolAnswer = Callable[[ToolCall], Awaitable[tuple[ToolResult | None, str | None, float] | None]]
"""Answers a tool call without running it (a replayed cassette): (result, error line, duration ms), or
None to run the tool as usual."""
ToolScope = Callable[[str], AbstractContextManager[None]]
"""Entered (with the tool call's id) around each running tool call, in the task that runs it: tracing
makes the call's span current there, so the MCP request carries its trace context (telemetry/spans.py)."""
