"""LogView: one server's log ring (`notifications/message`) in the inspector, with a level filter."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as w

from ...errors import SynapseError
from ...mcp_client.logs import LEVELS
from ..output.markup import Html, join

__all__ = ["SHOWN", "LogView", "logs_html"]

logger = logging.getLogger("synapse_nb.notebook")

SHOWN = 200
"""The newest entries shown; the ring keeps more (`%mcp logs NAME` reads them all)."""

_COLOURS = {"warning": "snb-warn", **dict.fromkeys(("error", "critical", "alert", "emergency"), "snb-err")}


def logs_html(name: str, entries: Sequence[Any], level: str) -> Html:
    """The entries as lines (time, level, logger, text), newest last; a hint when there are none."""
    if not entries:
        return Html('<span class="snb-muted">No log messages from {} at {} or above; ask for more '
                    "with <code>%mcp connect {} --log-level debug ...</code></span>").format(name, level, name)
    lines = []
    for entry in entries:
        css = _COLOURS.get(str(entry.level), "")
        lines.append(Html('<span class="{}">{}</span>').format(css, str(entry)) if css else str(entry))
    return Html('<div class="snb-pre">{}</div>').format(join(lines, "<br>"))


class LogView(w.VBox):  # type: ignore[misc]
    """The log ring of `name`, read through `read(n, level)` (the hub's `logs`); `refresh()` re-reads it.

    The inspector refreshes it with the rest of the panel on every server event, which includes the
    hub's `log` events (warnings and above); quieter messages show on the next refresh or filter change.
    """

    def __init__(self, name: str, read: Callable[[int, str], Sequence[Any]] | None,
                 on_loop: Callable[..., None]) -> None:
        self.name = name
        self.read = read
        self.count = 0
        self.level = w.Dropdown(options=list(LEVELS), value="debug", description="level ≥",
                                layout=w.Layout(width="220px"))
        self.level.add_class("snb-log-level")
        self.level.observe(lambda _c: on_loop(self.refresh), "value")
        self.view = w.HTML()
        super().__init__([self.level, self.view])
        self.refresh()

    def refresh(self) -> None:
        """Re-read the newest entries at the chosen level or above."""
        level = str(self.level.value)
        if self.read is None:
            self.count = 0
            self.view.value = '<span class="snb-muted">This hub keeps no server logs.</span>'
            return
        try:
            entries = list(self.read(SHOWN, level))
        except SynapseError as exc:  # disconnected: say so, keep the widget usable
            self.count = 0
            self.view.value = Html('<span class="snb-muted">No logs: {}</span>').format(exc)
            return
        except Exception as exc:  # a widget callback: show the problem and log it
            logger.exception("reading the logs of %s failed", self.name)
            self.count = 0
            self.view.value = Html('<span class="snb-err">Reading logs failed: {}</span>').format(exc)
            return
        self.count = len(entries)
        self.view.value = logs_html(self.name, entries, level)
