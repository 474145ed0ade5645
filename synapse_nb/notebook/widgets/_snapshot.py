"""Static snapshots beside a widget's view: what a saved notebook shows where no kernel draws the widget.

A widget output carries only `application/vnd.jupyter.widget-view+json` (and a repr as text/plain);
opened without a kernel (JupyterLab, GitHub, nbviewer) it reads `Inspector(children=(HTML(...` or
nothing. `Snapshot` adds `text/html` and a readable `text/plain` to the widget's MIME bundle, taken
when the widget is displayed.

The HTML carries the widgets' stylesheet written into every element's `style` attribute: JupyterLab
strips `<style>` from a notebook it did not run (and drops inline values it cannot check, such as
`var(--jp-...)`, so theme variables become their fallbacks), and GitHub and nbviewer do likewise. The
`<style>` block stays in front for the frontends that keep it (its spinner and summary markers).
"""

from __future__ import annotations

import logging
from typing import Any

from ..output.markup import Html
from ._html import STYLE

__all__ = ["Snapshot", "inline_styles"]

logger = logging.getLogger("synapse_nb.notebook")


class Snapshot:
    """Mixin for a widget: `snapshot()` returns (html, text); `_repr_mimebundle_` adds them to the bundle."""

    def snapshot(self) -> tuple[Html, str]:
        raise NotImplementedError

    def mime_bundle(self) -> dict[str, Any]:
        """The static part of the bundle: text/html and text/plain (never raises: a repr must not fail)."""
        try:
            html, text = self.snapshot()
            html = inline_styles(html)
        except Exception as exc:  # a display hook must not raise; say why there is no snapshot
            logger.exception("taking the snapshot of %s failed", type(self).__name__)
            html, text = Html(), f"{type(self).__name__} (no snapshot: {exc})"
        return {"text/html": STYLE + html, "text/plain": text}

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        data: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        if data is None:
            return None
        return {**data, **self.mime_bundle()}


def inline_styles(html: Html) -> Html:
    """`html` with the widgets' stylesheet inlined, theme variables resolved to their fallbacks."""
    import css_inline  # lazy: only a displayed widget needs it, and `import synapse_nb` must stay fast

    css = STYLE.removeprefix("<style>").removesuffix("</style>")
    inlined: str = css_inline.inline_fragment(str(html), css, resolve_css_variables=True,
                                              load_remote_stylesheets=False)
    return Html(inlined)  # our Html with the stylesheet's rules moved into it: as safe as what went in
