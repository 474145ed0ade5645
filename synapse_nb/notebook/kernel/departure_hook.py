"""Announce the kernel's ending (synapse_nb/departure.py) the moment ipykernel gets a shutdown request.

jupyter_client's restart and shutdown interrupt the kernel and then send `shutdown_request` on the control channel,
which ipykernel handles in a thread of its own, so the request is seen even while the main thread unwinds the
interrupted cell. The hook wraps that one control handler and is removed by `unhook`.
"""

from __future__ import annotations

import inspect
from typing import Any

from ...departure import DEPARTURE

__all__ = ["hook", "unhook"]

_MARK = "_synapse_departure_of"


def hook(shell: Any) -> bool:
    """Wrap the kernel's `shutdown_request` control handler to announce the ending first; False without a kernel."""
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


def unhook(shell: Any) -> None:
    """Put the kernel's own handler back (at `%unload_ext`)."""
    handlers = getattr(getattr(shell, "kernel", None), "control_handlers", None)
    if not isinstance(handlers, dict):
        return
    original = getattr(handlers.get("shutdown_request"), _MARK, None)
    if original is not None:
        handlers["shutdown_request"] = original
        DEPARTURE.unwatch()
