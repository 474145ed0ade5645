"""ModelContexts: what MCP Apps Views told the model (`ui/update-model-context`), held per session for its
next turn (last write wins; the turn takes it once), each with the View it came from (`ViewContext`), so the turn
can say which View told the model what, and the history can keep it with that View as its origin."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CONTEXT_HEADER", "ViewContext", "ModelContexts", "context_text"]

CONTEXT_HEADER = "Context from an interactive view the user has open (MCP App {label}):"
MAX_CONTEXT_CHARS = 8000
PREVIEW_CHARS = 80


@dataclass(frozen=True, slots=True)
class ViewContext:
    """What one View (of `server`'s tool `tool`, its resource `view`) told the model: `text`."""

    server: str
    tool: str
    view: str  # the View's `ui://` resource
    text: str

    @property
    def label(self) -> str:
        """`apps.counter (ui://fixture/counter.html)`: the View as the user and the model know it."""
        return f"{self.server}.{self.tool} ({self.view})"

    @property
    def prompt(self) -> str:
        """The system-prompt text the turn gives the model: a header naming the View, then what it said."""
        return f"{CONTEXT_HEADER.format(label=self.label)}\n{self.text}"

    @property
    def preview(self) -> str:
        """What it said, on one line, cut to PREVIEW_CHARS (the turn's footer shows it)."""
        line = " ".join(self.text.split())
        return line if len(line) <= PREVIEW_CHARS else line[: PREVIEW_CHARS - 1] + "…"

    @property
    def note(self) -> str:
        """The turn's footer line: which View gave the model context, and what."""
        return f"the view {self.label} gave the model context: {self.preview}"


class ModelContexts:
    """The pending View context of each session: `put` replaces it, `take` hands it to a turn and forgets it."""

    def __init__(self) -> None:
        self._pending: dict[str, ViewContext] = {}

    def put(self, session: str, *, server: str, tool: str, view: str, params: Mapping[str, Any]) -> ViewContext | None:
        """The View `view` (its `ui://` URI) of `server`'s `tool` set the context of `session`'s next turn; an
        empty one clears it (then None)."""
        text = context_text(params)
        if not text:
            self._pending.pop(session, None)
            return None
        found = self._pending[session] = ViewContext(server=server, tool=tool, view=view, text=text)
        return found

    def peek(self, session: str) -> ViewContext | None:
        """The context the session's next turn will get, or None."""
        return self._pending.get(session)

    def take(self, session: str) -> ViewContext | None:
        """`peek`, then forget it (a context is for one turn)."""
        return self._pending.pop(session, None)


def context_text(params: Mapping[str, Any]) -> str:
    """`content` text blocks, then `structuredContent` as JSON, bounded to MAX_CONTEXT_CHARS."""
    parts: list[str] = []
    for block in params.get("content") or []:
        if isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    structured = params.get("structuredContent")
    if structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    text = "\n".join(p for p in parts if p.strip())
    if len(text) > MAX_CONTEXT_CHARS:
        text = text[:MAX_CONTEXT_CHARS] + " [cut]"
    return text
