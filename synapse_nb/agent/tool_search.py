"""ToolSearch: above a budget of tools, the model is offered `tools__search` and the tools it loaded, not all.

A turn whose tools (the registry's, as its patterns select them) number more than `budget` offers the model
one tool, `tools__search`, plus every tool an earlier search of the session loaded. The search ranks the
turn's tools for the model's query (agent/tool_index.py: BM25 over what the servers say, fused with a ranking by
meaning where the `search` extra's embedding model is installed, the user's history as a tie-breaker), answers
with the best few, names and descriptions, and those are offered from the model's next request on. Which tools
are loaded is read from the session's transcript (the search's answers list them as `- NAME: description`
lines), so a replayed cassette and a resumed session load the same tools. At or below the budget nothing
changes: every tool is offered as before.

A server may choose for its own tools (`"defer_tools"` in its config entry): true, they are always found by
the search (a big server used now and then), false, they are always offered up front (the one used in every
turn), even when the others are found by search.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..types import READ_ONLY_HINTS, ContentBlock, Message, ToolResult, ToolSpec
from .tool_index import PastUse, ToolIndex
from .tool_meaning import Embedder

__all__ = ["DEFAULT_TOOL_BUDGET", "SEARCH_SERVER", "SEARCH_TOOL", "ToolSearch", "loaded_tools"]

SEARCH_SERVER = "tools"
SEARCH_TOOL = f"{SEARCH_SERVER}__search"
DEFAULT_TOOL_BUDGET = 40
"""Tools offered up front at most; more, and the model searches for them. 40 definitions are about 5,000 tokens
of every request (as the reference servers write them), and past a few dozen tools models pick less well."""
RESULTS = 5
"""Tools a search loads (the model may ask for up to MAX_RESULTS)."""
MAX_RESULTS = 10
_LOADED_LINE = re.compile(r"^- ([A-Za-z0-9_-]{1,64}):", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class ToolSearch:
    """How a turn offers its tools when there are many: `budget` tools at most up front (0: no budget, every
    tool always offered); `servers` maps a server to its own choice (True: its tools are always searched for,
    False: always offered up front). `about` gives what each server says about itself (server -> text) and
    `past` the tool calls that worked before in this user's history; both are read when a turn first needs
    the search. `embedder` gives the model that ranks by meaning too (None: by words alone), also asked for only
    when a search runs (loading it takes ~0.3 s, once per process)."""

    budget: int = DEFAULT_TOOL_BUDGET
    servers: Mapping[str, bool] = field(default_factory=dict)
    about: Callable[[], Mapping[str, str]] = field(default=dict, compare=False)
    past: Callable[[], Sequence[PastUse]] = field(default=tuple, compare=False)
    embedder: Callable[[], Embedder | None] = field(default=lambda: None, compare=False)

    def deferred(self, specs: Sequence[ToolSpec]) -> set[str]:
        """The names of the tools of `specs` not offered up front (none: no search): all of them when they are
        more than the budget, less those of servers that chose to be offered; plus those of servers that chose
        to be searched for."""
        over = self.budget > 0 and len(specs) > self.budget
        return {s.name for s in specs if self.servers.get(s.server or "", over)}

    def index(self, specs: Sequence[ToolSpec]) -> ToolIndex:
        """The index of `specs` with what the servers say, what worked before and, where there is one, meaning."""
        return ToolIndex(specs, self.about(), self.past(), self.embedder())

    def serve(self, specs: Sequence[ToolSpec]) -> SearchTool:
        """The `tools__search` agent tool over `specs` (the turn's catalog)."""
        return SearchTool(specs, self)


class SearchTool:
    """The `tools__search` AgentTool of one turn: its spec, and a call that ranks the catalog for a query. The
    index is built on the first call (a turn that never searches reads no history)."""

    def __init__(self, specs: Sequence[ToolSpec], search: ToolSearch) -> None:
        self.catalog = tuple(specs)
        self.search = search
        self._index: ToolIndex | None = None

    def specs(self) -> Sequence[ToolSpec]:
        servers = sorted({s.server for s in self.catalog if s.server})
        listed = ", ".join(servers[:20]) + (", ..." if len(servers) > 20 else "")
        return (ToolSpec(
            name=SEARCH_TOOL,
            description=(
                f"Find tools to use. {len(self.catalog)} tools are connected (servers: {listed or 'none'}) but "
                "only the ones you load are offered. Describe what you need in plain words; the best matches "
                "are loaded and offered from your next request. Search again for other needs."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "what the tool should do, in plain words"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS,
                              "description": f"how many tools to load (default {RESULTS})"},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            server=SEARCH_SERVER,
            original_name="search",
            annotations=dict(READ_ONLY_HINTS),
        ),)

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        started = time.perf_counter()
        query, limit = arguments.get("query"), arguments.get("limit", RESULTS)
        if name != SEARCH_TOOL or not isinstance(query, str) or not query.strip():
            return ToolResult.error(f"{SEARCH_TOOL} takes query: what the tool should do, in plain words")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_RESULTS:
            return ToolResult.error(f"{SEARCH_TOOL}: limit must be a whole number from 1 to {MAX_RESULTS}")
        if self._index is None:
            self._index = self.search.index(self.catalog)
        hits = self._index.search(query, limit)
        if not hits:
            text = f"No tool matches {query!r}; try other words (what it acts on, what it returns)."
        else:
            lines = [f"- {h.name}: {_one_line(h.spec.description)}" for h in hits]
            text = f"Loaded {len(hits)} tools; they are offered from your next request:\n" + "\n".join(lines)
        return ToolResult(
            content=(ContentBlock("text", text=text),),
            structured_content={"loaded": [h.name for h in hits], "scores": [round(h.score, 4) for h in hits]},
            duration_ms=(time.perf_counter() - started) * 1000,
        )


def loaded_tools(messages: Sequence[Message]) -> set[str]:
    """The tools the session's searches loaded: the `- NAME:` lines of its `tools__search` answers."""
    loaded: set[str] = set()
    for message in messages:
        if message.role == "tool" and message.name == SEARCH_TOOL and not message.is_error:
            loaded.update(_LOADED_LINE.findall(message.content))
    return loaded


def _one_line(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
