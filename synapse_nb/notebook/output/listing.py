"""Listing: a DataFrame that shows all of itself (every row, every cell's whole text), for `%mcp list` / `tools`;
QueryFrame: a query's result (`%synapse sql`), its cells shown whole up to CELL_CHARS, its rows as pandas shows them.

pandas cuts a displayed frame to `display.max_rows` rows and each cell to `display.max_colwidth` characters,
which hid most of a nine-server tool list and the end of every description, reason and remedy. A Listing is
still a DataFrame for code (filter it, index it: what that gives is a plain DataFrame); only its own display
shows everything, wrapping long text instead of cutting it, and a missing value (None, NaN, <NA>, NaT) as a
blank cell.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .markup import Html

__all__ = ["CELL_CHARS", "Listing", "QueryFrame"]

CELL_CHARS = 2_000  # a query's cell is shown up to this many characters (pandas' default cut them at 50)

_WRAP = Html(
    "<style>.snb-listing td{white-space:pre-wrap;text-align:left;vertical-align:top;max-width:60ch;"
    "overflow-wrap:break-word}</style>"
)


class Listing(pd.DataFrame):  # type: ignore[misc]  # pandas has no type stubs here
    """A DataFrame displayed whole: no row limit, no cell width limit, long text wrapped."""

    @property
    def _constructor(self) -> Any:
        return pd.DataFrame  # what code derives from a listing is an ordinary frame again

    def _shown(self) -> pd.DataFrame:
        """The frame as displayed: missing values blank (code reading the listing still gets them)."""
        frame = pd.DataFrame(self)
        return frame.astype(object).where(frame.notna(), "")

    def _repr_html_(self) -> Html | None:
        with pd.option_context("display.max_rows", None, "display.max_colwidth", None,
                               "display.max_columns", None):
            html = self._shown()._repr_html_()
        # pandas escapes the cells of the table it writes: its HTML goes in as it is
        return None if html is None else Html('<div class="snb-listing">{}{}</div>').format(_WRAP, Html(html))

    def __repr__(self) -> str:
        with pd.option_context("display.max_rows", None, "display.max_colwidth", None,
                               "display.max_columns", None, "display.width", 10_000):
            return repr(self._shown())


class QueryFrame(pd.DataFrame):  # type: ignore[misc]  # pandas has no type stubs here
    """`%synapse sql`'s DataFrame: pandas' row limit (a query may return millions), but each cell shown whole up
    to CELL_CHARS characters (a prompt, an argument, an error message), wrapped, not cut at pandas' 50."""

    @property
    def _constructor(self) -> Any:
        return pd.DataFrame

    def _repr_html_(self) -> Html | None:
        with pd.option_context("display.max_colwidth", CELL_CHARS):
            html = pd.DataFrame(self)._repr_html_()
        # pandas escapes the cells of the table it writes: its HTML goes in as it is
        return None if html is None else Html('<div class="snb-listing">{}{}</div>').format(_WRAP, Html(html))

    def __repr__(self) -> str:
        with pd.option_context("display.max_colwidth", CELL_CHARS, "display.width", 10_000):
            return repr(pd.DataFrame(self))
