"""Work that must neither be cut short nor block the loop: waiting through a cancellation, the off-loop
import of the SDK's result validation."""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

import anyio

__all__ = ["validation_loaded", "validation_ready", "wait_through_cancel"]


_validation_ready = False


def validation_loaded() -> bool:
    """The SDK's result validation is imported (a call need not look for an output schema to prepare it)."""
    return _validation_ready


async def validation_ready() -> None:
    """Have jsonschema imported before a call whose result the SDK validates against an output schema.

    The SDK imports it on the first such result, on the loop: about a second of CPU (mostly building
    a URI grammar) that would stall every task. It is imported here in a worker thread instead, only
    for a tool that needs it (`preload()` leaves it out: see mcp_client/__init__.py). It is not
    started at connect: a thread importing while the first call reads a large result holds the GIL
    in 5 ms slices against the loop, which then waits that long after every read (a 10 MB result
    took twice as long as with the bare SDK).
    """
    global _validation_ready
    if not _validation_ready:
        await asyncio.to_thread(_import_validation)
        _validation_ready = True


def _import_validation() -> None:
    for module in ("jsonschema", "jsonschema.validators", "referencing"):
        importlib.import_module(module)  # waits on the import lock if preload()'s thread is importing it


async def wait_through_cancel(tasks: set[asyncio.Future[Any]], timeout: float) -> None:
    """Wait up to `timeout` s for `tasks` (or futures), also when this task is cancelled meanwhile; re-raise that after.

    anyio's shield keeps anyio scope cancellations out but not a plain `task.cancel()`; this outlasts both.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    cancelled = False
    pending = tasks
    with anyio.CancelScope(shield=True):
        while pending and (left := deadline - loop.time()) > 0:
            try:
                _, pending = await asyncio.wait(pending, timeout=left)
            except asyncio.CancelledError:
                cancelled = True
    if cancelled:
        raise asyncio.CancelledError
