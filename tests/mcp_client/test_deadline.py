"""deadline.py: one timer per server watches its requests' deadlines; each request ends once, when its own passes.

In process, on the loop's clock, no server: what inflight.py relies on when it cancels a request at its deadline.
"""

from __future__ import annotations

import asyncio

import pytest

from synapse_nb.mcp_client.deadline import Deadlines

pytestmark = pytest.mark.anyio

WAIT = 30.0  # seconds a test waits for a deadline of a fraction of a second, however busy the machine


async def test_each_deadline_ends_its_request_once_in_the_order_they_pass() -> None:
    deadlines = Deadlines()
    ended: list[str] = []
    second = asyncio.Event()

    def end(name: str) -> None:
        ended.append(name)
        if name == "second":
            second.set()

    with deadlines.track(0.3, 0.3, lambda: end("second")), deadlines.track(0.05, 0.05, lambda: end("first")):
        await asyncio.wait_for(second.wait(), WAIT)  # the timer, set for the first, is set again for the second
    assert ended == ["first", "second"]


async def test_a_request_that_finished_is_never_ended() -> None:
    deadlines = Deadlines()
    ended: list[str] = []
    later = asyncio.Event()
    with deadlines.track(0.01, 0.01, lambda: ended.append("finished")):
        pass  # the request finished before its deadline; the timer set for it stays
    with deadlines.track(0.1, 0.1, later.set):
        await asyncio.wait_for(later.wait(), WAIT)
    assert ended == []


async def test_a_deadline_held_while_the_user_is_asked_moves_back_when_answered() -> None:
    deadlines = Deadlines()
    ended = asyncio.Event()
    deadlines.begin_asking()
    with deadlines.track(0.05, 600.0, ended.set) as deadline:
        start = asyncio.get_running_loop().time()
        assert deadline.at >= start + 599  # entered while the user is asked: held at its maximum, the timer there
        deadlines.end_asking()
        assert deadline.at < start + 599  # answered: 0.05 s from now again
        await asyncio.wait_for(ended.wait(), WAIT)  # so the timer was set sooner (else it would fire in 600 s)
    assert deadline.expired


async def test_progress_pushes_the_deadline_back_but_never_past_the_maximum() -> None:
    deadlines = Deadlines()
    with deadlines.track(10.0, 15.0, lambda: None) as deadline:
        start = asyncio.get_running_loop().time()
        deadline.push()
        assert start + 9 < deadline.at <= start + 10.5
        deadline.uncap()
        assert deadline.at <= asyncio.get_running_loop().time() + 10.0
    with deadlines.track(None, 15.0, lambda: None) as unbounded:
        unbounded.push()
        assert unbounded.at == float("inf")
