"""MCP Apps tools in the notebook, hub side: `%mcp tools` says which tools have a View and who may call them,
an app-only tool is never offered to the model (what the local LLM wire server receives), a hand call of it
works and is recorded as `manual`. Against tests/support/apps_server.py, a real subprocess."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.llm_server import LlmServer, call, text, tool_calls

TESTS = Path(__file__).resolve().parents[1]

APPS = f"apps -- {sys.executable} {TESTS / 'support' / 'apps_server.py'}"
FAKE_KEY = "sk-fake-apps-0123456789"

pytestmark = pytest.mark.process


@pytest.fixture
def server(clean_env: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[LlmServer]:
    with LlmServer() as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        yield llm


def test_mcp_tools_shows_each_tools_ui_and_a_hand_call_of_an_app_only_tool_is_recorded(ip: Any) -> None:
    assert ip.line("mcp", f"connect {APPS}") is None
    tools = ip.line("mcp", "tools apps").set_index("tool")
    assert tools["ui"].to_dict() == {"counter": "model + app", "bump": "app only", "summary": "model only",
                                       "probe": "model + app", "frame": "model + app", "plain": "model + app"}
    assert "ui" in ip.line("mcp", "tools").columns
    out = ip.line("mcp", "call apps.bump value=41")
    assert out.text == "bumped to 42"
    recorded = ip.line("synapse", "sql SELECT tool, approval, origin FROM tool_calls")
    assert recorded.values.tolist() == [["bump", "manual", "manual"]]


def test_the_model_is_never_offered_an_app_only_tool(ip: Any, server: LlmServer) -> None:
    """The request on the wire lists the counter and the probe, not `bump` (visibility ["app"]); the model's
    call of a tool that was offered runs and is recorded as the agent's."""
    assert ip.line("mcp", f"connect {APPS}") is None
    server.queue(tool_calls(call("apps__counter", {"start": 2})), text("The counter starts at 2."))
    ip.cell("synapse --model openai:gpt-test --approve auto", "Show me a counter")
    assert ip.ns["_synapse"].status == "finished"
    first, second = server.requests
    offered = sorted(t["function"]["name"] for t in first.body["tools"])
    assert offered == ["apps__counter", "apps__frame", "apps__plain", "apps__probe", "apps__summary"]
    assert "apps__bump" not in str(second.body)
    recorded = ip.line("synapse", "sql SELECT tool, approval, origin FROM tool_calls")
    assert recorded.values.tolist() == [["counter", "auto", "agent"]]
