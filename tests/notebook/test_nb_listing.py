"""Listing: a displayed listing shows every row and whole texts, and a blank cell as blank (not None, NaN,
<NA> or NaT); code still gets the missing values."""

from __future__ import annotations

import math

import pandas as pd

from synapse_nb.notebook.output.listing import Listing

BLANKS = ("None", "NaN", "<NA>", "NaT", "nan")


def _listing() -> Listing:
    return Listing({
        "server": ["demo", "notes", "python"],
        "pid": pd.array([3715, None, None], dtype="Int64"),
        "version": ["1.0", None, float("nan")],
        "started": [pd.Timestamp("2026-11-26 17:00:01"), pd.NaT, pd.NaT],
    })


def test_a_listing_shows_blanks_as_blank() -> None:
    listing = _listing()
    html, text = listing._repr_html_(), repr(listing)
    assert html is not None
    for word in BLANKS:
        assert f">{word}<" not in html, word
        assert word not in text.split(), word
    assert ">3715<" in html
    assert "2026-11-26 17:00:01" in html


def test_code_still_sees_the_missing_values() -> None:
    listing = _listing()
    assert listing.pid.isna().sum() == 2
    assert listing.version.isna().sum() == 2
    assert math.isnan(listing.version.iloc[2])
    assert listing.started.isna().sum() == 2
