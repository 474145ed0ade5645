"""Departure: an interrupted task follower waits for a shutdown only when something announces one, and learns of
it from another thread (ipykernel's control thread) at once."""

from __future__ import annotations

import asyncio
import threading

from synapse_nb.departure import Departure


def test_with_nobody_watching_an_interrupt_is_not_a_departure() -> None:
    departure = Departure()
    assert asyncio.run(departure.coming(grace=60)) is False  # answered at once: a 60 s wait would hang the test


def test_a_shutdown_announced_from_another_thread_wakes_the_waiting_follower() -> None:
    departure = Departure()
    departure.watch()

    async def scenario() -> bool:
        waiting = asyncio.ensure_future(departure.coming(grace=60))
        await asyncio.sleep(0)  # the follower waits now
        threading.Thread(target=departure.announce).start()
        return await asyncio.wait_for(waiting, 30)

    assert asyncio.run(scenario()) is True
    assert departure.announced
    assert asyncio.run(departure.coming(grace=60)) is True  # later followers are answered at once


def test_no_announcement_within_the_grace_means_an_interrupt() -> None:
    departure = Departure()
    departure.watch()
    assert asyncio.run(departure.coming(grace=0.05)) is False
    departure.unwatch()
    assert not departure.watched
