"""The inspector's search box: a request in plain words, the connected tools ranked for it by the same search as
`%mcp search` and the model's `tools__search` (the facade's `search_tools`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as w

from ...errors import SynapseError
from ..output.markup import Html, join

__all__ = ["ToolSearchBox", "hits_html"]

logger = logging.getLogger("synapse_nb.notebook")

SearchTools = Callable[[str], Sequence[Mapping[str, Any]]]
"""Ranks the tools for a request: rows of rank, name, server, tool, score, description (best first)."""


def hits_html(text: str, rows: Sequence[Mapping[str, Any]]) -> Html:
    """The ranked tools as a small table (name and description), or a line saying none matched."""
    if not rows:
        return Html('<div class="snb-muted">No tool matches “{}”: try other words (what it acts on, what it '
                    "returns).</div>").format(text)
    body = join(Html("<tr><td>{}</td><td><code>{}</code></td><td>{}</td></tr>").format(
        row.get("rank", ""), row.get("name", ""), _short(str(row.get("description", "")))) for row in rows)
    return Html('<table class="snb-table snb-search-hits"><tr><th>#</th><th>tool</th><th>what it does</th></tr>'
                "{}</table>").format(body)


class ToolSearchBox(w.VBox):  # type: ignore[misc]
    """A text box; on Enter (or the Search button) the tools ranked for its text show under it."""

    def __init__(self, search: SearchTools) -> None:
        self.search = search
        self.box = w.Text(placeholder="search tools: what should it do?", continuous_update=False,
                          layout=w.Layout(width="420px", max_width="75%"))
        self.button = w.Button(description="Search", icon="search", layout=w.Layout(width="auto"))
        self.hits = w.HTML()
        self.box.observe(lambda _c: self.run(), "value")
        self.button.on_click(lambda _b: self.run())
        super().__init__([w.HBox([self.box, self.button], layout=w.Layout(align_items="center")), self.hits],
                         layout=w.Layout(width="100%"))
        self.add_class("snb-tool-search")

    def run(self) -> None:
        """Rank the tools for the box's text and show them (an empty box clears the list)."""
        text = self.box.value.strip()
        if not text:
            self.hits.value = ""
            return
        try:
            rows = self.search(text)
        except SynapseError as exc:
            self.hits.value = Html('<span class="snb-err">{}</span>').format(exc)
        except Exception as exc:  # a widget callback: show and log, never raise into the frontend
            logger.exception("searching the tools failed")
            self.hits.value = Html('<span class="snb-err">{}: {}</span>').format(type(exc).__name__, exc)
        else:
            self.hits.value = hits_html(text, rows)


def _short(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
