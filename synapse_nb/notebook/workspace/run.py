"""`kernel__run_python`'s engine: run code in the user namespace as a cell would, capturing what it produced.

The code runs synchronously on the calling (loop) thread, in the user's namespace, so the variables it
assigns stay, like a cell's. Captured: stdout and stderr, displays, the last expression's value,
matplotlib figures (as PNG: shown with plt.show() or left open), and an error as one line plus the
frame it was raised in. Because the code does not await, asyncio cannot cancel it: on the main thread
a SIGALRM timer stops it after `timeout` seconds, and SIGINT (the kernel's interrupt) stops it and is
then passed on to the handler that was installed before (which cancels the turn).
"""

from __future__ import annotations

import ast
import base64
import io
import linecache
import signal
import sys
import threading
import traceback
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from types import FrameType
from typing import Any

from .values import bounded_repr

__all__ = ["RunOutcome", "run_code"]

FILENAME = "<kernel__run_python>"


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """What one run produced; `images` are base64 PNGs."""

    stdout: str = ""
    stderr: str = ""
    value: str | None = None
    error: str | None = None
    images: tuple[str, ...] = ()
    displayed: tuple[str, ...] = ()
    assigned: tuple[str, ...] = ()
    timed_out: bool = False
    interrupted: bool = False


class _Stop(BaseException):
    """Raised inside the running code by our signal handlers (a BaseException: the code's `except Exception`
    cannot swallow it)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def run_code(
    code: str, namespace: MutableMapping[str, Any], *, transform: Callable[[str], str] | None = None,
    timeout: float | None = None,
) -> RunOutcome:
    """Run `code` in `namespace`; never raises for the code's own errors (they are in `error`).

    After an interrupt the SIGINT handler found on entry is called once the code stopped: it raises
    KeyboardInterrupt or cancels the running turn, as an interrupt of the turn would have.
    """
    from IPython.utils.capture import capture_output

    source = transform(code) if transform is not None else code
    before = dict(namespace)
    pyplot = sys.modules.get("matplotlib.pyplot")
    figures_before = set(pyplot.get_fignums()) if pyplot is not None else set()
    value: Any = None
    error: str | None = None
    stopped: str | None = None
    guard = _Stoppable(timeout)
    captured: Any = None
    try:
        with capture_output() as captured, guard:
            try:
                value = _execute(source, namespace)
            except _Stop as stop:
                stopped = stop.why
            except BaseException as exc:  # the code's failure (even SystemExit) is reported, not raised
                error = _error_text(exc, source)
    except _Stop as stop:  # the timer fired just as the code finished
        stopped = stopped or stop.why
    images = [_base64(o.data["image/png"]) for o in captured.outputs if "image/png" in o.data]
    displayed = tuple(
        str(o.data.get("text/plain", "")) for o in captured.outputs if "image/png" not in o.data and o.data
    )
    images += _open_figures(figures_before)
    if stopped == "timeout":
        error = f"TimeoutError: the code ran longer than {timeout:g} s and was stopped"
    elif stopped == "interrupt":
        error = "KeyboardInterrupt: the code was interrupted"
    assigned = tuple(
        sorted(k for k, v in namespace.items() if not k.startswith("_") and (k not in before or before[k] is not v))
    )
    outcome = RunOutcome(
        stdout=captured.stdout, stderr=captured.stderr,
        value=None if value is None or error else bounded_repr(value), error=error, images=tuple(images),
        displayed=displayed, assigned=assigned, timed_out=stopped == "timeout", interrupted=stopped == "interrupt",
    )
    if stopped == "interrupt":
        _pass_on_interrupt(guard.previous_int)
    return outcome


def _execute(source: str, namespace: MutableMapping[str, Any]) -> Any:
    """exec the code; the value of a final expression statement is returned (as a cell's Out would be)."""
    linecache.cache[FILENAME] = (len(source), None, source.splitlines(True), FILENAME)
    tree = ast.parse(source, FILENAME, "exec")
    last: ast.expr | None = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body.pop().value  # type: ignore[attr-defined]
    globals_ = namespace if isinstance(namespace, dict) else dict(namespace)
    exec(compile(tree, FILENAME, "exec"), globals_)  # running the user's approved code is the point
    value = None
    if last is not None:
        value = eval(compile(ast.Expression(last), FILENAME, "eval"), globals_)
    if globals_ is not namespace:
        namespace.update(globals_)
    return value


def _error_text(exc: BaseException, source: str) -> str:
    """`Type: message` on one line, then where: the last frame (in the code: its line number and text)."""
    text = " ".join(str(exc).split())
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    if isinstance(exc, SyntaxError) and exc.filename == FILENAME:
        return f"{line}\n  at line {exc.lineno} of the code"
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return line
    frame = frames[-1]
    if frame.filename == FILENAME:
        where = f"line {frame.lineno} of the code"
    else:
        where = f'File "{frame.filename}", line {frame.lineno}, in {frame.name}'
    code_line = (frame.line or "").strip()
    return f"{line}\n  at {where}" + (f": {code_line}" if code_line else "")


def _base64(png: Any) -> str:
    """A displayed PNG as base64 text (IPython's formatters give bytes; a kernel's publisher would encode them)."""
    if isinstance(png, bytes | bytearray):
        return base64.b64encode(png).decode("ascii")
    return str(png)


def _open_figures(before: set[int]) -> list[str]:
    """PNGs of the matplotlib figures the code opened and left open; they are closed (shown once, here)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    images: list[str] = []
    for number in pyplot.get_fignums():
        if number in before:
            continue
        figure = pyplot.figure(number)
        buffer = io.BytesIO()
        try:
            figure.savefig(buffer, format="png", bbox_inches="tight", metadata={"Software": None})
            images.append(base64.b64encode(buffer.getvalue()).decode("ascii"))
        except Exception:  # a figure that cannot render is left out, not fatal
            continue
        finally:
            pyplot.close(figure)
    return images


# ---------------------------------------------------------------------------------------------- signals


class _Stoppable:
    """While the code runs on the main thread: SIGALRM after `timeout` and SIGINT raise _Stop in it."""

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self.active = threading.current_thread() is threading.main_thread()
        self.previous_int: Any = None
        self.previous_alrm: Any = None
        self.timer = False

    def __enter__(self) -> None:
        if not self.active:
            return
        self.previous_int = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, self._on_int)
        if self.timeout is not None and self.timeout > 0 and hasattr(signal, "setitimer"):
            self.previous_alrm = signal.getsignal(signal.SIGALRM)
            signal.signal(signal.SIGALRM, self._on_alarm)
            signal.setitimer(signal.ITIMER_REAL, self.timeout)
            self.timer = True

    def __exit__(self, *exc: object) -> None:
        if not self.active:
            return
        if self.timer:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous_alrm)
        signal.signal(signal.SIGINT, self.previous_int)

    @staticmethod
    def _on_int(signum: int, frame: FrameType | None) -> None:
        raise _Stop("interrupt")

    @staticmethod
    def _on_alarm(signum: int, frame: FrameType | None) -> None:
        raise _Stop("timeout")


def _pass_on_interrupt(previous: Any) -> None:
    """Hand the interrupt to the handler that was there before (it cancels the turn or raises)."""
    if callable(previous):
        previous(signal.SIGINT, None)
    elif previous == signal.SIG_DFL:
        raise KeyboardInterrupt
    # SIG_IGN, or no handler of ours was installed (not the main thread): nothing to pass on

