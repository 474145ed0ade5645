"""The history reader for commands and widgets: None, or one UsageError line, when the history file cannot be read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ...errors import SynapseError
from ..usage import usage_error

if TYPE_CHECKING:
    from ...history.reader import History
    from ...history.store import HistoryStore

__all__ = ["reader", "require_reader"]


def reader(store: HistoryStore) -> History | None:
    """A reader over the history file, or None when it cannot be used."""
    if not store.available:
        return None
    return store.history()


def require_reader(store: HistoryStore) -> History:
    """The history reader, or a UsageError saying why there is none."""
    if not store.available:
        raise UsageError(f"history is not available: {store.problem or 'the store is closed'}")
    try:
        return store.history()
    except SynapseError as exc:
        raise usage_error(exc) from None
