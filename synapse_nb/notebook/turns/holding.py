"""What a cell or a call is told about holding results (agent/held.py): the hold policy from the cell's option, the
servers' entries and the setting, and the `results__sql` tool over the kernel's held results."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...agent.held import HeldResults, HoldPolicy
    from ...mcp_client.hub import McpHub
    from ...protocols import AgentTool

__all__ = ["hold_policy", "results_tools"]


def hold_policy(hub: McpHub | None, setting: int, cell: int | None = None) -> HoldPolicy:
    """The hold budget in tokens: the cell's `--hold-over` for every tool; else a server's own (`--hold-over` on
    connect, `"hold_over"` in its entry) for its tools, and the setting (`SynapseMagics.hold_over`) for the rest."""
    from ...agent.held import HoldPolicy

    if cell is not None:
        return HoldPolicy(over_tokens=cell)
    servers: dict[str, int] = {}
    if hub is not None:
        for info in hub.servers:
            own = hub.server_config(info.name).hold_over
            if own is not None:
                servers[info.name] = own
    return HoldPolicy(over_tokens=setting, servers=servers)


def results_tools(held: HeldResults) -> tuple[AgentTool, ...]:
    """The tools a turn serves over the held results: `results__sql` (DuckDB, from the history layer)."""
    from ...agent.results_tool import ResultsSql
    from ...history.frames_sql import query_frames

    return (ResultsSql(held, query_frames),)
