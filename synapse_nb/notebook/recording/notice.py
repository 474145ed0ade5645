"""HistoryNotice: why turns are not recorded, or not written to the file yet, said once per kernel."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...history.store import HistoryStore

__all__ = ["HistoryNotice"]


class HistoryNotice:
    """The one note a kernel's turns give about the history store: in the first turn's display after the problem
    is known (the store opens in the background), never again in that kernel."""

    def __init__(self, store: Callable[[], HistoryStore]) -> None:
        self._store = store
        self.said = False

    def take(self) -> str | None:
        """The note, the first time there is one; None before, and after it was taken."""
        if self.said:
            return None
        store = self._store()
        if not store.available:
            note = f"this turn is not recorded: {store.problem or 'the history store is closed'}"
        elif store.paused:
            note = f"history: {store.paused}"
        else:
            return None
        self.said = True
        return note
