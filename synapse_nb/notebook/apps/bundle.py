"""AppViewBundle: the MCP Apps View's browser code (static/app_view.js, ~670 KB), held once per kernel.

Every AppView carries only a small loader ESM (static/app_view_loader.js) and a reference to this one
widget model; the loader imports the code from it once per page. So the code is synced once however many
Views a notebook shows, and a notebook saved with its widget state holds it once.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import ipywidgets
import traitlets as t

__all__ = ["AppViewBundle", "bundle_code", "shared_bundle"]

_CODE = Path(__file__).with_name("static") / "app_view.js"


def _read_code() -> str:
    return _CODE.read_text(encoding="utf-8") if _CODE.exists() else ""


@functools.cache
def bundle_code() -> tuple[str, str]:
    """The View code and its digest, read once per process (apps/warm.py reads it before the first View)."""
    code = _read_code()
    return code, hashlib.sha256(code.encode()).hexdigest()[:16]


class AppViewBundle(ipywidgets.Widget):  # type: ignore[misc]
    """A model with no view: the View code and its digest (the page caches the imported module by it)."""

    code = t.Unicode("").tag(sync=True)
    digest = t.Unicode("").tag(sync=True)


_shared: AppViewBundle | None = None


def shared_bundle() -> AppViewBundle:
    """The kernel's one bundle model, made on first use and again if it was closed (e.g. Widget.close_all)."""
    global _shared
    if _shared is None or _shared.comm is None:
        code, digest = bundle_code()
        _shared = AppViewBundle(code=code, digest=digest)
    return _shared
