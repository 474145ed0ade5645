"""Publishing a store's history to the lake from a daemon thread after each turn: `LakePublisher` (`publish_to`).

`request()` only sets an event (safe on the kernel's loop); the thread then ingests the store's spool
and publishes (lake.py) with no part of it on the caller's thread. Requests made while a publish runs
are coalesced into one more publish, so a burst of turns costs at most two. A failure is said once, as
one WARNING line on the `synapse_nb.history` logger, until a publish succeeds again; nothing is lost
meanwhile (the lake's marks stay where they were, and the next publish takes everything since).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .lake_spec import LakeSpec, lake_spec

if TYPE_CHECKING:
    from .lake import Published
    from .store import HistoryStore

__all__ = ["LakePublisher"]

logger = logging.getLogger("synapse_nb.history")

FLUSH_TIMEOUT = 10.0  # seconds the thread waits for the store's own ingest before publishing what is in


class LakePublisher:
    """Publishes `store`'s file into lake `dest` in the background whenever asked; see the module docstring.

    A `dest` that names no lake (lake_spec.py) raises LakeError here, at once, not on the thread."""

    def __init__(self, store: HistoryStore, dest: str | Path | LakeSpec) -> None:
        self.store = store
        self.dest = lake_spec(dest)
        self.last: Published | None = None  # what the latest successful publish added
        self.problem: str | None = None  # why the latest publish failed (None after a success)
        self._requested = 0  # requests so far
        self._done = 0  # requests answered by a finished publish (successful or not)
        self._cond = threading.Condition()
        self._stop = False
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"<LakePublisher {self.store.path} -> {self.dest.name}>"

    def request(self) -> None:
        """Ask for a publish soon (returns at once; starts the thread on first use)."""
        with self._cond:
            if self._stop:
                return
            self._requested += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="synapse-lake-publisher", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every request made so far has been answered; False if still busy at `timeout`."""
        with self._cond:
            target = self._requested
            return self._cond.wait_for(lambda: self._done >= target or self._stop, timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread (a publish under way finishes, up to `timeout`); later requests are ignored."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stop or self._requested > self._done)
                if self._stop:
                    return
                target = self._requested
            self._publish_once()
            with self._cond:
                self._done = target
                self._cond.notify_all()

    def _publish_once(self) -> None:
        try:
            if not self.store.available:
                raise RuntimeError(self.store.problem or "the history store is closed")
            self.store.flush(FLUSH_TIMEOUT)
            self.last = self.store.history().publish(self.dest)
        except Exception as exc:  # the thread's wrapper: a publish must never break a cell; say it once
            text = " ".join(str(exc).split()) or type(exc).__name__
            if self.problem is None:
                logger.warning("history was not published to %s: %s", self.dest.name, text)
            self.problem = text
            return
        self.problem = None
