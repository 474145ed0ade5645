"""ModelContexts: what MCP Apps Views told the model (`ui/update-model-context`), held per session for its
next turn (last write wins; the turn takes it once)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["CONTEXT_HEADER", "ModelContexts"]

CONTEXT_HEADER = "Context from an interactive view the user has open (MCP App {view}):"
MAX_CONTEXT_CHARS = 8000


class ModelContexts:
    """The pending View context of each session: `put` replaces it, `take` hands it to a turn and forgets it."""

    def __init__(self) -> None:
        self._pending: dict[str, tuple[str, str]] = {}

    def put(self, session: str, view: str, params: Mapping[str, Any]) -> None:
        """The View `view` (its `ui://` URI) set the context of `session`'s next turn; an empty one clears it."""
        text = context_text(params)
        if text:
            self._pending[session] = (view, text)
        else:
            self._pending.pop(session, None)

    def peek(self, session: str) -> str | None:
        """The system-prompt text the session's next turn will get, or None."""
        found = self._pending.get(session)
        if found is None:
            return None
        view, text = found
        return f"{CONTEXT_HEADER.format(view=view)}\n{text}"

    def take(self, session: str) -> str | None:
        """`peek`, then forget it (a context is for one turn)."""
        text = self.peek(session)
        self._pending.pop(session, None)
        return text


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
