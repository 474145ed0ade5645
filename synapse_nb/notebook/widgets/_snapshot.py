"""Static snapshots beside a widget's view: what a saved notebook shows where no kernel draws the widget.

A widget output carries only `application/vnd.jupyter.widget-view+json` (and a repr as text/plain);
opened without a kernel (JupyterLab, GitHub, nbviewer) it reads `Inspector(children=(HTML(...` or
nothing. `Snapshot` adds `text/html` (with the stylesheet, and colours inline) and a readable
`text/plain` to the widget's MIME bundle, taken when the widget is displayed.
"""

from __future__ import annotations

import logging
from typing import Any

from ._html import STYLE

__all__ = ["Snapshot"]

logger = logging.getLogger("synapse_nb.notebook")


class Snapshot:
    """Mixin for a widget: `snapshot()` returns (html, text); `_repr_mimebundle_` adds them to the bundle."""

    def snapshot(self) -> tuple[str, str]:
        raise NotImplementedError

    def mime_bundle(self) -> dict[str, Any]:
        """The static part of the bundle: text/html and text/plain (never raises: a repr must not fail)."""
        try:
            html, text = self.snapshot()
        except Exception as exc:  # a display hook must not raise; say why there is no snapshot
            logger.exception("taking the snapshot of %s failed", type(self).__name__)
            html, text = "", f"{type(self).__name__} (no snapshot: {exc})"
        return {"text/html": STYLE + html, "text/plain": text}

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        data: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        if data is None:
            return None
        return {**data, **self.mime_bundle()}
