"""EventRouter: where the events of one kernel go (the history, open panels, tracing) and which tool call runs where."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
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
    from ...protocols import EventSink, ToolScope
    from ...telemetry.spans import SpanSink

__all__ = ["EventRouter", "RunningCall"]

logger = logging.getLogger("synapse_nb.notebook")

_CALLING: ContextVar[str | None] = ContextVar("synapse_nb_tool_call", default=None)
"""The id of the tool call the current task runs (set around the call: `EventRouter.calling`)."""


@dataclass(frozen=True, slots=True)
class RunningCall:
    """A tool call running now: on which server, in which session, and whether its turn is recorded."""

    call_id: str
    server: str
    session_id: str
    recorded: bool


class EventRouter:
    """Routes events: every recorded one to the history store (`store`, opened on first use), server events
    to the open panels' listeners, the hub's other events to tracing (`tracing`: the span sink while tracing
    is on); a finished turn asks the lake publisher to publish. It also knows the tool calls running now, by call
    id, so a request a server sends meanwhile (elicitation, sampling) is shown under, and recorded against, the
    call that caused it (`asking_call`)."""

    def __init__(self, store: Callable[[], HistoryStore], tracing: Callable[[], SpanSink | None]) -> None:
        self._store = store
        self._tracing = tracing
        self.lake_publisher: LakePublisher | None = None  # `publish_to`: publishes after each turn
        self._listeners: list[EventSink] = []
        self._session_events: dict[str, SessionStarted] = {}
        self._recorded_sessions: set[str] = set()
        self._running: dict[str, RunningCall] = {}  # call id -> the tool call running now

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

    def asking_call(self, server: str) -> RunningCall | None:
        """The tool call a request `server` sends now (elicitation, sampling) belongs to, or None.

        The call whose task the request arrives in, when it runs on `server`: on a 2026-07-28 connection a
        question rides the call's own result (`InputRequiredResult`), so its handler runs in the caller's
        context. Else the only call running on `server`: a 2025-era server sends its request on its own, and
        over stdio nothing on the wire names the call; with several calls running there, None (no call is
        named rather than the wrong one).
        """
        running = self._running.get(_CALLING.get() or "")
        if running is not None and running.server == server:
            return running
        on_server = [r for r in self._running.values() if r.server == server]
        return on_server[0] if len(on_server) == 1 else None

    @contextlib.contextmanager
    def calling(self, call_id: str) -> Iterator[None]:
        """Around one tool call, in the task that runs it: what its server asks meanwhile is tied to it."""
        token = _CALLING.set(call_id)
        try:
            yield
        finally:
            _CALLING.reset(token)

    def tool_scope(self, inner: ToolScope | None = None) -> ToolScope:
        """The agent's `TurnOptions.tool_scope`: `calling(call_id)` around each tool call, and `inner`'s scope
        (tracing's) inside it."""

        @contextlib.contextmanager
        def scope(call_id: str) -> Iterator[None]:
            with self.calling(call_id), (inner(call_id) if inner is not None else contextlib.nullcontext()):
                yield

        return scope

    def call_started(self, server: str, session_id: str, call_id: str) -> None:
        """A tool call made by hand (`%mcp call`, the inspector) runs on `server` now; it is recorded."""
        self._running[call_id] = RunningCall(call_id, server, session_id, True)

    def call_ended(self, call_id: str) -> None:
        """A call of `call_started` ended without a ToolCallFinished of its own (its row exists already)."""
        self._running.pop(call_id, None)

    def _sink(self, event: Event, *, enabled: bool) -> None:
        if isinstance(event, SessionStarted):
            self._session_events[event.session_id] = event
        elif isinstance(event, ToolCallStarted) and event.server is not None:
            self._running[event.call.id] = RunningCall(event.call.id, event.server, event.session_id, enabled)
        elif isinstance(event, ToolCallFinished):
            self._running.pop(event.call.id, None)
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
