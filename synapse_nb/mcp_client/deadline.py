"""Request deadlines, the one timeout mechanism of requests to a server: progress reports push them back,
a question to the user holds them, a maximum bounds both.

Every request (tool calls, resources, prompts, log level, roots, subscriptions) runs its SDK call under a
Deadline entered here, in the task that awaits it (inflight.py). A tool call that reports progress is alive,
so each report restarts its timeout (as the MCP Inspector does). A request whose server is waiting on the
user (an elicitation form, a sampling approval, a sign-in) must not time out while the user reads and types,
so asking holds every deadline of that server's requests at their maximum and restarts them when the answer
is given.

One timer per server watches all of its deadlines: it is set for the earliest one and, when it fires, ends
the requests whose deadline has passed (`on_expired`: inflight.py cancels the call, the SDK tells the server)
and is set again for the next. A deadline that moves later leaves the timer where it is (it fires, finds
nothing due, and is set again), so a call costs no timer of its own: a cancel scope with a deadline per call
(a timer handle pushed onto and taken off the loop's heap, the scope's own bookkeeping) was ~40% of the hub's
own work per tool call (bench row 18a).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from types import TracebackType

__all__ = ["Deadline", "Deadlines"]

_EARLY = 1e-6
"""Seconds a timer may fire before its time (the loop runs handles due within its clock's resolution)."""


class Deadline:
    """The deadline of one request, entered as a context manager around its SDK call: `timeout` seconds from
    the last sign of life, never past `max_total` from the start (both on the loop's clock); `on_expired()` is
    called once when it passes."""

    __slots__ = ("_cap", "_owner", "_timeout", "at", "expired", "on_expired")

    def __init__(self, owner: Deadlines, timeout: float | None, max_total: float,
                 on_expired: Callable[[], None]) -> None:
        self._owner = owner
        self._timeout = timeout
        self._cap = max(timeout, max_total) if timeout is not None else math.inf  # from the start, until entered
        self.at = math.inf
        self.expired = False
        self.on_expired = on_expired

    def __enter__(self) -> Deadline:
        owner = self._owner
        if self._timeout is not None:
            start = owner.now()
            self._cap += start
            self.at = start + self._timeout
        owner.active.add(self)
        if owner.asking_user:
            self.hold()
        else:
            owner.watch(self.at)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._owner.active.discard(self)

    def push(self) -> None:
        """A sign of life: the deadline moves to `timeout` seconds from now (never past the maximum)."""
        if self._timeout is not None and not self._owner.asking_user:
            self._move(min(self._owner.now() + self._timeout, self._cap))

    def uncap(self) -> None:
        """No maximum any more (a call that became an MCP task lives as long as the server says it is alive)."""
        self._cap = math.inf
        self.push()

    def hold(self) -> None:
        """The user is asked: the deadline stops at its maximum until the next `push()`."""
        if self._timeout is not None:
            self._move(self._cap)

    def _move(self, at: float) -> None:
        self.at = at
        self._owner.watch(at)


class Deadlines:
    """The deadlines of one server's requests in flight, and the one timer that watches them."""

    def __init__(self) -> None:
        self.active: set[Deadline] = set()
        self._asking = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf
        self._loop: asyncio.AbstractEventLoop | None = None  # the timer's

    @property
    def asking_user(self) -> bool:
        return self._asking > 0

    def track(self, timeout: float | None, max_total: float, on_expired: Callable[[], None]) -> Deadline:
        """The deadline of one request (enter it around the SDK call); `push()` it on each sign of life."""
        return Deadline(self, timeout, max_total, on_expired)

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    def watch(self, at: float) -> None:
        """Have the timer fire by `at` (it stays where it is when it fires sooner)."""
        if at == math.inf:
            return
        loop = asyncio.get_running_loop()
        if at >= self._timer_at and loop is self._loop:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._loop, self._timer_at = loop, at
        self._timer = loop.call_at(at, self._fire)

    def _fire(self) -> None:
        self._timer, self._timer_at = None, math.inf
        now = self.now() + _EARLY
        later = math.inf
        for deadline in list(self.active):
            if deadline.expired:
                continue
            if deadline.at <= now:
                deadline.expired = True
                deadline.on_expired()
            else:
                later = min(later, deadline.at)
        self.watch(later)

    def asking(self) -> _Asking:
        """Hold every deadline while the user is asked something (a context manager); restart them once answered."""
        return _Asking(self)

    def begin_asking(self) -> None:
        self._asking += 1
        for deadline in self.active:
            deadline.hold()

    def end_asking(self) -> None:
        self._asking -= 1
        if not self._asking:
            for deadline in list(self.active):
                deadline.push()


class _Asking:
    """`Deadlines.asking()`: every deadline held from entering to leaving."""

    __slots__ = ("_owner",)

    def __init__(self, owner: Deadlines) -> None:
        self._owner = owner

    def __enter__(self) -> None:
        self._owner.begin_asking()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._owner.end_asking()
