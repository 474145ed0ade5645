"""The one bridge from synchronous code (magics, widget callbacks) to the async core, on the kernel's loop.

In a Jupyter kernel the kernel's asyncio loop is already running while a cell executes, so `run` makes
it re-entrant with nest_asyncio (applied here only, and only the first time that is needed) and drives
the coroutine to completion. Where no loop runs (plain Python, terminal IPython, tests) a private loop
is used: IPython's own loop when IPython is there, so top-level `await` in a cell shares it.

Nested runs and ipykernel: ipykernel (7.x) runs each shell message in a task created in one shared
contextvars Context. A message that arrives while a cell blocks in a nested run (JupyterLab's "Run
All" queues every cell at once) would have its task stepped inside the nested run, while that Context
is still entered by the running cell: "cannot enter context ... already entered", and the message is
lost. So a nested run holds back every ready callback whose Context is entered, and puts them back
when it ends: they run after the cell, exactly as they would have without nesting.

Interrupts: while `run` drives a coroutine in the main thread, SIGINT (the kernel's interrupt) cancels
the task instead of raising KeyboardInterrupt somewhere inside it, waits for the cancellation to finish
(so MCP cancellations are sent and the agent records the turn as cancelled), then raises
KeyboardInterrupt to the caller. A second SIGINT while that cancellation runs raises at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import signal
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any, TypeVar

__all__ = ["CANCEL_GRACE", "Runner"]

logger = logging.getLogger("synapse_nb.notebook")

T = TypeVar("T")

CANCEL_GRACE = 10.0
"""Seconds an interrupted task may take to finish cancelling (closing tool calls, recording) before we give up."""


class Runner:
    """Runs coroutines from synchronous code, and background tasks, on one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop
        self._tasks: set[asyncio.Task[Any]] = set()
        self._interrupted = False
        self._prompting = False

    # -- the loop

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop everything runs on: the running (kernel) loop if there is one, else a private loop.

        Chosen on first use and kept: MCP connections and background runs live on it across cells.
        """
        if self._loop is None or self._loop.is_closed():
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                self._loop = _private_loop()
        return self._loop

    @property
    def tasks(self) -> frozenset[asyncio.Task[Any]]:
        """Background tasks started with `spawn` that have not finished."""
        return frozenset(self._tasks)

    # -- running

    def run(self, coro: Coroutine[Any, Any, T], *, timeout: float | None = None) -> T:
        """Run a coroutine to completion and return its result (sync; blocks the cell).

        Raises what the coroutine raises, TimeoutError after `timeout` seconds (the coroutine is then
        cancelled), and KeyboardInterrupt when the user interrupted (after the cancellation finished).
        """
        loop = self.loop
        if loop.is_running() and not _in_loop_thread(loop):
            # Called from another thread while the loop runs elsewhere: hand the coroutine over.
            return asyncio.run_coroutine_threadsafe(_bounded(coro, timeout), loop).result()
        task = loop.create_task(_bounded(coro, timeout))
        self._interrupted = False
        with self._sigint_cancels(loop, task):
            try:
                return _drive(loop, task)
            except KeyboardInterrupt:
                # The interrupt landed outside our handler (another thread's handler, or a second
                # Ctrl-C): still cancel the task and let it clean up, within bounds.
                self._interrupted = True
                self._drain(loop, task)
                raise
            except asyncio.CancelledError:
                if self._interrupted:
                    raise KeyboardInterrupt("interrupted") from None
                raise

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]:
        """Start a coroutine as a background task on the loop; returns at once.

        The task is tracked until it finishes (`tasks`, `cancel_all`); an exception it ends with is
        logged, as nobody may ever await it.
        """
        task = self.loop.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            logger.error("background task %s failed", task.get_name(), exc_info=exc)

    def cancel_all(self, *, grace: float = CANCEL_GRACE) -> None:
        """Cancel every background task and wait (bounded) for them to finish cancelling."""
        pending = [t for t in self._tasks if not t.done()]
        for task in pending:
            task.cancel()
        if not pending:
            return
        loop = self.loop
        if loop.is_running() and not _in_loop_thread(loop):
            return  # they finish on their own loop
        with contextlib.suppress(Exception):
            _drive(loop, asyncio.wait(pending, timeout=grace))

    def prompt(self, text: str, ask: Callable[[str], str]) -> str:
        """Ask the user a question with a blocking `input()`-style function while a turn runs.

        A SIGINT during the prompt interrupts at once (the prompt would not notice a cancellation):
        it is turned into a cancellation of the running task, as an interrupt elsewhere would be.
        """
        self._prompting = True
        try:
            return ask(text)
        except KeyboardInterrupt:
            self._interrupted = True
            raise asyncio.CancelledError from None
        finally:
            self._prompting = False

    # -- interrupts

    @contextlib.contextmanager
    def _sigint_cancels(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> Iterator[None]:
        """While the task runs, SIGINT cancels it (only where we may and should take over SIGINT)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.getsignal(signal.SIGINT)
        if previous is not signal.default_int_handler:
            # Someone chose another behaviour (ignored, or their own handler): leave it alone.
            yield
            return

        def on_sigint(signum: int, frame: object) -> None:
            if self._prompting or self._interrupted or task.done():
                raise KeyboardInterrupt
            self._interrupted = True
            loop.call_soon_threadsafe(task.cancel)

        signal.signal(signal.SIGINT, on_sigint)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def _drain(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        task.cancel()
        try:
            _drive(loop, asyncio.wait({task}, timeout=CANCEL_GRACE))
        except KeyboardInterrupt:
            logger.warning("interrupted again while cancelling; the task may still be finishing")
        if task.done() and not task.cancelled():
            task.exception()  # retrieved, so asyncio does not log it as never retrieved

    @property
    def interrupted(self) -> bool:
        """Whether the last `run` ended because the user interrupted it."""
        return self._interrupted


async def _bounded(coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
    if timeout is None:
        return await coro
    async with asyncio.timeout(timeout):
        return await coro


def _drive(loop: asyncio.AbstractEventLoop, awaitable: Awaitable[T]) -> T:
    """`loop.run_until_complete`, re-entrant (nest_asyncio) when the loop already runs, with the
    Context guard of the module docstring."""
    if not loop.is_running():
        return loop.run_until_complete(awaitable)
    _make_reentrant(loop)
    held: list[asyncio.Handle] = []
    outer = loop.__dict__.get("_run_once")  # set when this run is nested in another nested run
    patched = loop._run_once  # type: ignore[attr-defined]
    ready: deque[asyncio.Handle] = loop._ready  # type: ignore[attr-defined]

    def run_once() -> None:
        if ready:
            blocked = [_context_entered(h) for h in ready]
            if any(blocked):
                runnable = [h for h, b in zip(ready, blocked, strict=True) if not b]
                held.extend(h for h, b in zip(ready, blocked, strict=True) if b)
                ready.clear()
                ready.extend(runnable)
        patched()

    loop._run_once = run_once  # type: ignore[attr-defined]
    try:
        return loop.run_until_complete(awaitable)
    finally:
        if outer is None:
            del loop._run_once  # type: ignore[attr-defined]
        else:
            loop._run_once = outer  # type: ignore[attr-defined]
        ready.extendleft(reversed(held))


def _context_entered(handle: asyncio.Handle) -> bool:
    context: contextvars.Context | None = getattr(handle, "_context", None)
    if context is None or handle.cancelled():
        return False
    try:
        context.run(_nothing)
    except RuntimeError:
        return True
    return False


def _nothing() -> None:
    return None


def _in_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    return getattr(loop, "_thread_id", None) in (None, threading.get_ident())


def _make_reentrant(loop: asyncio.AbstractEventLoop) -> None:
    if getattr(loop, "_nest_patched", False):
        return
    import nest_asyncio

    nest_asyncio.apply(loop)


def _private_loop() -> asyncio.AbstractEventLoop:
    try:
        from IPython.core.async_helpers import get_asyncio_loop
    except ImportError:
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = get_asyncio_loop()  # type: ignore[no-untyped-call]
    return loop
