"""The skills a turn offers (SEP-2640): `skills__load` and `skills__read` over the hub's skills, when a hub exists."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...mcp_client.hub import McpHub
    from ...protocols import AgentTool

__all__ = ["skill_tools"]


def skill_tools(hub: McpHub | None) -> tuple[AgentTool, ...]:
    """The turn's skill tools (they offer nothing while no connected server lists a skill); none without a hub."""
    if hub is None:
        return ()
    from ...agent.skills_tool import SkillTools

    return (SkillTools(hub.skills),)
