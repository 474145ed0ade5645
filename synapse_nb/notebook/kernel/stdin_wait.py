"""Stoppable line readers: a blocking read of the user's line run in a worker thread that gives up when told.

ipykernel's `input()` blocks the thread that runs the event loop until the user answers, so nothing else
can happen meanwhile (a browser's redirect to a loopback listener, a server's notification). The readers
here run in a worker thread (`in_worker`) and poll, every `POLL` seconds, whether they should stop, so the
loop keeps running and the asker races the answer against whatever else may end the wait. Which line
source is read (the kernel's stdin socket, the terminal, a test's function) is kernel_port.py's business;
this module knows no kernel.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["POLL", "LineReader", "Stopped", "in_worker", "stoppable"]

T = TypeVar("T")
Stopped = Callable[[], bool]
"""Asked every `POLL` seconds by a reader: True once it should give up."""
LineReader = Callable[[str, Stopped], str | None]
"""`read(prompt, stopped)`: one line typed by the user, or None once `stopped()` (or input ended, \\x04).
May raise EOFError / StdinNotImplementedError as `input()` does. Runs in a worker thread."""
POLL = 0.05  # seconds between checks of the stdin socket (how soon a reader notices it should stop)


def stoppable(read: Callable[[str], str]) -> LineReader:
    """A blocking `input()`-like function made stoppable: it runs in a daemon thread of its own, which is
    left behind (to end whenever `read` returns) once the reader stops."""

    def reader(prompt: str, stopped: Stopped) -> str | None:
        answers: queue.Queue[tuple[bool, Any]] = queue.Queue(1)

        def run() -> None:
            try:
                answers.put((True, read(prompt)))
            except BaseException as exc:  # handed to the reader's thread, which raises it
                answers.put((False, exc))

        threading.Thread(target=run, name="synapse-input", daemon=True).start()
        while not stopped():
            try:
                ok, value = answers.get(timeout=POLL)
            except queue.Empty:
                continue
            if not ok:
                raise value
            return str(value)
        return None

    return reader


async def in_worker(work: Callable[[Stopped], T], *, until: Stopped | None = None) -> T:
    """`work(stopped)` in a worker thread, awaited without holding the loop.

    `stopped()` turns True when the awaiting task is cancelled (or `until()` holds). On cancellation this
    waits for the worker to return (a reader notices within `POLL`), so the stdin socket is free for the
    next question, then re-raises.
    """
    stop = threading.Event()

    def stopped() -> bool:
        return stop.is_set() or (until is not None and until())

    worker = asyncio.ensure_future(asyncio.to_thread(work, stopped))
    try:
        return await asyncio.shield(worker)
    finally:
        stop.set()
        if not worker.done():
            with contextlib.suppress(BaseException):
                await asyncio.wait({worker})
