"""ExitGuard: kills the server processes a hub still has when the interpreter exits without `aclose()`."""

from __future__ import annotations

import atexit
import contextlib
import weakref
from collections.abc import Callable

from .process import kill_tree
from .table import ConnectionTable

__all__ = ["ExitGuard"]


class ExitGuard:
    """One atexit hook while armed. It holds its table weakly: a hub nobody holds any more is not kept
    alive by the hook (its processes are then the SDK's and the OS's to end)."""

    def __init__(self, table: ConnectionTable) -> None:
        self._table = weakref.ref(table)
        self._hook: Callable[[], None] | None = None

    def arm(self) -> None:
        if self._hook is None:
            self._hook = self._cleanup
            atexit.register(self._hook)

    def disarm(self) -> None:
        if self._hook is not None:
            atexit.unregister(self._hook)
            self._hook = None

    def _cleanup(self) -> None:
        table = self._table()
        for conn in table if table is not None else ():
            if conn.state.process is not None:
                with contextlib.suppress(Exception):
                    kill_tree(conn.state.process, grace=0.5)
