"""DEPARTURE: whether this process is about to end, told to task followers so a restart leaves their tasks running.

Jupyter's restart and shutdown (jupyter_client's `shutdown_kernel`) interrupt the kernel first and then ask it
to shut down over the control channel. An interrupt cancels the task a cell waits on (task_run.drive); an
interrupt that only precedes a shutdown must not, because tasks outlive the kernel and the next kernel follows
them again (the history has their ids). The two cannot be told apart when the interrupt arrives, so once
something watches for the shutdown (`watch()`: the notebook's kernel room wraps ipykernel's `shutdown_request`),
an interrupted follower waits up to GRACE seconds for `announce()` before it cancels. With nobody watching (plain
Python, a script) it cancels at once.
"""

from __future__ import annotations

import asyncio
import threading

__all__ = ["DEPARTURE", "GRACE", "Departure"]

GRACE = 0.5
"""Seconds an interrupted task follower waits for a shutdown to be announced before it cancels the task.

jupyter_client sends the shutdown request right after its interrupt, so it arrives within milliseconds even on a
busy machine; an interrupt alone still cancels on the server well within a second."""


class Departure:
    """A one-way flag, set from any thread (ipykernel handles control messages in a thread of its own)."""

    def __init__(self) -> None:
        self._announced = threading.Event()
        self._watchers = 0
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    @property
    def announced(self) -> bool:
        """Whether the process said it is ending."""
        return self._announced.is_set()

    @property
    def watched(self) -> bool:
        """Whether anything will announce an ending (so waiting for one can pay off)."""
        return self._watchers > 0

    def watch(self) -> None:
        """Something will call `announce()` when the process is asked to end (undo with `unwatch`)."""
        with self._lock:
            self._watchers += 1

    def unwatch(self) -> None:
        """Undo one `watch()`."""
        with self._lock:
            self._watchers = max(0, self._watchers - 1)

    def announce(self) -> None:
        """The process is ending: wake every `coming()` waiting now, and answer later ones at once."""
        with self._lock:
            self._announced.set()
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_settle, future)

    async def coming(self, grace: float = GRACE) -> bool:
        """Whether the process is ending: at once when announced or unwatched, else after up to `grace` seconds."""
        if self.announced:
            return True
        if not self.watched:
            return False
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._announced.is_set():
                return True
            self._waiters.append((loop, future))
        try:
            await asyncio.wait_for(asyncio.shield(future), grace)
        except TimeoutError:
            return False
        finally:
            with self._lock:
                self._waiters = [(lp, f) for lp, f in self._waiters if f is not future]
        return True


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


DEPARTURE = Departure()
"""The process's one flag: a kernel restarts or shuts down as a whole."""
