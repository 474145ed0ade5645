"""What a scripted model's scripts are made of: the conversation they read and the reply they give.

The built-in scripts (_demo_script.py, _analyst_script.py) and the data scripts of scripted.py build on
these; scripted.py loads the built-in ones by name, so they live apart from it (no import circle).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Protocol

from ..types import Message, ToolCall, ToolSpec

__all__ = ["OFFLINE_ANSWER", "Conversation", "Reply", "Script", "ToolOutcome"]

OFFLINE_ANSWER = (
    "I'm the offline **scripted** model, so I can only answer from a script; no real model is configured.\n\n"
    "To use a real model, set `SYNAPSE_MODEL` (for example `openai:gpt-4.1-mini` or "
    "`anthropic:claude-sonnet-4-5`) and the matching API key (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, "
    "`DEEPSEEK_API_KEY`), or switch with `%synapse model ID`.\n\n"
    "Offline, connect the demo MCP server with the kernel's own Python (`import sys`, then "
    "`%mcp connect demo -- {sys.executable} -m synapse_nb.mcp_client.demo_server`) and ask me things like "
    "*What tables are there?* or *Top products by revenue*."
)
"""What the scripted model says when nothing in its script fits (e.g. no matching tools are offered)."""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """One tool result in the conversation, with the call it answers."""

    call: ToolCall
    text: str
    is_error: bool

    @property
    def tool(self) -> str:
        """The tool's own name (the part after `SERVER__`)."""
        return self.call.name.rsplit("__", 1)[-1]


@dataclass(frozen=True, slots=True)
class Conversation:
    """What a script decides from: the last user message and what happened since, and the offered tools."""

    prompt: str
    step: int  # assistant replies since the last user message
    replies: int  # assistant replies in the whole conversation
    tools: tuple[ToolSpec, ...]
    outcomes: tuple[ToolOutcome, ...]  # tool results since the last user message
    latest: tuple[ToolOutcome, ...]  # tool results answering the latest assistant reply

    @classmethod
    def of(cls, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> Conversation:
        last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
        turn = messages[last_user + 1 :]
        calls = {c.id: c for m in messages if m.role == "assistant" for c in m.tool_calls}

        def outcomes(ms: Sequence[Message]) -> tuple[ToolOutcome, ...]:
            return tuple(
                ToolOutcome(calls.get(m.tool_call_id or "", ToolCall(m.tool_call_id or "", m.name or "")),
                            m.content, m.is_error)
                for m in ms if m.role == "tool"
            )

        last_assistant = max((i for i, m in enumerate(turn) if m.role == "assistant"), default=-1)
        return cls(
            prompt=messages[last_user].content if last_user >= 0 else "",
            step=sum(1 for m in turn if m.role == "assistant"),
            replies=sum(1 for m in messages if m.role == "assistant"),
            tools=tuple(tools),
            outcomes=outcomes(turn),
            latest=outcomes(turn[last_assistant + 1 :]) if last_assistant >= 0 else (),
        )

    def find_tool(self, name: str) -> str | None:
        """The offered tool a script means by `name`: exact, else by `__name` suffix (server demo first), else glob."""
        offered = [t.name for t in self.tools]
        if name in offered:
            return name
        suffixed = [n for n in offered if n.endswith("__" + name)]
        if suffixed:
            return next((n for n in suffixed if n.startswith("demo__")), suffixed[0])
        if any(ch in name for ch in "*?["):
            return next((n for n in offered if fnmatchcase(n, name)), None)
        return None

    def done(self, tool: str) -> list[ToolOutcome]:
        """This turn's results of a tool (matched by its own name)."""
        return [o for o in self.outcomes if o.tool == tool]


@dataclass(frozen=True, slots=True)
class Reply:
    """What the model says next: text, then tool calls (name, arguments)."""

    text: str = ""
    calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()


class Script(Protocol):
    """Decides the next reply from the conversation."""

    def reply(self, conversation: Conversation) -> Reply: ...
