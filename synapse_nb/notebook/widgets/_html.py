"""Shared look of the widgets: one stylesheet, badges, durations and JSON blocks as Html (escaped by construction)."""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Mapping
from string import Template
from typing import Any

from ..output.markup import Html, esc
from ..output.palette import DARK_STYLE, LIGHT, colour

__all__ = [
    "ANNOTATION_BADGES",
    "Html",
    "STATE_COLOURS",
    "SPINNER",
    "STYLE",
    "badge",
    "clean",
    "esc",
    "fmt_ms",
    "json_block",
    "pre",
    "state_badge",
]

# JupyterLab theme variables with fallbacks, and the palette's text colours ($error, $ok, ...: light colours that
# switch on dark themes), so the widgets read on light and dark themes.
_STYLE = Template("""<style>
.snb-root{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px;
  color:var(--jp-ui-font-color1,#1f2328);}
.snb-root .widget-html-content{line-height:1.45}
.snb-title{font-size:15px;font-weight:600;margin:2px 0 6px}
.snb-muted{color:$muted;font-size:12px}
.snb-card{border:1px solid var(--jp-border-color2,#d0d7de);border-radius:6px;padding:8px 10px;
  background:var(--jp-layout-color1,#fff)}
.snb-section{border-top:1px solid var(--jp-border-color2,#d0d7de);margin-top:6px;padding-top:6px}
.snb-badge{display:inline-block;padding:0 7px;margin:0 3px 0 0;border-radius:10px;font-size:11px;
  line-height:18px;font-weight:600;border:1px solid transparent;white-space:nowrap}
.snb-b-green{background:#dafbe1;color:#116329;border-color:#aceebb}
.snb-b-red{background:#ffebe9;color:#a40e26;border-color:#ffcecb}
.snb-b-blue{background:#ddf4ff;color:#0550ae;border-color:#b6e3ff}
.snb-b-purple{background:#fbefff;color:#6e40c9;border-color:#e8d5ff}
.snb-b-amber{background:#fff8c5;color:#7d4e00;border-color:#f5e0a0}
.snb-b-grey{background:#eaeef2;color:#424a53;border-color:#d0d7de}
.snb-dot{display:inline-block;width:9px;height:9px;border-radius:50%;margin-right:5px}
.snb-err{color:$error}
.snb-warn{color:$warn}
.snb-ok{color:$ok}
.snb-field-error{color:$error;font-size:12px;min-height:0}
.snb-tool-description{margin:4px 0 8px;white-space:pre-wrap}
.snb-req{color:$error;font-weight:700;margin-left:2px}
.snb-pre{font-family:var(--jp-code-font-family,monospace);font-size:12px;white-space:pre-wrap;
  word-break:break-word;background:var(--jp-layout-color2,#f6f8fa);border-radius:4px;padding:6px 8px;
  margin:4px 0;max-height:320px;overflow:auto}
.snb-pre.snb-err{background:$error_bg;border-left:3px solid $error}
.snb-table{border-collapse:collapse;font-size:12px;width:100%}
.snb-table th{text-align:left;font-weight:600;color:$muted;
  border-bottom:1px solid var(--jp-border-color2,#d0d7de);padding:2px 6px}
.snb-table td{padding:2px 6px;border-bottom:1px solid var(--jp-border-color3,#eaeef2);vertical-align:top;
  text-align:left}
.snb-trace details.snb-span{border-bottom:1px solid var(--jp-border-color3,#eaeef2)}
.snb-trace details.snb-span>summary{cursor:pointer;list-style:none;display:flex;align-items:center;gap:8px;
  padding:3px 0}
.snb-trace details.snb-span>summary::-webkit-details-marker{display:none}
.snb-trace details.snb-span>summary::before{content:"▸";width:10px;flex:none;color:#8c959f}
.snb-trace details.snb-span[open]>summary::before{content:"▾"}
.snb-root summary{cursor:pointer}
.snb-trace .snb-label{width:260px;flex:none;display:flex;flex-wrap:wrap;align-items:center;gap:2px 0}
.snb-trace .snb-label .snb-name{overflow-wrap:anywhere;min-width:0;margin-right:4px}
.snb-trace .snb-label .snb-badge,.snb-trace .snb-label .snb-kind{flex:none}
.snb-trace .snb-track{flex:1;position:relative;height:14px;background:var(--jp-layout-color2,#f6f8fa);
  border-radius:3px}
.snb-trace .snb-bar{position:absolute;top:2px;height:10px;border-radius:2px;min-width:2px}
.snb-trace .snb-num{width:150px;flex:none;text-align:right;font-variant-numeric:tabular-nums}
.snb-trace .snb-body{padding:2px 0 8px 24px}
.snb-turn{font-weight:600;margin:10px 0 2px}
.snb-spin{display:inline-block;width:9px;height:9px;border:2px solid $info;border-right-color:transparent;
  border-radius:50%;animation:snb-rot .8s linear infinite;vertical-align:-1px}
@keyframes snb-rot{to{transform:rotate(360deg)}}
.snb-kind{display:inline-block;width:34px;text-align:center;font-size:10px;font-weight:700;border-radius:3px;
  color:#fff;margin-right:6px;line-height:16px}
.widget-textarea.snb-invalid textarea,.widget-text.snb-invalid input{border-color:$error !important}
.snb-inspector{container:snb-inspector/inline-size}
.snb-root .widget-button{flex-shrink:0;min-width:max-content}
.snb-root .widget-hbox>.widget-vbox{min-width:0}
.snb-root .widget-vbox,.snb-root .widget-hbox{box-sizing:border-box}
.snb-root .jupyter-widget-tab>.lm-TabBar .lm-TabBar-content{flex-wrap:wrap}
.snb-root .jupyter-widget-tab>.lm-TabBar .lm-TabBar-tab{flex:0 0 auto;min-width:max-content;max-width:none}
.snb-root .jupyter-widget-tab>.lm-TabBar .lm-TabBar-tab,
.snb-root .jupyter-widget-Collapse>.jupyter-widget-Collapse-header{color:var(--jp-ui-font-color1,#1f2328)}
.snb-root code{overflow-wrap:break-word}
.snb-root svg.snb-latency{max-width:100%;height:auto}
.snb-root table{display:block;max-width:100%;overflow-x:auto}
.snb-root .widget-html>.widget-html-content{min-width:0}
.snb-root textarea,.snb-root input[type=text],.snb-root select{box-sizing:border-box;max-width:100%}
.snb-root .widget-textarea,.snb-root .widget-text,.snb-root .widget-select{max-width:calc(100% - 4px);
  box-sizing:border-box;min-width:0}
.snb-root .snb-field-label .widget-html-content{white-space:normal;overflow-wrap:anywhere;line-height:1.35}
.snb-field-title{font-size:12px}
.snb-card.snb-root{box-sizing:border-box;max-width:100%}
.snb-elicitation{container:snb-form/inline-size}
.snb-elicitation .snb-actions{flex-wrap:wrap;gap:4px 0}
@container snb-form (max-width:520px){
  .snb-root .snb-field{flex-direction:column}
  .snb-root .snb-field>.snb-field-label{width:auto!important;min-width:0!important}
  .snb-root .snb-field>.widget-vbox{width:100%}
}
@container snb-inspector (max-width:520px){
  .snb-root .snb-field{flex-direction:column}
  .snb-root .snb-field>.snb-field-label{width:auto!important;min-width:0!important}
  .snb-root .snb-field>.widget-vbox{width:100%}
}
@container snb-inspector (max-width:760px){
  .snb-root .widget-hbox{flex-wrap:wrap}
  /* stacked: one column, never wrapped (a wrapped column is as wide as its widest part, past the panel) */
  .snb-root .widget-hbox:has(>.widget-vbox>.snb-tool-list){flex-direction:column;flex-wrap:nowrap}
  .snb-root .widget-hbox:has(>.widget-vbox>.snb-tool-list)>.widget-vbox{width:100%;min-width:0;flex:none}
  .snb-root .snb-tool-list,.snb-root .snb-tool-filter{width:100%!important;min-width:0!important}
}
</style>""")
STYLE = Html(DARK_STYLE + _STYLE.substitute({name.replace("-", "_"): colour(name) for name in LIGHT}))

SPINNER = Html('<span class="snb-spin" aria-label="working"></span>')

STATE_COLOURS: Mapping[str, str] = {
    "built in": "blue",
    "connected": "green",
    "connecting": "amber",
    "crashed": "red",
    "failed": "red",
    "down": "red",
    "stopped": "grey",
}
_DOT = {"green": "#1a7f37", "amber": "#bf8700", "red": "#cf222e", "grey": "#8c959f", "blue": "#0969da"}

# MCP tool annotation -> (badge text, colour, tooltip); shown only when the hint is true.
ANNOTATION_BADGES: tuple[tuple[str, str, str, str], ...] = (
    ("readOnlyHint", "read-only", "green", "does not modify its environment"),
    ("destructiveHint", "destructive", "red", "may delete or overwrite data"),
    ("idempotentHint", "idempotent", "blue", "calling it again with the same arguments has no further effect"),
    ("openWorldHint", "open-world", "purple", "talks to the world outside the server"),
)


def badge(text: str, colour: str = "grey", title: str = "") -> Html:
    tip = Html(' title="{}"').format(title) if title else ""
    return Html('<span class="snb-badge snb-b-{}"{}>{}</span>').format(colour, tip, text)


def state_badge(status: str) -> Html:
    colour = STATE_COLOURS.get(status, "grey")
    return Html('<span class="snb-badge snb-b-{} snb-state-{}"><span class="snb-dot" style="background:{}"></span>'
                '{}</span>').format(colour, status.replace(" ", "-"), _DOT[colour], status)


def fmt_ms(ms: float | None) -> str:
    """A duration for people: 840 ms, 1.25 s, 2 min 5 s."""
    if ms is None or (isinstance(ms, float) and math.isnan(ms)):
        return "-"
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.2f} s"
    return f"{int(ms // 60_000)} min {int(ms % 60_000 / 1000)} s"


def pre(text: str, *, error: bool = False, limit: int = 20_000) -> Html:
    """A scrollable monospace block; long text is cut with a note saying how much was left out."""
    note = Html()
    if len(text) > limit:
        note = Html('<div class="snb-muted">showing the first {:,} of {:,} characters</div>').format(limit, len(text))
        text = text[:limit]
    cls = "snb-pre snb-err" if error else "snb-pre"
    return Html('<div class="{}">{}</div>{}').format(cls, text, note)


def json_block(value: Any, *, error: bool = False) -> Html:
    return pre(json.dumps(value, indent=2, ensure_ascii=False, default=str), error=error)


def clean(value: Any) -> Any:
    """A DataFrame cell as plain Python: NaN/NaT/pd.NA become None, numpy scalars become Python ones."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    type_name = type(value).__name__
    if type_name in ("NaTType", "NAType"):
        return None
    if hasattr(value, "item") and type(value).__module__ == "numpy":
        return value.item()
    if hasattr(value, "to_pydatetime"):
        result: _dt.datetime = value.to_pydatetime()
        return result
    return value
