"""Requests run in their caller's task (inflight.py): how each way of ending one reaches that caller.

The hub ends a request by cancelling the caller's task; none of that cancellation may leak: the caller
gets the hub's error with its task not cancelling, a caller cancelled as well gets its own cancellation,
and an `asyncio.timeout` around the call still turns its own expiry into TimeoutError. The demo server
over stdio, a `sleep` call in flight.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from synapse_nb.errors import McpError
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.mcp_client.inflight import Request
from tests.mcp_client.mcp_helpers import demo_stdio, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.process]


async def _in_flight(hub: McpHub) -> Request:
    """The one request running on the demo server now."""
    requests: set[Request] = set()

    def running() -> bool:
        session = hub._conn("demo")._session
        requests.clear()
        requests.update(session.requests if session is not None else ())
        return len(requests) == 1 and next(iter(requests)).running

    await wait_until(running, what="the sleep call under way")
    return next(iter(requests))


async def _sleeping(hub: McpHub, wrap: Any = None) -> tuple[asyncio.Task[Any], Request]:
    async def call() -> Any:
        if wrap is None:
            return await hub.call("demo__sleep", {"seconds": 30})
        async with wrap():
            return await hub.call("demo__sleep", {"seconds": 30})

    task = asyncio.get_running_loop().create_task(call())
    return task, await _in_flight(hub)


async def test_a_call_runs_in_the_callers_task_and_the_hubs_end_leaves_it_uncancelled() -> None:
    async with McpHub() as hub:
        await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        task, req = await _sleeping(hub)
        assert req.task is task  # no task of its own
        req.end(McpError("ended by the hub for this test", server="demo"))
        with pytest.raises(McpError, match="ended by the hub for this test"):
            await task
        assert task.cancelling() == 0  # the hub took back its cancellation
        assert not task.cancelled()
        assert req.finished is not None
        assert req.finished.done()
        assert (await hub.call("demo__echo", {"text": "still fine"})).text == "still fine"


async def test_a_caller_cancelled_as_the_hub_ends_its_call_gets_its_own_cancellation() -> None:
    async with McpHub() as hub:
        await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        task, req = await _sleeping(hub)
        req.end(McpError("ended by the hub", server="demo"))
        task.cancel()  # in the same turn of the loop
        with pytest.raises(asyncio.CancelledError):
            await task
        assert task.cancelled()


async def test_a_timeout_around_the_call_still_raises_timeout_when_the_hub_ends_it_too() -> None:
    scope: list[asyncio.Timeout] = []

    def timeout() -> asyncio.Timeout:
        scope.append(asyncio.timeout(None))
        return scope[-1]

    async with McpHub() as hub:
        await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        task, req = await _sleeping(hub, timeout)
        scope[0].reschedule(asyncio.get_running_loop().time())  # expires on the loop's next turn
        req.end(McpError("ended by the hub", server="demo"))  # before that turn
        with pytest.raises(TimeoutError):
            await task
        assert task.cancelling() == 0
