"""AppViewPage: one `ui://` resource's HTML, held once per kernel however many Views show it.

A View's HTML is self-contained (its own scripts inlined: ~200-600 KB for the official examples), and a page
reload gets every open widget's state from the kernel. Were the HTML a trait of each AppView, re-running a
View's cell ten times would make a reload fetch it ten times (and a notebook saved with its widget state hold
it ten times). Views of the same HTML share one of these models instead, as they share the View code
(app_bundle.AppViewBundle).
"""

from __future__ import annotations

import hashlib

import ipywidgets
import traitlets as t

__all__ = ["AppViewPage", "shared_page"]


class AppViewPage(ipywidgets.Widget):  # type: ignore[misc]
    """A model with no view: a resource's HTML and its digest."""

    html = t.Unicode("").tag(sync=True)
    digest = t.Unicode("").tag(sync=True)


_pages: dict[str, AppViewPage] = {}


def shared_page(html: str) -> AppViewPage:
    """The kernel's page model for this HTML, made on first use and again if it was closed (Widget.close_all)."""
    digest = hashlib.sha256(html.encode("utf-8", "surrogatepass")).hexdigest()
    page = _pages.get(digest)
    if page is None or page.comm is None:
        page = _pages[digest] = AppViewPage(html=html, digest=digest)
    return page
