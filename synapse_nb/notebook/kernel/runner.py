"""Runs the magics' coroutines on the kernel's loop: awaited (`run_awaited`) or from synchronous code (`run`).

Awaited: a whole-cell `%%synapse`, `%mcp ...` or `%synapse ...` is rewritten by notebook/kernel/awaited.py into a
top-level `await`, which ipykernel (and terminal IPython's autoawait) runs natively on its loop: the
command is one task there, nothing nests and nothing patches asyncio.

From synchronous code (a magic called inside other code, `get_ipython().run_line_magic('mcp', ...)` in a
loop, `BackgroundRun.result()`, `%unload_ext`): where no loop runs (plain Python, terminal IPython between
cells, tests) the coroutine runs on a private loop (IPython's own loop when IPython is there, so
top-level `await` in a cell shares it). Where the loop already runs (a kernel, during a cell) there is
no other way than re-entering it: `run` then applies `nest_asyncio2` (the maintained fork that ipykernel
itself depends on), the first time a nested run is actually needed and never before. Its effect is
process-wide and lasts until the kernel restarts (`%unload_ext` cannot undo it): on Python < 3.14,
`asyncio.Task` and `asyncio.Future` become the pure-Python classes for every task created afterwards,
`asyncio.run()` stops refusing to run inside a running loop, `asyncio.get_event_loop` and the loop
policy are replaced, and the loop's class gets a re-entrant `run_until_complete`/`_run_once`.
nest_asyncio2 also defers any ready callback whose contextvars Context is already entered further up
the stack (ipykernel 7 runs every shell message in one shared Context, and JupyterLab's "Run All" queues
messages while a cell blocks in a nested run): those run after the nested run, as they would have.

Interrupts: while a command runs in the main thread, SIGINT cancels its task with
`loop.call_soon_threadsafe` (which wakes the loop at once; ipykernel 7.4's own handler for awaited
cells does not: notes/mcp-client-facts.md), waits for the cancellation to finish (so MCP cancellations
are sent and the agent records the turn as cancelled), then raises KeyboardInterrupt to the caller.
A second SIGINT while that cancellation runs cuts it short. A question to the user never blocks the
loop (notebook/kernel/port.py reads the answer in a worker thread), so SIGINT during one cancels the
command as anywhere else. Commands must end cancelled, never with KeyboardInterrupt: one raised out of a
task stops the event loop itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any, TypeVar

__all__ = ["CANCEL_GRACE", "Runner"]

logger = logging.getLogger("synapse_nb.notebook")

T = TypeVar("T")

CANCEL_GRACE = 10.0
"""Seconds an interrupted task may take to finish cancelling (closing tool calls, recording) before we give up."""


class Runner:
    """Runs the magics' coroutines (awaited or from sync code) and background tasks, on one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop
        self._tasks: set[asyncio.Task[Any]] = set()
        self._interrupted = False
        self._interrupt: Callable[[], None] | None = None  # what a SIGINT does to the command running now
        self._foreground = 0  # commands a cell is blocked on now (run / run_awaited under way)

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

    @property
    def can_block(self) -> bool:
        """Whether `run` can wait here without nesting: no loop is running in this thread."""
        loop = self.loop
        return not (loop.is_running() and _in_loop_thread(loop))

    @property
    def interrupted(self) -> bool:
        """Whether the last `run` / `run_awaited` ended because the user interrupted it."""
        return self._interrupted

    # -- running

    @property
    def foreground(self) -> bool:
        """Whether a cell is blocked on a command now (so the user can be asked through stdin)."""
        return self._foreground > 0

    async def run_awaited(self, coro: Coroutine[Any, Any, T]) -> T:
        """`_run_awaited`, counted as a foreground command."""
        self._foreground += 1
        try:
            return await self._run_awaited(coro)
        finally:
            self._foreground -= 1

    def run(self, coro: Coroutine[Any, Any, T], *, timeout: float | None = None) -> T:
        """`_run`, counted as a foreground command."""
        self._foreground += 1
        try:
            return self._run(coro, timeout=timeout)
        finally:
            self._foreground -= 1

    async def _run_awaited(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await a command's coroutine in an awaited cell, with SIGINT cancelling it at once.

        The command runs in the cell's own task (no extra task, no extra loop iterations): SIGINT
        cancels that task thread-safely, the command's cleanup runs, and the cancellation is caught
        here and turned into KeyboardInterrupt. A second SIGINT cancels again, cutting the cleanup short.
        Raises what the coroutine raises.
        """
        loop = asyncio.get_running_loop()
        if self._loop is None or self._loop.is_closed():
            self._loop = loop
        elif self._loop is not loop and self._loop.is_running():
            # Awaited on another thread's loop (a kernel subshell): the work belongs on ours.
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))
        task = asyncio.current_task()
        if task is None:  # not in a task (cannot happen for an awaited cell): nothing to cancel
            return await coro
        self._interrupted = False
        with self._sigint_cancels(loop, task, awaited=True) as guard:
            try:
                return await coro
            except asyncio.CancelledError:
                if not guard.sent:
                    raise  # cancelled by someone else (the kernel shutting down): not ours to report
            finally:
                guard.finished = True
                for _ in range(guard.sent):
                    task.uncancel()
        raise KeyboardInterrupt("interrupted")

    def _run(self, coro: Coroutine[Any, Any, T], *, timeout: float | None = None) -> T:
        """Run a coroutine to completion from synchronous code and return its result (blocks the cell).

        Raises what the coroutine raises, TimeoutError after `timeout` seconds (the coroutine is then
        cancelled), and KeyboardInterrupt when the user interrupted (after the cancellation finished).
        """
        loop = self.loop
        if loop.is_running() and not _in_loop_thread(loop):
            # Called from another thread while the loop runs elsewhere: hand the coroutine over.
            return asyncio.run_coroutine_threadsafe(_bounded(coro, timeout), loop).result()
        task = loop.create_task(_bounded(coro, timeout))
        self._interrupted = False
        with self._sigint_cancels(loop, task, awaited=False):
            try:
                return _drive(loop, task)
            except KeyboardInterrupt:
                # The interrupt landed outside our handler (another thread's handler, or a second
                # Ctrl-C), or the coroutine ended with one: cancel what still runs, within bounds.
                self._interrupted = True
                if not task.done():
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
        self._track(task)
        return task

    def _track(self, task: asyncio.Task[Any]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._finished)

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

    # -- interrupts

    def interrupt(self) -> None:
        """Interrupt the command a cell waits on now, as a SIGINT would (it is cancelled, and `run` /
        `run_awaited` end with KeyboardInterrupt); nothing when none runs. Called on the loop's thread, e.g.
        when a question's line source was interrupted (notebook/kernel/port.py)."""
        if self._interrupt is not None:
            self._interrupt()

    @contextlib.contextmanager
    def _sigint_cancels(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any], *, awaited: bool
                        ) -> Iterator[_Guard]:
        """While the task runs, SIGINT cancels it (thread-safely: that wakes the loop at once).

        Taken over from any Python-level handler (Python's default one, or the kernel's handler for
        awaited cells, which would cancel only when the loop next wakes up); a handler set to ignore or
        to the OS default is someone's choice and left alone, as are threads other than the main one.
        On the awaited path the handler never raises (its frame may be the kernel loop's select()).
        """
        guard = _Guard()
        if threading.current_thread() is not threading.main_thread():
            yield guard
            return

        def on_sigint(signum: int, frame: object) -> None:
            if guard.finished or task.done():
                if not awaited:
                    raise KeyboardInterrupt
                return
            if self._interrupted and not awaited:
                raise KeyboardInterrupt  # a second Ctrl-C: stop waiting for the cancellation
            self._interrupted = True
            loop.call_soon_threadsafe(cancel)

        def cancel() -> None:  # on the loop; the run may have finished since the signal came
            if not guard.finished and not task.done():
                guard.sent += 1
                task.cancel()

        def interrupt() -> None:  # a question's line source was interrupted (on the loop's thread)
            if not guard.finished and not task.done():
                self._interrupted = True
                cancel()

        # Swapped in first and looked at after (put back at once when it was SIG_IGN or SIG_DFL): each call of
        # the `signal` module tries the handler as an enum value and formats its repr when it is not one, and
        # asyncio.run's handler holds a Task, whose repr costs ~25 µs; a getsignal() first would pay that twice.
        previous = signal.signal(signal.SIGINT, on_sigint)
        if not callable(previous):
            signal.signal(signal.SIGINT, previous)
            yield guard
            return
        outer, self._interrupt = self._interrupt, interrupt
        try:
            yield guard
        finally:
            signal.signal(signal.SIGINT, previous)
            self._interrupt = outer

    def _drain(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        task.cancel()
        try:
            _drive(loop, asyncio.wait({task}, timeout=CANCEL_GRACE))
        except KeyboardInterrupt:
            logger.warning("interrupted again while cancelling; the task may still be finishing")
        if task.done() and not task.cancelled():
            task.exception()  # retrieved, so asyncio does not log it as never retrieved


class _Guard:
    """What the SIGINT handler of one run did: how many cancellations it sent; whether the run finished."""

    def __init__(self) -> None:
        self.sent = 0
        self.finished = False


async def _bounded(coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
    if timeout is None:
        return await coro
    async with asyncio.timeout(timeout):
        return await coro


def _drive(loop: asyncio.AbstractEventLoop, awaitable: Awaitable[T]) -> T:
    """`loop.run_until_complete`, made re-entrant with nest_asyncio2 when the loop already runs."""
    if loop.is_running():
        _make_reentrant(loop)
    return loop.run_until_complete(awaitable)


def _in_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    return getattr(loop, "_thread_id", None) in (None, threading.get_ident())


def _make_reentrant(loop: asyncio.AbstractEventLoop) -> None:
    """Apply nest_asyncio2 (process-wide; see the module docstring), once, when a nested run needs it."""
    if getattr(loop, "_nest_patched", False):
        return
    import nest_asyncio2  # type: ignore[import-untyped]

    logger.info("nesting a run in the running loop: applying nest_asyncio2 (process-wide, until restart)")
    nest_asyncio2.apply(loop)


def _private_loop() -> asyncio.AbstractEventLoop:
    try:
        from IPython.core.async_helpers import get_asyncio_loop
    except ImportError:
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = get_asyncio_loop()  # type: ignore[no-untyped-call]
    return loop
