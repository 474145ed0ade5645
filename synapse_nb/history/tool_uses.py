"""What worked before: the tool calls of the history that answered without error, each with the request (the
user's message) of its turn, newest first; the tool search's tie-breaker (agent/tool_index.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .reader import History

__all__ = ["PAST_USES", "past_tool_uses"]

PAST_USES = """
SELECT u.content AS prompt, t.server, t.tool
FROM tool_calls t
JOIN messages a ON a.message_id = t.message_id
JOIN messages u ON u.session_id = a.session_id AND u.role = 'user' AND u.seq = (
    SELECT max(p.seq) FROM messages p WHERE p.session_id = a.session_id AND p.role = 'user' AND p.seq < a.seq)
WHERE NOT coalesce(t.is_error, false) AND t.error IS NULL AND coalesce(t.server, '') <> 'tools'
ORDER BY t.started_at DESC
LIMIT ?
"""
"""Successful calls (not the search's own), each with the last user message before the reply that asked it."""


def past_tool_uses(history: History, limit: int = 2000) -> list[tuple[str, str | None, str]]:
    """(request, server, tool) of the latest `limit` calls that worked (server None: a native tool)."""
    rows = history.rows(PAST_USES, [limit], relations=("tool_calls", "messages"))
    return [(str(prompt), server, str(tool)) for prompt, server, tool in rows if prompt]
