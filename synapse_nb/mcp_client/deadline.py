"""Request deadlines, the one timeout mechanism of requests to a server: progress reports push them back,
a question to the user holds them, a maximum bounds both.

Every request (tool calls, resources, prompts, log level, roots, subscriptions) runs its SDK call
inside an anyio cancel scope entered here, in the task that awaits it (inflight.py). A tool call that reports
progress is alive, so each report restarts its timeout (as the MCP Inspector does). A request whose
server is waiting on the user (an elicitation form, a sampling approval, a sign-in) must not time out
while the user reads and types, so asking holds every deadline of that server's requests at their
maximum and restarts them when the answer is given.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import anyio

__all__ = ["Deadline", "Deadlines"]


class Deadline:
    """The deadline of one call: `timeout` seconds from the last sign of life, never past `cap` (loop time)."""

    def __init__(self, owner: Deadlines, scope: anyio.CancelScope, timeout: float | None, cap: float) -> None:
        self._owner = owner
        self.scope = scope
        self._timeout = timeout
        self._cap = cap

    def push(self) -> None:
        if self._timeout is not None and not self._owner.asking_user:
            self.scope.deadline = min(anyio.current_time() + self._timeout, self._cap)

    def uncap(self) -> None:
        """No maximum any more (a call that became an MCP task lives as long as the server says it is alive)."""
        self._cap = math.inf
        self.push()

    def hold(self) -> None:
        if self._timeout is not None:
            self.scope.deadline = self._cap


class Deadlines:
    """The deadlines of one server's calls in flight."""

    def __init__(self) -> None:
        self._active: set[Deadline] = set()
        self._asking = 0

    @property
    def asking_user(self) -> bool:
        return self._asking > 0

    @contextmanager
    def track(self, timeout: float | None, max_total: float) -> Iterator[Deadline]:
        """The deadline of one call (its cancel scope is entered here); `push()` it on each sign of life."""
        start = anyio.current_time()
        cap = start + max(timeout, max_total) if timeout is not None else math.inf
        with anyio.CancelScope(deadline=start + timeout if timeout is not None else math.inf) as scope:
            deadline = Deadline(self, scope, timeout, cap)
            self._active.add(deadline)
            if self.asking_user:
                deadline.hold()
            try:
                yield deadline
            finally:
                self._active.discard(deadline)

    @contextmanager
    def asking(self) -> Iterator[None]:
        """Hold every deadline while the user is asked something; restart them once answered."""
        self._asking += 1
        for deadline in self._active:
            deadline.hold()
        try:
            yield
        finally:
            self._asking -= 1
            if not self._asking:
                for deadline in list(self._active):
                    deadline.push()
