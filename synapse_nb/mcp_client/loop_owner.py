"""LoopOwner: the event loop a hub's servers live on, and the per-name locks that belong to it."""

from __future__ import annotations

import asyncio

from ..errors import McpError

__all__ = ["LoopOwner"]


class LoopOwner:
    """The servers' owner tasks, locks and streams live on one loop; this says which, and guards it.

    The first connect (or one after every server is gone) makes the running loop the owner; a request
    from another loop raises McpError, naming the way to call across loops.
    """

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._locks: dict[str, asyncio.Lock] = {}

    def adopt(self, *, idle: bool) -> None:
        """Take the running loop as the owner when there is none yet, or the hub is `idle` (nothing
        connected, nothing closing) or its loop closed; otherwise check it is the owner."""
        loop = asyncio.get_running_loop()
        if self._loop is None or idle or self._loop.is_closed():
            if self._loop is not loop:
                self._locks.clear()  # an asyncio.Lock belongs to the loop it was first used on
            self._loop = loop
        else:
            self.check()

    def check(self) -> None:
        """Raise McpError when called from a loop other than the owner (another thread, a second asyncio.run)."""
        loop = asyncio.get_running_loop()
        if self._loop is not None and loop is not self._loop and not self._loop.is_closed():
            raise McpError(
                "this McpHub belongs to the event loop that connected its servers, and was called from another "
                "one (another thread, or a second asyncio.run); call it from its own loop, e.g. with "
                "asyncio.run_coroutine_threadsafe(hub.call(...), loop)"
            )

    def lock(self, name: str) -> asyncio.Lock:
        """The lock of `name` (a server name orders its connect, restart and disconnect)."""
        lock = self._locks.get(name)
        if lock is None:
            lock = self._locks[name] = asyncio.Lock()
        return lock
