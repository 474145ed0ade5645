"""EventRouter: where the events of one kernel go (the history, open panels, tracing) and which tool call runs where."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...events import (
    Event,
    ServerEvent,
    SessionStarted,
    ToolCallFinished,
    ToolCallStarted,
    TurnCancelled,
    TurnFailed,
    TurnFinished,
)

if TYPE_CHECKING:
    from ...history.lake_background import LakePublisher
    from ...history.store import HistoryStore
    from ...protocols import EventSink
    from ...telemetry.spans import SpanSink

__all__ = ["EventRouter"]

logger = logging.getLogger("synapse_nb.notebook")


class EventRouter:
    """Routes events: every recorded one to the history store (`store`, opened on first use), server events
    to the open panels' listeners, the hub's other events to tracing (`tracing`: the span sink while tracing
    is on); a finished turn asks the lake publisher to publish. It also knows the tool call running on each
    server, so a request the server sends meanwhile (sampling) is recorded as caused by that call."""

    def __init__(self, store: Callable[[], HistoryStore], tracing: Callable[[], SpanSink | None]) -> None:
        self._store = store
        self._tracing = tracing
        self.lake_publisher: LakePublisher | None = None  # `publish_to`: publishes after each turn
        self._listeners: list[EventSink] = []
        self._session_events: dict[str, SessionStarted] = {}
        self._recorded_sessions: set[str] = set()
        # server -> the tool call running on it (session id, call id, recorded?)
        self._running_calls: dict[str, tuple[str, str, bool]] = {}

    def record(self, event: Event) -> None:
        """The history sink (used by the hub): records everything; server events also go to open panels, the
        rest (a server's sampling request, a call made by hand) to tracing when it is on."""
        self._sink(event, enabled=True)
        if isinstance(event, ServerEvent):
            self.tell_panels(event)
        elif (sink := self._tracing()) is not None:  # a server's sampling request, a call made by hand
            try:
                sink(event)
            except Exception:  # tracing must never break recording
                logger.exception("tracing a %s event failed", type(event).__name__)

    def tell_panels(self, event: ServerEvent) -> None:
        """Give open panels a ServerEvent without recording it (e.g. a question waiting for an answer)."""
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a widget's listener must not break the hub
                logger.exception("a server event listener failed")

    def on_server_event(self, listener: EventSink) -> Callable[[], None]:
        """Call `listener` with every ServerEvent (the inspector's panels); returns the unsubscribe function."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def history_sink(self, enabled: bool) -> EventSink:
        """A sink for one turn; `enabled=False` (--no-history) records nothing of it.

        A session whose first turn was not recorded gets its session row with its first recorded turn.
        """
        return lambda event: self._sink(event, enabled=enabled)

    def running_call(self, server: str) -> tuple[str, str, bool] | None:
        """The tool call running on `server` now: (session id, tool call id, recorded?), or None."""
        return self._running_calls.get(server)

    def call_started(self, server: str, session_id: str, call_id: str) -> None:
        """A tool call made by hand (`%mcp call`, the inspector) runs on `server` now; it is recorded."""
        self._running_calls[server] = (session_id, call_id, True)

    def _sink(self, event: Event, *, enabled: bool) -> None:
        if isinstance(event, SessionStarted):
            self._session_events[event.session_id] = event
        elif isinstance(event, ToolCallStarted) and event.server is not None:
            self._running_calls[event.server] = (event.session_id, event.call.id, enabled)
        elif (isinstance(event, ToolCallFinished) and event.server is not None
              and self._running_calls.get(event.server, ("", "", True))[1] == event.call.id):
            del self._running_calls[event.server]
        if not enabled:
            return
        store = self._store()
        session_id = getattr(event, "session_id", None)
        if session_id is not None and session_id not in self._recorded_sessions:
            started = self._session_events.get(session_id)
            if started is not None:
                self._recorded_sessions.add(session_id)
                if started is not event:
                    store.record(started)
        store.record(event)
        if self.lake_publisher is not None and isinstance(event, TurnFinished | TurnFailed | TurnCancelled):
            self.lake_publisher.request()  # sets an event: the publish runs on the publisher's thread
