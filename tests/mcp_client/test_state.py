"""One owner per server's lifecycle: the transition table, the per-name lock, a stop that outlasts a
cancelled caller, and states that stay true (a failed server, a crashed one being inspected). The owner
loop check and a duplicate connect of the same config are in test_hub_memory.py."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import psutil
import pytest

from synapse_nb.errors import McpError, ServerCrashedError, ServerStartError
from synapse_nb.mcp_client.asyncwork import wait_through_cancel
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.mcp_client.info import TRANSITIONS
from tests.mcp_client.mcp_helpers import DEMO_ARGS, Events, demo_stdio, gone, wait_until
from tests.support import tools_server

pytestmark = pytest.mark.anyio


def _demo_children() -> list[psutil.Process]:
    """This process's live demo server children."""
    found = []
    for child in psutil.Process().children():
        try:
            if child.status() != psutil.STATUS_ZOMBIE and str(tools_server.PATH) in child.cmdline():
                found.append(child)
        except psutil.Error:
            continue
    return found


@pytest.mark.process
async def test_every_state_change_is_an_allowed_transition_with_an_event(events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        info = await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        assert info.pid is not None
        os.kill(info.pid, signal.SIGKILL)
        await events.wait_for("crashed", "demo")
        # listing resources and prompts (an inspector opening) must not restart a crashed server
        for listing in (hub.list_resources, hub.list_prompts):
            with pytest.raises(ServerCrashedError, match="the next tool call restarts it"):
                await listing("demo")
        with pytest.raises(ServerCrashedError):
            await hub.read_resource("demo", "demo://schema")
        assert hub.server("demo").state == "crashed"
        assert events.names("demo").count("connecting") == 1
        # a tool call does
        assert (await hub.call("demo__echo", {"text": "again"})).text == "again"
        await hub.restart("demo")
    moves = [(e.detail["from"], e.event) for e in events.items]  # type: ignore[index]
    assert [m[1] for m in moves] == ["connecting", "connected", "crashed", "connecting", "restarted",
                                     "connecting", "restarted", "disconnected"]
    state_of = {"disconnected": "stopped", "restarted": "connected"}
    for was, event in moves:
        assert state_of.get(event, event) in TRANSITIONS[was], (was, event)
    restarts = [e.detail["restart"] for e in events.items if e.event == "connecting"]  # type: ignore[index]
    assert restarts == [None, "automatic", "manual"]


@pytest.mark.process
async def test_two_concurrent_connects_of_one_name_leave_one_process() -> None:
    before = {p.pid for p in _demo_children()}
    async with McpHub() as hub:
        # different configurations: the later one replaces the earlier one, which must not linger
        first, second = await asyncio.gather(
            hub.connect("x", command=sys.executable, args=DEMO_ARGS, env={"A": "1"}),
            hub.connect("x", command=sys.executable, args=DEMO_ARGS, env={"A": "2"}),
        )
        assert first.pid is not None
        assert second.pid is not None
        assert first.pid != second.pid
        assert await gone(first.pid, 10)
        live = [p.pid for p in _demo_children() if p.pid not in before]
        assert live == [second.pid]
        assert hub.server("x").pid == second.pid


@pytest.mark.process
@pytest.mark.parametrize("how", ["aclose", "disconnect"])
async def test_a_stop_survives_a_native_cancel_of_the_stopping_task(how: str) -> None:
    hub = McpHub()
    info = await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
    assert info.pid is not None
    call = asyncio.ensure_future(hub.call("demo__sleep", {"seconds": 30}))
    await wait_until(lambda: "sleep started" in hub.server("demo").stderr_tail, what="the sleep to start")
    stopping = asyncio.ensure_future(hub.aclose() if how == "aclose" else hub.disconnect("demo"))
    await asyncio.sleep(0)  # the stop has begun
    stopping.cancel()  # asyncio's own cancellation, which anyio's shield does not hold off
    with pytest.raises(asyncio.CancelledError):
        await stopping
    with pytest.raises(McpError, match="disconnected during tool 'sleep'"):
        await asyncio.wait_for(call, 10)
    assert await gone(info.pid, 10)
    await wait_until(lambda: hub.servers == [], what="the server to leave the hub")
    await hub.aclose()


async def test_a_server_that_never_connected_says_failed_and_how_to_retry(events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        with pytest.raises(ServerStartError):
            await hub.connect("ghost", command="no-such-mcp-server-anywhere")
        info = hub.server("ghost")
        assert (info.state, info.ever_connected, info.tool_count, info.pid) == ("failed", False, 0, None)
        assert info.status == "failed — `%mcp restart ghost` to retry"
        assert hub.tools == []
        with pytest.raises(ServerCrashedError, match=r"failed — `%mcp restart ghost` to retry"):
            await hub.list_prompts("ghost")


async def test_the_drain_outlasts_a_native_cancel_and_then_passes_it_on() -> None:
    release = asyncio.Event()
    worker = asyncio.ensure_future(release.wait())  # a request's worker still finishing
    drain = asyncio.ensure_future(wait_through_cancel({worker}, 30))
    for _ in range(3):
        await asyncio.sleep(0)  # let the drain start waiting (no time passes: loop turns only)
    drain.cancel()
    for _ in range(3):
        await asyncio.sleep(0)
    assert not drain.done()  # the cancel did not cut the wait short
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await drain  # ... and it is not lost either
    assert worker.done()
