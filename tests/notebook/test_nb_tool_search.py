"""Tool search in the notebook (issue 35, item 2), with real servers over stdio (mcp-server-time from PyPI, our demo
server) and turns through the wire-format model server: `%mcp search`, the budget as a setting and a cell option,
a turn over the budget that searches and loads, recorded like any tool call, and the history it leaves breaking
the next search's ties."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError
from traitlets import TraitError

from synapse_nb.agent.tool_search import SEARCH_TOOL
from synapse_nb.notebook.commands.args import parse_ask
from synapse_nb.notebook.subcommands import MCP_SUBCOMMANDS
from synapse_nb.notebook.turns.tool_search import worked_before
from tests.support.catalog_servers import PYSERVERS
from tests.support.llm_server import LlmServer, call, text, tool_calls

pytestmark = pytest.mark.process
TIME = PYSERVERS / "mcp-server-time"


@pytest.fixture
def model(clean_env: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[LlmServer]:
    with LlmServer() as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-search-0123456789")
        yield llm


def _connect(ip: Any) -> None:
    if not TIME.is_file():
        pytest.fail(f"mcp-server-time is not installed at {TIME}: run `make tools`")
    ip.line("mcp", f"connect time -- {TIME} --local-timezone UTC")
    ip.line("mcp", f"connect demo -- {sys.executable} -m synapse_nb.mcp_client.demo_server")


SKILL_TOOLS = ("skills__load", "skills__read")
"""Offered beside the search while a server lists skills (the demo server serves one); not the search's business."""


def _offered(request: Any) -> list[str]:
    """The tools a request offered, less the skill tools."""
    return [t["function"]["name"] for t in request.body.get("tools", []) if t["function"]["name"] not in SKILL_TOOLS]


def test_mcp_search_ranks_the_connected_tools_and_says_what_is_wrong_in_one_line(
    ip: Any, capsys: pytest.CaptureFixture[str],
) -> None:
    assert ip.line("mcp", "search list the tables").empty
    assert capsys.readouterr().out.startswith("no tools to search: connect an MCP server first")
    _connect(ip)
    found = ip.line("mcp", "search what's the time in Tokyo right now?")
    assert isinstance(found, pd.DataFrame)
    assert list(found.columns) == ["rank", "name", "server", "tool", "score", "description"]
    assert set(found["name"].iloc[:2]) == {"time__get_current_time", "time__convert_time"}
    assert found["rank"].tolist() == list(range(1, len(found) + 1))
    assert found["score"].is_monotonic_decreasing
    tables = ip.line("mcp", "search -n 1 list the tables with their row counts")
    assert tables["name"].tolist() == ["demo__list_tables"]
    capsys.readouterr()
    assert ip.line("mcp", "search zzzz qqqq").empty
    said = capsys.readouterr().out.strip()  # an empty table alone does not say why, or what to do
    assert said == ("no tool of the 7 connected shares a word with 'zzzz qqqq': say what it does or what it acts "
                    "on in other words, or see them all with %mcp tools"), said
    for bad, says in (("", "say what the tool should do"), ("-n x tables", "-n takes a number of rows"),
                      ("-n 2", "say what the tool should do")):
        with pytest.raises(UsageError, match=says):
            ip.line("mcp", f"search {bad}")
    assert "search" in MCP_SUBCOMMANDS


def test_a_server_connected_with_defer_tools_is_searched_for_under_the_budget(ip: Any, model: LlmServer) -> None:
    ip.line("mcp", f"connect demo --defer-tools -- {sys.executable} -m synapse_nb.mcp_client.demo_server")
    ip.line("mcp", f"connect time -- {TIME} --local-timezone UTC")
    assert ip.state.hub.server_config("demo").defer_tools is True
    model.queue(text("ok"), text("ok"))
    ip.cell("synapse --model openai:gpt-test", "hello")
    assert sorted(_offered(model.requests[0])) == ["time__convert_time", "time__get_current_time", SEARCH_TOOL]
    ip.cell("synapse --model openai:gpt-test --tool-budget 7", "hello")  # the cell's budget wins
    assert len(_offered(model.requests[1])) == 7


def test_the_budget_is_a_setting_and_a_cell_option(ip: Any) -> None:
    assert ip.magics.tool_budget == 40
    assert ip.magics.settings().tool_budget == 40
    ip.magics.tool_budget = 0
    assert ip.magics.settings().tool_budget == 0
    with pytest.raises(TraitError, match="tool_budget must be a number of tools >= 0"):
        ip.magics.tool_budget = -1
    assert parse_ask("--tool-budget 5").tool_budget == 5
    assert parse_ask("").tool_budget is None
    with pytest.raises(UsageError, match="--tool-budget"):
        parse_ask("--tool-budget many")


def test_a_turn_over_the_budget_searches_loads_and_calls_and_the_history_remembers(
    ip: Any, model: LlmServer
) -> None:
    _connect(ip)
    model.queue(
        tool_calls(call(SEARCH_TOOL, {"query": "current time in a timezone"}, id="s1")),
        tool_calls(call("time__get_current_time", {"timezone": "Asia/Tokyo"}, id="t1")),
        text("It is late in Tokyo."),
    )
    ip.cell("synapse --model openai:gpt-test --tool-budget 3", "What time is it in Tokyo?")
    result = ip.ns["_synapse"]
    assert result.status == "finished", result.error

    first, second, third = model.requests
    assert _offered(first) == [SEARCH_TOOL]  # 7 tools connected, a budget of 3
    assert "time__get_current_time" in _offered(second)
    assert SEARCH_TOOL in _offered(second)
    tool_answer = [m["content"] for m in third.body["messages"] if m["role"] == "tool"][1]
    assert "Asia/Tokyo" in tool_answer  # the real server answered
    # the search is a tool call like any other: shown, recorded
    assert [(c.server, c.tool) for c in result.calls] == [("tools", "search"), ("time", "get_current_time")]
    ip.state.store.flush()
    recorded = ip.state.store.history().sql("SELECT server, tool FROM tool_calls ORDER BY started_at")
    assert recorded.values.tolist() == [["tools", "search"], ["time", "get_current_time"]]
    # what worked is the next search's tie-breaker (the search's own call is not a use)
    uses = worked_before(ip.state.store)
    assert [(u.prompt, u.server, u.tool) for u in uses] == [("What time is it in Tokyo?", "time", "get_current_time")]

    # at the budget, nothing changes: every tool, no search
    model.clear()
    model.queue(text("ok"))
    ip.cell("synapse --model openai:gpt-test --tool-budget 7", "hello")
    assert SEARCH_TOOL not in _offered(model.requests[0])
    assert len(_offered(model.requests[0])) == 7
