"""`%mcp search TEXT`: the connected tools ranked for a request in plain words, by the same search the model is
offered above the tool budget (agent/tool_search.py); a Listing of `SERVER__TOOL` rows, best first."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

if TYPE_CHECKING:
    from ...agent.tool_search import ToolSearch
    from ...agent.tools import ToolRegistry
    from ..output.listing import Listing

__all__ = ["SEARCH_COLUMNS", "SEARCH_USAGE", "parse_search", "search"]

SEARCH_COLUMNS = ("rank", "name", "server", "tool", "score", "description")
SEARCH_USAGE = "%mcp search [-n N] TEXT"
DEFAULT_ROWS = 10
_ROWS = re.compile(r"^(?:-n|--limit)(?:\s+|=)(\S+)\s*")


def parse_search(rest: str) -> tuple[str, int]:
    """(the request, how many rows) of `%mcp search`'s line; the request is taken as written (quotes and all)."""
    text, rows = rest.strip(), DEFAULT_ROWS
    match = _ROWS.match(text)
    if match is not None:
        if not match.group(1).isdigit() or int(match.group(1)) < 1:
            raise UsageError(f"{SEARCH_USAGE}: -n takes a number of rows of 1 or more, not {match.group(1)!r}")
        rows, text = int(match.group(1)), text[match.end():].strip()
    if not text:
        raise UsageError(f"{SEARCH_USAGE}: say what the tool should do, e.g. %mcp search what time is it in Tokyo")
    return text, rows


def search(registry: ToolRegistry, search: ToolSearch, text: str, rows: int = DEFAULT_ROWS,
           *, kernel_tools: bool = False, say_why: bool = False) -> Listing:
    """The tools the model could be offered (the `kernel__*` group too when it is on), ranked for `text`: rank,
    qualified name, server, the server's own tool name, score (comparable within one search) and description.
    With `say_why` (the magic; the inspector's box says it its own way) an empty listing comes with a printed line
    that says why (nothing connected, or no word in common) and what to try."""
    from ..output.listing import Listing
    from ..turns.result import LOCAL_SERVER

    catalog = registry.specs(("*", "kernel__*") if kernel_tools else None)
    hits = search.index(catalog).search(text, rows)
    if say_why and not catalog:
        print("no tools to search: connect an MCP server first (%mcp connect NAME -- COMMAND, or NAME URL)")
    elif say_why and not hits:  # the search's gate (agent/tool_index.py): a request none of whose words anything uses
        print(f"no tool of the {len(catalog)} connected shares a word with {text!r}: say what it does or what it "
              "acts on in other words, or see them all with %mcp tools")
    return Listing([
        {"rank": i, "name": h.name, "server": h.spec.server or LOCAL_SERVER, "tool": h.spec.original_name or h.name,
         "score": round(h.score, 3), "description": " ".join(h.spec.description.split())}
        for i, h in enumerate(hits, 1)
    ], columns=list(SEARCH_COLUMNS))
