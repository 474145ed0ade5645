"""Run widget callbacks on the kernel's loop: JupyterLab 4.6 + ipykernel 7 deliver comm messages on a subshell thread.

With JupyterLab's default `commsOverSubshells: perCommTarget`, a click is handled on a subshell thread
that has its own asyncio loop. Creating a task there for the kernel loop is not thread-safe (and the
kernel loop is not woken up, so the task sits until the next message), and the history store and the
hub belong to the kernel's thread. So every callback hands itself to the kernel loop first.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

__all__ = ["call_on", "current_loop", "kernel_loop"]


def current_loop() -> asyncio.AbstractEventLoop | None:
    """The loop running in this thread, if any (in a cell: the kernel's loop)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def call_on(loop: asyncio.AbstractEventLoop | None, fn: Callable[..., Any], *args: Any) -> None:
    """Call `fn(*args)` on `loop`'s thread: now if we are there (or no loop runs), else as soon as it can."""
    if loop is None or loop.is_closed() or not loop.is_running() or current_loop() is loop:
        fn(*args)
        return
    loop.call_soon_threadsafe(functools.partial(fn, *args))


def kernel_loop(runner: Any) -> asyncio.AbstractEventLoop | None:
    """The loop the runner schedules on (its `loop` property), or None for a runner without one."""
    loop = getattr(runner, "loop", None)
    return loop if isinstance(loop, asyncio.AbstractEventLoop) else None
