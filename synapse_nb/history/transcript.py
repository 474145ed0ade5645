"""Rebuilds a session's conversation (core Messages) from its recorded message rows, to resume it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..types import Message, ToolCall, ToolResult

__all__ = ["messages_from_rows", "waiting_calls"]


def _json(value: Any) -> Any:
    if value is None or isinstance(value, dict | list):
        return value
    if isinstance(value, str) and value:
        return json.loads(value)
    return None


def messages_from_rows(rows: Iterable[Mapping[str, Any]]) -> list[Message]:
    """The transcript as the agent keeps it: user, assistant and tool messages in `seq` order.

    System rows are left out (the system prompt is sent separately). A tool message gets back its
    error flag and images from the recorded full result; its text is what the model saw.
    """
    out: list[Message] = []
    for row in sorted(rows, key=lambda r: int(r["seq"])):
        role = row["role"]
        content = row.get("content") or ""
        if role == "assistant":
            calls = tuple(ToolCall.from_dict(c) for c in _json(row.get("tool_calls")) or ())
            out.append(Message.assistant(content, calls))
        elif role == "tool":
            result = ToolResult.from_dict(_json(row.get("tool_results")) or {})
            out.append(Message.tool(
                str(row.get("tool_call_id") or ""), content, is_error=result.is_error,
                images=tuple(b for b in result.content if b.kind == "image" and b.data),
            ))
        elif role == "user":
            out.append(Message.user(content))
    return out




def waiting_calls(messages: Sequence[Message]) -> list[ToolCall]:
    """The tool calls of the transcript's last model reply that have no tool message yet: a turn the kernel left
    waiting on them (it stopped during the calls, e.g. restarted while an MCP task ran). Empty when the last reply
    asked for nothing or every call has its result."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant":
            answered = {m.tool_call_id for m in messages[index + 1:] if m.role == "tool"}
            return [c for c in message.tool_calls if c.id not in answered]
        if message.role == "user":
            return []
    return []
