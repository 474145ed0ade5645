"""Reading the frontend's input box without holding the kernel's loop: stoppable line readers run in a worker thread.

ipykernel's `input()` blocks the thread that runs the event loop until the user answers, so nothing else
can happen meanwhile (a browser's redirect to a loopback listener, a server's notification). Here the box
is read in a worker thread that polls the kernel's stdin socket and gives up once told to stop, so the
loop keeps running and the caller races the answer against whatever else may end the wait (sign_in.py:
the browser; elicit.py: the server completing a URL flow). Jupyter has no message that withdraws an
open input box: once the other side wins, the caller's card asks the user to press Enter in it; the
late reply is purged by the next input request, as ipykernel does.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .state import SynapseState

__all__ = ["LineReader", "Stopped", "in_worker", "line_reader", "stoppable"]

T = TypeVar("T")
Stopped = Callable[[], bool]
"""Asked every `_POLL` seconds by a reader: True once it should give up."""
LineReader = Callable[[str, Stopped], str | None]
"""`read(prompt, stopped)`: one line typed by the user, or None once `stopped()` (or input ended, \\x04).
May raise EOFError / StdinNotImplementedError as `input()` does. Runs in a worker thread."""
_POLL = 0.05  # seconds between checks of the stdin socket (how soon a reader notices it should stop)


def line_reader(state: SynapseState) -> LineReader | None:
    """How to read a line of the cell the kernel runs now, stoppably; None where no cell waits on stdin
    (a background run, an inspector action), in terminal IPython (no kernel: its `input()` cannot be
    stopped) or where the frontend takes no input."""
    if state.input is not None:  # tests and embedding code: their own input function
        return stoppable(state.input)
    if state.live and not state.runner.foreground:
        return None
    kernel = getattr(state.shell, "kernel", None)
    if kernel is None or not getattr(kernel, "_allow_stdin", False):
        return None
    target = _stdin_target(kernel)
    if target is None:
        return None
    return lambda prompt, stopped: _kernel_line(kernel, *target, prompt, stopped)


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
                ok, value = answers.get(timeout=_POLL)
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
    waits for the worker to return (a reader notices within `_POLL`), so the stdin socket is free for the
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


def _stdin_target(kernel: Any) -> tuple[Any, Any] | None:
    """The (ident, parent) of the cell the kernel runs now, which an input request must name."""
    context = getattr(kernel, "_shell_context", None)
    parent_var = getattr(kernel, "_shell_parent", None)
    ident_var = getattr(kernel, "_shell_parent_ident", None)
    if context is None or parent_var is None or ident_var is None:
        return None
    try:
        return context[ident_var], context[parent_var]
    except KeyError:
        return None


def _kernel_line(kernel: Any, ident: Any, parent: Any, prompt: str, stopped: Stopped) -> str | None:
    """One line from the frontend's input box, read as ipykernel's `raw_input` does, but stoppable.

    ipykernel's own reader waits for the reply for good; this one polls and gives up once `stopped()`,
    leaving the socket free for the next question. A reply that comes later is purged by the next input
    request, as ipykernel does.
    """
    import zmq

    socket, session = kernel.stdin_socket, kernel.session
    while True:  # purge stale replies
        try:
            socket.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            break
    session.send(socket, "input_request", {"prompt": prompt, "password": False}, parent, ident=ident)
    while not stopped():
        ready, _, _ = zmq.select([socket], [], [], _POLL)
        if not ready:
            continue
        _, reply = session.recv(socket)
        if reply is None:
            continue
        value = str(reply.get("content", {}).get("value", ""))
        return None if value == "\x04" else value  # \x04: end of input
    return None
