"""A server that dies: ServerCrashedError at once, restarted on next use, down after too many crashes."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from synapse_nb.errors import ServerCrashedError, ServerDownError
from synapse_nb.mcp_client.connection import MAX_RESTARTS
from synapse_nb.mcp_client.hub import McpHub
from tests.mcp_client.mcp_helpers import Events, demo_stdio, gone

pytestmark = [pytest.mark.anyio, pytest.mark.process]


async def test_crash_mid_call_then_restart_on_next_call(events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        first = await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        with pytest.raises(ServerCrashedError) as info:
            await asyncio.wait_for(hub.call("demo__crash", {}), 1.0)  # within a second
        assert "the next call restarts it" in str(info.value)
        assert info.value.server == "demo"
        crashed = hub.server("demo")
        assert crashed.state == "crashed"
        assert crashed.pid is None
        assert first.pid is not None
        assert await gone(first.pid, 5)
        assert "crashed" in events.names("demo")
        assert len(hub.tools) == first.tool_count  # tools stay offered; calling one restarts the server
        result = await hub.call("demo__echo", {"text": "back again"})
        assert result.text == "back again"
        again = hub.server("demo")
        assert (again.state, again.restarts) == ("connected", 1)
        assert again.pid not in (None, first.pid)
        assert "crashing on purpose" in again.stderr_tail
    assert events.names("demo") == ["connecting", "connected", "crashed", "connecting", "restarted", "disconnected"]
    restart = [e.detail for e in events.items if e.event == "connecting"][1]
    assert isinstance(restart, dict)
    assert (restart["restart"], restart["from"]) == ("automatic", "crashed")


async def test_a_crash_while_idle_is_noticed(events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        info = await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        assert info.pid is not None
        os.kill(info.pid, signal.SIGKILL)
        await events.wait_for("crashed", "demo")
        assert hub.server("demo").state == "crashed"
        assert hub.server("demo").last_error == "the server process was killed by signal 9 (SIGKILL)"
        assert (await hub.call("demo__echo", {"text": "hi"})).text == "hi"


async def test_too_many_crashes_leave_the_server_down_until_restarted(events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        for _ in range(MAX_RESTARTS + 1):
            with pytest.raises(ServerCrashedError):
                await hub.call("demo__crash", {})
        assert hub.server("demo").state == "down"
        assert hub.server("demo").restarts == MAX_RESTARTS
        with pytest.raises(ServerDownError, match=r"run `%mcp restart demo`") as info:
            await hub.call("demo__echo", {"text": "x"})
        assert info.value.server == "demo"
        with pytest.raises(ServerDownError):
            await hub.list_resources("demo")
        assert events.names("demo").count("down") == 1
        await hub.restart("demo")
        assert hub.server("demo").state == "connected"
        assert (await hub.call("demo__echo", {"text": "up"})).text == "up"
        with pytest.raises(ServerCrashedError):  # the budget is fresh after a manual restart
            await hub.call("demo__crash", {})
        assert hub.server("demo").state == "crashed"


async def test_other_calls_in_flight_learn_about_the_crash() -> None:
    async with McpHub() as hub:
        await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        sleeper = asyncio.ensure_future(hub.call("demo__sleep", {"seconds": 30}))
        await asyncio.sleep(0)  # let the sleep be queued first
        with pytest.raises(ServerCrashedError):
            await hub.call("demo__crash", {})
        with pytest.raises(ServerCrashedError):
            await asyncio.wait_for(sleeper, 2.0)
