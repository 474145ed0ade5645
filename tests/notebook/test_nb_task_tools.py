"""Tools that only run as MCP tasks (server-everything's `simulate-research-query`), in the notebook: listed by
`%mcp tools` with a note, offered to the model, and called by hand like any tool."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from synapse_nb.events import Event, ServerEvent
from tests.support.npm_servers import EVERYTHING, node_for

TASK_TOOL = "everything__simulate-research-query"
TIMEOUT = 60

pytestmark = [pytest.mark.process, pytest.mark.node]


def connect_everything(ip: Any) -> None:
    """`%mcp connect everything -- node ...`, then wait until the server's second tool list (it adds tools,
    the task one among them, after it is initialised and says so with list_changed) has been read."""
    node = node_for(EVERYTHING)
    listed = asyncio.Event()

    def listener(event: Event) -> None:
        if isinstance(event, ServerEvent) and event.event == "tools_changed" and any(
                t.name == TASK_TOOL for t in ip.state.hub.all_tools):
            listed.set()

    unsubscribe = ip.state.on_server_event(listener)
    try:
        ip.line("mcp", f"connect everything -- {node} {EVERYTHING} stdio")
        if not any(t.name == TASK_TOOL for t in ip.state.hub.all_tools):
            ip.state.runner.run(asyncio.wait_for(listed.wait(), TIMEOUT))
    finally:
        unsubscribe()


def test_task_tools_are_listed_with_a_note_offered_and_called_by_hand(ip: Any) -> None:
    connect_everything(ip)
    info = ip.state.hub.server("everything")
    frame = ip.line("mcp", "tools everything")
    assert len(frame) == info.tool_count  # the count on connect and the listing agree
    row = frame[frame["name"] == TASK_TOOL]
    assert len(row) == 1
    assert row["note"].iloc[0] == "runs as an MCP task"
    assert set(frame[frame["name"] != TASK_TOOL]["note"]) == {""}

    assert TASK_TOOL in {s.name for s in ip.state.registry.specs()}  # the server serves tasks: offered

    out = ip.line("mcp", 'call everything.simulate-research-query {"topic": "x"}')
    assert "# Research Report: x" in out.result.text
