"""The kernel I/O port: the one module that touches ipykernel's internals (the cell's parent, stdin, the kernel id).

Everything the extension does with the frontend goes through `KernelPort`: publish a display bundle, run
something as part of the cell the kernel runs now (so outputs and input requests land in that cell and
not in the one that connected a server), tell whether that cell's frontend takes input, name the kernel
and the notebook, and ask the user one line.

`ask` is the one way to ask the user anything (tool approval, a form's fields, a link, sampling approval,
an OAuth paste-back). It never holds the event loop: the line is read in a worker thread that polls the
kernel's stdin socket and gives up once told to stop (stdin_wait.py), so servers' notifications, a
browser's redirect and other tasks go on while the box is open. A question ends when the user answers,
input ends (None), the awaiting task is cancelled (an interrupt of the cell it runs in), the cell that
was waiting when it was asked stops waiting (an interrupt of that cell while a server's request asked),
or the caller's `until()` holds. Where no one can answer (a frontend without stdin, such as nbclient and
papermill; a background run, whose cell is long done) it raises `NobodyCanAnswer` at once.

ipykernel 7 keeps the parent message of the cell in context variables of its last shell context
(`_shell_context`, `_shell_parent`, `_shell_parent_ident`); the MCP SDK's tasks carry the ones of the
cell that started them, so `in_cell` sets the current parent again in a copy of the context. Jupyter has
no message that withdraws an open input box: a reply that comes after the question ended is purged by
the next input request, as ipykernel does.

Terminal IPython and plain Python get the same interface: the line is read from the process's stdin
(polled, so it can stop too, where stdin is a real file on POSIX; elsewhere `input()` in a thread that is
left behind once the question ends). Tests and embedding code set `input` to their own line source.
"""

from __future__ import annotations

import asyncio
import builtins
import contextvars
import inspect
import logging
import os
import re
import select
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from IPython.core.error import StdinNotImplementedError

from ...departure import DEPARTURE
from ..output.live import Bundle, Publisher, ipython_publisher
from .cell_outputs import CellOutputs
from .runner import Runner
from .stdin_wait import POLL, LineReader, Stopped, in_worker, stoppable

__all__ = ["KernelPort", "NobodyCanAnswer", "announce_shutdowns", "kernel_id", "kernel_publisher", "notebook_path",
           "stop_announcing"]

logger = logging.getLogger("synapse_nb.notebook")

T = TypeVar("T")


class NobodyCanAnswer(Exception):
    """No one can answer a question here: no stdin (a frontend without input, nbclient, papermill), or no
    cell waits for the answer (a background run)."""


class KernelPort:
    """The extension's door to the kernel and its frontend (see the module docstring).

    `shell` is the IPython shell (None in plain Python); `live` whether a frontend shows display updates
    (a kernel); `publish` sends a display bundle; `tidy()` ends a command's cell without its emptied live
    lines (cell_outputs.py); `input`, when set, is the line source questions read
    (tests, embedding code) instead of the frontend's input box; `kernel_id` names the kernel.
    """

    def __init__(self, shell: Any | None, runner: Runner) -> None:
        self.shell = shell
        self.runner = runner
        self.live = self.kernel is not None
        self.publish: Publisher = ipython_publisher if self.kernel is None else kernel_publisher(shell)
        self._outputs = CellOutputs.of(shell, iopub_sender(shell)) if self.kernel is not None else None
        self.input: Callable[[str], str] | None = None
        self.kernel_id = kernel_id()
        self.asking_since: float | None = None  # time.monotonic() when the open question was asked, or None

    @property
    def kernel(self) -> Any | None:
        """The ipykernel kernel object, or None (terminal IPython, plain Python)."""
        return getattr(self.shell, "kernel", None)

    def tidy(self) -> None:
        """At the true end of a command: clear its cell's emptied live outputs away where that is safe
        (kernel/cell_outputs.py), so a saved notebook keeps only what the command showed. Never raises."""
        if self._outputs is None:
            return
        try:
            queue_printed()  # counted (and kept) by the tidy
            self._outputs.tidy()
        except Exception:  # tidying is cosmetic: the command's outcome stands
            logger.debug("tidying the cell's outputs failed", exc_info=True)

    # -- the notebook

    def notebook_path(self) -> str | None:
        """The notebook file, as JupyterLab or VS Code reports it (see `notebook_path`)."""
        return notebook_path(self.shell)

    def notebook_name(self) -> str | None:
        """The notebook file's name (no folder), or None when it is not known."""
        path = self.notebook_path()
        return Path(path).name if path else None

    def cell_label(self) -> str | None:
        """The cell running now, as `analysis.ipynb In[N]` (`In[N]` where the notebook's file is not known): what
        `%mcp tasks` shows as a task's cell, and how it tells this notebook's tasks."""
        count = getattr(self.shell, "execution_count", None)
        if count is None:
            return None
        notebook = self.notebook_name()
        return f"{notebook} In[{count}]" if notebook else f"In[{count}]"

    # -- output

    def show(self, bundle: Bundle, display_id: str | None = None, update: bool = False) -> None:
        """Publish `bundle` in the cell the kernel runs now (also from a task an earlier cell started)."""
        self.in_cell(lambda: self.publish(bundle, display_id, update))

    def in_cell(self, fn: Callable[[], T]) -> T:
        """Run `fn` as part of the cell the kernel runs now: its outputs and input requests go there.

        The SDK's tasks carry the parent of the cell that connected; the kernel's last shell context holds
        the current one, which is set again (in a copy of this context, so the task keeps its own) first.
        """
        kernel = self.kernel
        target = _cell_target(kernel)
        if kernel is None or target is None:
            return fn()
        ident, parent = target

        def run() -> T:
            kernel.set_parent(ident, parent, "shell")
            return fn()

        return contextvars.copy_context().run(run)

    def parent(self) -> dict[str, Any] | None:
        """The message the kernel handles now, or handled last, on its shell channel (None outside a kernel)."""
        target = _cell_target(self.kernel)
        if target is None:
            return None
        parent = target[1]
        return parent if isinstance(parent, dict) else None

    def takes_input(self) -> bool:
        """Whether a person may answer in the cell the kernel runs now (or ran last): False when it came from
        a frontend that takes no input, as nbclient and papermill run cells (`allow_stdin` false). An
        inspector click's message, or no kernel at all, counts as someone being there."""
        parent = self.parent()
        if parent is None or parent.get("header", {}).get("msg_type") != "execute_request":
            return True
        return bool(parent.get("content", {}).get("allow_stdin", True))

    # -- questions

    def can_ask(self) -> bool:
        """Whether `ask` would reach someone now (it may still meet a frontend that refuses input)."""
        try:
            self._reader()
        except NobodyCanAnswer:
            return False
        return True

    async def ask(self, prompt: str, *, until: Stopped | None = None) -> str | None:
        """One line typed by the user, read without holding the loop (see the module docstring).

        None when input ended (end of file, ^D) or the wait was stopped: the cell that waited when the
        question was asked stopped waiting (interrupted), or `until()` turned true. Raises
        `NobodyCanAnswer` where no one can answer and CancelledError when the awaiting task is cancelled.
        A line source that raises KeyboardInterrupt (a test's or a terminal's Ctrl-C) counts as the user
        interrupting the cell: its command is cancelled, as a SIGINT would cancel it.
        """
        read = self._reader()
        runner = self.runner
        waited = runner.foreground

        def stopped() -> bool:
            return (waited and not runner.foreground) or (until is not None and until())

        def work(stop: Stopped) -> tuple[str | None, bool]:
            try:
                return read(prompt, stop), False
            except KeyboardInterrupt:
                return None, True
            except EOFError:
                return None, False

        self.asking_since = time.monotonic()  # the cell's running line says it waits for the user meanwhile
        try:
            line, interrupted = await in_worker(work, until=stopped)
        except StdinNotImplementedError as exc:
            raise NobodyCanAnswer(str(exc) or "this frontend does not take input") from None
        finally:
            self.asking_since = None
        if interrupted:
            runner.interrupt()
            await asyncio.sleep(0)  # the cancellation lands here when this task is the interrupted command
        return line

    def _reader(self) -> LineReader:
        """How to read a line now, stoppably; raises NobodyCanAnswer where no one can answer."""
        if self.input is not None:  # tests and embedding code: their own line source
            return stoppable(self.input)
        if self.live and not self.runner.foreground:
            raise NobodyCanAnswer("no cell waits for the answer (a background run)")
        kernel = self.kernel
        if kernel is None:  # terminal IPython, plain Python: the process's stdin
            return _terminal_reader()
        if not getattr(kernel, "_allow_stdin", False):
            raise NobodyCanAnswer("this frontend does not take input (no stdin)")
        target = _cell_target(kernel)
        if target is None:
            raise NobodyCanAnswer("the kernel runs no cell to ask in")
        ident, parent = target
        return lambda prompt, stopped: _kernel_line(kernel, ident, parent, prompt, stopped)


def kernel_publisher(shell: Any) -> Publisher:
    """Publish a display bundle as IPython's `display` does in a kernel, without waiting on the IOPub thread.

    ipykernel's display publisher flushes stdout and stderr before each message and waits for each flush: two
    round trips to its IOPub thread, 0.2-1 ms of the cell's time per output (a turn's end sends two). Here the
    streams' pending text and then the message are queued on that thread, in that order, without waiting: what
    the cell printed before still comes first, what it prints after comes after. A display publisher that is
    not the kernel's own (IPython's `capture_output` swaps in its own), or one with transform hooks, goes
    through `display`.
    """
    from ipykernel.iostream import OutStream
    from ipykernel.jsonutil import encode_images, json_clean
    from ipykernel.zmqshell import ZMQDisplayPublisher

    def publish(bundle: Bundle, display_id: str | None, update: bool) -> None:
        pub, out, err = shell.display_pub, sys.stdout, sys.stderr
        session, socket = getattr(pub, "session", None), getattr(pub, "pub_socket", None)
        if (type(pub) is not ZMQDisplayPublisher or session is None or socket is None
                or not isinstance(out, OutStream) or not isinstance(err, OutStream)
                or pub.store_display_history or getattr(pub, "_hooks", None)):
            ipython_publisher(bundle, display_id, update)
            return
        queue_printed()
        content = {"data": encode_images(bundle), "metadata": {},  # type: ignore[no-untyped-call]
                   "transient": {} if display_id is None else {"display_id": display_id}}
        kind = "update_display_data" if update else "display_data"
        msg = session.msg(kind, json_clean(content), parent=pub.parent_header)  # type: ignore[no-untyped-call]
        session.send(socket, msg, ident=pub.topic)

    return publish


def queue_printed() -> None:
    """What the cell printed so far, queued on the IOPub thread ahead of what is sent next, without waiting for it
    (the streams' buffers are locked: any thread may flush); nothing where the streams are not the kernel's."""
    from ipykernel.iostream import OutStream

    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, OutStream):
            stream._flush()  # type: ignore[no-untyped-call]


def iopub_sender(shell: Any) -> Callable[[str, dict[str, Any], Any, bytes], None]:
    """Send one message (kind, content, parent header, topic) on the kernel's IOPub channel, as its display
    publisher does (kernel/cell_outputs.py sends its clear and what it shows again this way)."""

    def send(kind: str, content: dict[str, Any], parent: Any, ident: bytes) -> None:
        pub = shell.display_pub
        pub.session.send(pub.pub_socket, kind, content, parent, ident=ident)

    return send


def notebook_path(shell: Any | None) -> str | None:
    """The notebook file, as JupyterLab (`__session__`) or VS Code (`__vsc_ipynb_file__`) reports it."""
    ns: Mapping[str, Any] = getattr(shell, "user_ns", None) or {}
    for key in ("__vsc_ipynb_file__", "__session__"):
        value = ns.get(key)
        if isinstance(value, str) and value.endswith(".ipynb"):
            return value
    return None


def kernel_id() -> str | None:
    """The kernel's id, from its connection file name (`kernel-<id>.json`), when running in a kernel."""
    try:
        from ipykernel.connect import get_connection_file

        name = Path(get_connection_file()).name
    except Exception:  # not in a kernel
        return None
    match = re.match(r"kernel-(.+)\.json$", name)
    return match.group(1) if match else None


def _cell_target(kernel: Any | None) -> tuple[Any, Any] | None:
    """The (ident, parent) of the cell the kernel runs now (or ran last), which outputs and input requests
    must name; None outside a kernel."""
    context: contextvars.Context | None = getattr(kernel, "_shell_context", None)
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
    request, as ipykernel does. An interrupt cannot take the frontend's box back (the protocol has no such
    message), so a reply that names another request (the box an interrupt left open, typed into later) is
    dropped, never taken as this question's answer; a reply naming no request (jupyter_client's `input()`)
    is taken. None: end of input (the frontend sent ^D) or stopped.
    """
    import zmq

    socket, session = kernel.stdin_socket, kernel.session
    while True:  # purge stale replies
        try:
            socket.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            break
    sent = session.send(socket, "input_request", {"prompt": prompt, "password": False}, parent, ident=ident)
    asked = (sent or {}).get("header", {}).get("msg_id")
    while not stopped():
        ready, _, _ = zmq.select([socket], [], [], POLL)
        if not ready:
            continue
        _, reply = session.recv(socket)
        if reply is None:
            continue
        answers = (reply.get("parent_header") or {}).get("msg_id")
        if answers and asked and answers != asked:
            # the box of an earlier question, left open by an interrupt and typed into now: it answers nothing
            logger.debug("ignored an input reply to an earlier input request (%s)", answers)
            continue
        value = str(reply.get("content", {}).get("value", ""))
        return None if value == "\x04" else value  # \x04: end of input
    return None


def _terminal_reader() -> LineReader:
    """The process's stdin: polled where it is a file on POSIX (so the reader can stop), else `input()`."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        fd = -1
    if fd < 0 or os.name == "nt":
        return stoppable(builtins.input)

    def read(prompt: str, stopped: Stopped) -> str | None:
        sys.stdout.write(prompt)
        sys.stdout.flush()
        while not stopped():
            ready, _, _ = select.select([fd], [], [], POLL)
            if ready:
                line = sys.stdin.readline()
                if not line:
                    raise EOFError
                return line.rstrip("\r\n")
        return None

    return read


_MARK = "_synapse_departure_of"  # on our wrapper: the handler it wraps


def announce_shutdowns(shell: Any) -> bool:
    """Wrap the kernel's `shutdown_request` control handler to announce the ending first (synapse_nb/departure.py);
    False without a kernel.

    jupyter_client's restart and shutdown interrupt the kernel and then send `shutdown_request` on the control
    channel, which ipykernel handles in a thread of its own: the request is seen while the main thread unwinds the
    interrupted cell, so an MCP task the cell waited on is left running for the next kernel."""
    handlers = getattr(getattr(shell, "kernel", None), "control_handlers", None)
    if not isinstance(handlers, dict) or "shutdown_request" not in handlers:
        return False
    original = handlers["shutdown_request"]
    if getattr(original, _MARK, None) is not None:
        return True  # hooked already (loaded twice)

    async def shutdown_request(*args: Any, **kwargs: Any) -> None:
        DEPARTURE.announce()
        answer = original(*args, **kwargs)
        if inspect.isawaitable(answer):
            await answer

    setattr(shutdown_request, _MARK, original)
    handlers["shutdown_request"] = shutdown_request
    DEPARTURE.watch()
    return True


def stop_announcing(shell: Any) -> None:
    """Put the kernel's own `shutdown_request` handler back (at `%unload_ext`)."""
    handlers = getattr(getattr(shell, "kernel", None), "control_handlers", None)
    if not isinstance(handlers, dict):
        return
    original = getattr(handlers.get("shutdown_request"), _MARK, None)
    if original is not None:
        handlers["shutdown_request"] = original
        DEPARTURE.unwatch()
