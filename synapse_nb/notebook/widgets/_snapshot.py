"""Static snapshots beside a widget's view: what a saved notebook shows where no kernel draws the widget.

A widget output carries only `application/vnd.jupyter.widget-view+json` (and a repr as text/plain);
opened without a kernel (JupyterLab, GitHub, nbviewer) it reads `Inspector(children=(HTML(...` or
nothing. And JupyterLab and Notebook 7 rank the widget view first among an output's MIME types, so a
snapshot in the same output is never shown by them: a reopened notebook (trusted, a new kernel, no widget
state saved) showed one grey "Error displaying widget: model not found" line per widget.

So a displayed widget is two outputs (`_ipython_display_`): first its snapshot (text/html and a readable
text/plain, taken when it is displayed and again when it changes, `refresh_snapshot`), then the widget
view. The snapshot carries a stylesheet (SWAP_STYLE) that swaps them in JupyterLab and Notebook 7 (the
same output area): while the widget's model lives its view holds elements and the snapshot above it is
hidden; where the model is missing the widget renderer holds only its error text, and that output is
hidden, so the snapshot shows. GitHub and nbviewer show the snapshot (the view has no text of its own);
an untrusted JupyterLab shows the snapshot without its stylesheet. No extension, no saved widget state.

The HTML carries the widgets' stylesheet written into every element's `style` attribute: JupyterLab
strips `<style>` from a notebook it did not run (and drops inline values it cannot check, such as
`var(--jp-...)`, so theme variables become their fallbacks), and GitHub and nbviewer do likewise. The
`<style>` block stays in front for the frontends that keep it (its spinner and summary markers).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from ..output.markup import Html
from ._html import STYLE

__all__ = ["SNAPSHOT_CLASS", "SWAP_STYLE", "WIDGET_MIME", "Snapshot", "inline_styles", "snapshot_id",
           "snapshot_outputs"]

logger = logging.getLogger("synapse_nb.notebook")

SNAPSHOT_CLASS = "snb-snapshot"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
_RULE = re.compile(r"([^{}@]+)\{([^{}]*)\}")


def _themed(style: str) -> str:
    """The declarations of `style` that use a theme variable (`var(--...)`), scoped to snapshots and marked
    `!important`: the inlined copies (theme variables resolved to their light fallbacks, for frontends that
    strip `<style>`) would otherwise win over them, and a snapshot shown in JupyterLab Dark read dark on white."""
    rules = []
    css = re.sub(r"</?style>", "", style)
    for selectors, body in _RULE.findall(css):
        declarations = [d.strip() for d in body.split(";") if "var(--" in d and not d.strip().startswith("--")]
        if declarations and "body" not in selectors and not selectors.strip().startswith(("from", "to")):
            scoped = ",".join(f".{SNAPSHOT_CLASS} {sel.strip()}" for sel in selectors.split(","))
            rules.append(f"{scoped}{{{';'.join(d + '!important' for d in declarations)}}}")
    return "".join(rules)


# JupyterLab's (and Notebook 7's) output area: each output is a `.jp-OutputArea-child` holding its
# `.jp-OutputArea-output`. The widget renderer adds the class `jupyter-widgets` to that node itself only
# when it shows an error (its text alone); a live view is an element inside it. (`:has()` may not nest.)
SWAP_STYLE = Html(
    "<style>"
    f".jp-OutputArea-child:has(.{SNAPSHOT_CLASS})+.jp-OutputArea-child:has(>.jp-OutputArea-output.jupyter-widgets)"
    "{display:none}"
    f".jp-OutputArea-child:has(.{SNAPSHOT_CLASS}):has(+.jp-OutputArea-child .jp-OutputArea-output .jupyter-widgets)"
    "{display:none}"
    f"{_themed(STYLE)}"
    "</style>"
)


def _snapshot_html(html: Html) -> str:
    """The snapshot's output: the swapping stylesheet, the widgets' stylesheet, `html` in the snapshot element."""
    return str(Html('{}{}<div class="{}">{}</div>').format(SWAP_STYLE, STYLE, SNAPSHOT_CLASS, html))


def snapshot_id(display_id: str) -> str:
    """The display id of a widget's snapshot output, beside the display id of its view's output."""
    return f"{display_id}-snapshot"


def snapshot_outputs(view: dict[str, Any], html: Html, text: str) -> list[dict[str, Any]]:
    """A widget shown as two outputs (see the module docstring): its snapshot (`html`, placed in the
    snapshot element, and `text`), then its view (`view`'s widget MIME type alone). A bundle without a
    widget view (nothing to swap) is returned as it is."""
    if WIDGET_MIME not in view:
        return [view]
    snapshot = {"text/html": _snapshot_html(html), "text/plain": text}
    return [snapshot, {WIDGET_MIME: view[WIDGET_MIME], "text/plain": ""}]


class Snapshot:
    """Mixin for a widget: `snapshot()` returns (html, text); displayed, the widget is its snapshot's output
    and its view's (see the module docstring); `_repr_mimebundle_` holds both in one bundle, for callers
    that read it (a View's text fallback, tests)."""

    _snapshot_id: str | None = None  # the display id of the snapshot output, once displayed

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
        return {"text/html": _snapshot_html(html), "text/plain": text}

    def _ipython_display_(self) -> None:
        """Display the snapshot, then the widget view, as two outputs (IPython's display() and a cell's value)."""
        import uuid

        from IPython.display import display

        view: dict[str, Any] | None = super()._repr_mimebundle_()  # type: ignore[misc]
        self._snapshot_id = snapshot_id(uuid.uuid4().hex)
        display(self.mime_bundle(), raw=True, display_id=self._snapshot_id)  # type: ignore[no-untyped-call]
        if view is not None and WIDGET_MIME in view:
            display({WIDGET_MIME: view[WIDGET_MIME], "text/plain": ""}, raw=True)  # type: ignore[no-untyped-call]

    def refresh_snapshot(self) -> None:
        """Take the snapshot again into the output it was displayed in (nothing before it was displayed): a
        reopened notebook shows the widget's last state."""
        if self._snapshot_id is None:
            return
        from IPython.display import update_display

        update_display(self.mime_bundle(), raw=True, display_id=self._snapshot_id)  # type: ignore[no-untyped-call]

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
