"""Status notifications of MCP tasks, from a server that sends them: server-everything (2025-11-25) announces each
status change of its task tool with `notifications/tasks/status`, over stdio and streamable HTTP. The client takes
what they say at once, instead of waiting for its next poll (a notification's look stands in for a `tasks/get`);
fastmcp-tasks sends none, and its tasks are polled as before."""

from __future__ import annotations

import asyncio

import pytest

from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.mcp_client.task_watch import TaskWatch
from synapse_nb.task_state import TaskState
from tests.support.task_servers import RESEARCH, connect_everything, everything_stdio, tasks_stdio

pytestmark = pytest.mark.anyio
TIMEOUT = 30
STAGES = ["Gathering sources...", "Analyzing content...", "Synthesizing findings...", "Generating report..."]


async def _research(hub: McpHub, topic: str) -> tuple[str, TaskWatch, list[TaskState]]:
    seen: list[TaskState] = []
    watch = TaskWatch(seen.append)
    result = await asyncio.wait_for(hub.call(RESEARCH, {"topic": topic}, task=watch), TIMEOUT)
    return result.text, watch, seen


@pytest.mark.node
async def test_status_notifications_are_taken_over_stdio() -> None:
    async with McpHub() as hub:
        await connect_everything(hub, TIMEOUT, **everything_stdio())
        text, watch, seen = await _research(hub, "tides")
    assert "# Research Report: tides" in text
    assert watch.notified >= 1  # the server announced each stage: at least one was taken without a poll
    assert [s.status_message for s in seen if s.status == "working"] == STAGES  # each stage once, in order
    assert seen[-1].status == "completed"


@pytest.mark.node
async def test_status_notifications_are_taken_over_streamable_http(everything_url: str) -> None:
    async with McpHub() as hub:
        await connect_everything(hub, TIMEOUT, url=everything_url)
        text, watch, seen = await _research(hub, "dunes")
    assert "# Research Report: dunes" in text
    assert watch.notified >= 1
    assert seen[-1].status == "completed"


@pytest.mark.process
async def test_a_server_that_sends_none_is_polled() -> None:
    seen: list[TaskState] = []
    watch = TaskWatch(seen.append)
    async with McpHub() as hub:
        await hub.connect("fm", **tasks_stdio())  # type: ignore[arg-type]
        result = await asyncio.wait_for(hub.call("fm__slow", {"seconds": 1}, task=watch), TIMEOUT)
    assert result.text == "slow done after 1 s"
    assert watch.notified == 0
    assert seen[-1].status == "completed"
