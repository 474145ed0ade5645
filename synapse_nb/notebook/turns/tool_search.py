"""What a cell is told about tool search (agent/tool_search.py): its budget, what the connected servers say about
themselves, what worked before in this user's history (the history file's successful calls), and whether to rank
by meaning too (the `search` extra's embedding model, agent/tool_meaning.py)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ...errors import SynapseError

if TYPE_CHECKING:
    from ...agent.tool_index import PastUse
    from ...agent.tool_search import ToolSearch
    from ...history.store import HistoryStore
    from ...mcp_client.hub import McpHub

__all__ = ["servers_about", "tool_search", "worked_before"]

logger = logging.getLogger("synapse_nb.notebook")


def tool_search(
    hub: McpHub | None, store: HistoryStore | None, setting: int, cell: int | None = None, *, meaning: bool = True,
) -> ToolSearch:
    """The tool search of a turn (or of `%mcp search`): the cell's `--tool-budget` for every tool; else the
    servers' own choices (`--defer-tools` on connect, `"defer_tools"` in their entries) for their tools and the
    setting (`SynapseMagics.tool_budget`) for the rest. What the servers say about themselves and the history
    are read, and the embedding model loaded (`meaning`: `SynapseMagics.search_by_meaning`), only when a search
    runs."""
    from ...agent.tool_meaning import bundled_embedder
    from ...agent.tool_search import ToolSearch

    servers: dict[str, bool] = {}
    if hub is not None and cell is None:
        for info in hub.servers:
            own = hub.server_config(info.name).defer_tools
            if own is not None:
                servers[info.name] = own
    budget = setting if cell is None else cell
    return ToolSearch(budget, servers, about=lambda: servers_about(hub), past=lambda: worked_before(store),
                      embedder=bundled_embedder if meaning else lambda: None)


def servers_about(hub: McpHub | None) -> Mapping[str, str]:
    """What each connected server says about itself: its name, title and instructions."""
    if hub is None:
        return {}
    return {info.name: " ".join(p for p in (info.server_name, info.server_title, info.instructions) if p)
            for info in hub.servers}


def worked_before(store: HistoryStore | None) -> Sequence[PastUse]:
    """The calls of the history file that worked, with their requests; none when there is no history to read."""
    from ...agent.tool_index import PastUse
    from ...history.tool_uses import past_tool_uses

    if store is None or not store.available:
        return ()
    try:
        return [PastUse(*use) for use in past_tool_uses(store.history())]
    except SynapseError as exc:  # the search works without it: the history only breaks ties
        logger.warning("tool search: the history could not be read (%s); ranking without it", exc)
        return ()
