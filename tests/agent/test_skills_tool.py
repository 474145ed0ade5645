"""SkillTools (agent/skills_tool.py) over a real hub with the demo server in this process: offered only while a
server lists skills, the body only when loaded, files only of a loaded skill, every refusal an error result."""

from __future__ import annotations

import pytest

from synapse_nb.agent.skills_tool import LOAD_TOOL, READ_TOOL, SkillTools
from synapse_nb.mcp_client.demo_server import build_server
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.protocols import AgentTool

pytestmark = pytest.mark.anyio


async def test_nothing_is_offered_without_skills() -> None:
    async with McpHub() as hub:
        tools = SkillTools(hub.skills)
        assert isinstance(tools, AgentTool)
        assert tools.specs() == ()


async def test_load_then_read_and_every_refusal_is_one_error_line() -> None:
    async with McpHub() as hub:
        await hub.connect_in_process("demo", build_server())
        tools = SkillTools(hub.skills)
        load, read = tools.specs()
        assert (load.name, read.name, load.server, load.annotations["readOnlyHint"]) == (
            LOAD_TOOL, READ_TOOL, "skills", True)
        assert "orders.status" not in load.description  # its description, not its body

        early = await tools.call(READ_TOOL, {"skill": "demo/shop-revenue", "path": "references/margin.md"})
        assert early.is_error
        assert early.text == "skill demo/shop-revenue is not loaded in this turn: load it with skills__load first"
        unknown = await tools.call(LOAD_TOOL, {"skill": "demo/nope"})
        assert unknown.is_error
        assert unknown.text == "no skill named 'demo/nope' is offered (known: demo/shop-revenue)"
        assert (await tools.call(LOAD_TOOL, {})).is_error

        loaded = await tools.call(LOAD_TOOL, {"skill": "demo/shop-revenue"})
        assert not loaded.is_error
        assert "orders.status = 'delivered'" in loaded.text
        margin = await tools.call(READ_TOOL, {"skill": "demo/shop-revenue", "path": "references/margin.md"})
        assert "unit_cost" in margin.text
        outside = await tools.call(READ_TOOL, {"skill": "demo/shop-revenue", "path": "../other/SKILL.md"})
        assert outside.is_error
        assert "is not a file of the skill" in outside.text
