"""Warms what the first MCP Apps View of a kernel needs, in the background, once `%load_ext` has run.

A View's first opening imports anywidget and ipywidgets (with this room's widget modules) and reads the View code
(static/app_view.js, ~670 KB) and its digest: 0.5-1 s of CPU the first `%mcp call` of a UI tool paid on the loop,
its cell saying nothing meanwhile. `warm_views` does it in a daemon thread that starts only after the MCP client's
own preload thread has ended (so the two never compete for the GIL and the cores with each other); `%load_ext`
itself imports nothing more and prints nothing. A View opened before it is done waits on Python's import lock for
the rest only.
"""

from __future__ import annotations

import importlib
import logging
import threading

__all__ = ["WARMED", "warm_views"]

logger = logging.getLogger("synapse_nb.notebook")

WARMED = (
    "anywidget",
    "ipywidgets",
    "synapse_nb.notebook.apps.view",
    "synapse_nb.notebook.apps.companion",
)
"""What a View's first opening imports (AppViews.open), in the order it does."""


def warm_views(after: threading.Thread | None) -> threading.Thread | None:
    """Start the warming thread, to run once `after` (the MCP client's preload thread) has ended; None when there is
    nothing to wait for (no preload thread: then nothing is warmed, as nothing says the kernel is past its start)."""
    if after is None:
        return None
    thread = threading.Thread(target=_warm, args=(after,), name="synapse-apps-warm", daemon=True)
    thread.start()
    return thread


def _warm(after: threading.Thread) -> None:
    after.join()
    try:
        for module in WARMED:
            importlib.import_module(module)
        from .bundle import bundle_code

        bundle_code()
    except Exception:  # warming is an optimisation: the View's own opening reports a real failure
        logger.debug("warming the MCP Apps View failed", exc_info=True)
