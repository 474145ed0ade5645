"""The inspector's search box (issue 35, item 2): a request in plain words, the tools ranked by the same search as
`%mcp search`; against the fake facade, and against the real state with the real demo server over stdio."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import pytest

from synapse_nb.errors import SynapseError
from synapse_nb.notebook.subcommands import widget_parts
from synapse_nb.notebook.widgets import inspector
from synapse_nb.notebook.widgets.tool_search_box import ToolSearchBox
from tests.notebook.widgets.real_state import CONNECT_TIMEOUT, private_state
from tests.notebook.widgets.widget_fakes import FakeRunner, FakeState

ROWS = [{"rank": 1, "name": "demo__query", "server": "demo", "tool": "query", "score": 1.0,
         "description": "Run one <b>read-only</b> SQL query"}]


def test_the_box_shows_the_ranked_tools_escaped_and_says_when_none_matched(state: FakeState) -> None:
    asked: list[str] = []

    def search(text: str) -> list[dict[str, Any]]:
        asked.append(text)
        return ROWS if "sql" in text else []

    ins = inspector(dataclasses.replace(state, search_tools=search))
    box = ins.search_box
    assert isinstance(box, ToolSearchBox)
    assert box in ins.children
    box.box.value = "  run some sql "
    assert asked == ["run some sql"]
    assert "<code>demo__query</code>" in box.hits.value
    assert "&lt;b&gt;read-only&lt;/b&gt;" in box.hits.value  # a server's words are text, not HTML
    box.box.value = "zzz"
    assert "No tool matches “zzz”" in box.hits.value
    box.box.value = ""
    assert box.hits.value == ""


def test_a_failing_search_is_one_line_in_the_box(state: FakeState) -> None:
    def search(text: str) -> list[dict[str, Any]]:
        raise SynapseError("the history file is locked")

    box = ToolSearchBox(search)
    box.box.value = "anything"
    assert box.hits.value == '<span class="snb-err">the history file is locked</span>'


def test_no_search_no_box_and_one_servers_inspector_has_none(state: FakeState, runner: FakeRunner) -> None:
    assert inspector(state).search_box is None
    assert inspector(dataclasses.replace(state, search_tools=lambda text: ROWS), "demo").search_box is None


@pytest.mark.process
def test_the_inspectors_box_ranks_the_real_servers_tools_as_mcp_search_does() -> None:
    with private_state() as state:
        state.runner.run(state.hub.connect("demo", command=sys.executable,
                                           args=["-m", "synapse_nb.mcp_client.demo_server"]), timeout=CONNECT_TIMEOUT)
        parts = widget_parts(state)
        assert parts.search_tools is not None
        ins = inspector(parts)
        assert ins.search_box is not None
        ins.search_box.box.value = "summarise a column: min, max, mean"
        assert "<code>demo__summarize_column</code>" in ins.search_box.hits.value.split("</tr>")[1]
        rows = parts.search_tools("summarise a column: min, max, mean")
        assert rows[0]["name"] == "demo__summarize_column"
