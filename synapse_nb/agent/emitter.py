"""Emitter: where one turn's events go: through the session's stages (pricing), then to every sink."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from ..events import Event
from ..protocols import EventSink

__all__ = ["Emitter", "Stage"]

logger = logging.getLogger("synapse_nb.agent")

Stage = Callable[[Event], Event]
"""Completes an event before any sink sees it (agent/spend.py's SessionSpend prices model calls), and follows
the session's events to do so; returns the event the sinks get."""


class Emitter:
    """Sends each event of a turn through `stages`, in order, then to each of `sinks`, and returns it as the
    sinks got it. A sink that raises never breaks the loop: its first failure is logged with the traceback,
    the later ones at debug level (`broken` remembers which sinks failed, across the turns of a session)."""

    __slots__ = ("broken", "sinks", "stages")

    def __init__(self, stages: Sequence[Stage], sinks: Sequence[EventSink], broken: set[int]) -> None:
        self.stages = tuple(stages)
        self.sinks = tuple(sinks)
        self.broken = broken

    def __call__(self, event: Event) -> Event:
        for stage in self.stages:
            event = stage(event)
        for sink in self.sinks:
            try:
                sink(event)
            except Exception:  # a sink must never break the loop
                if id(sink) not in self.broken:
                    self.broken.add(id(sink))
                    logger.exception("event sink %r failed (further failures of it are logged at debug)", sink)
                else:
                    logger.debug("event sink %r failed", sink, exc_info=True)
        return event
