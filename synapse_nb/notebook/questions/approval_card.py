"""The approval question of a blocking cell as a card above the input box: tool, server, arguments, answers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...types import ToolSpec
from ..output.live import Bundle
from ..output.markup import Html, join
from ..output.palette import DARK_STYLE
from ..output.palette import colour as _colour

__all__ = ["ANSWERS", "answered_card", "approval_card", "approval_prompt"]

ANSWERS = (
    ("y", "yes", "run this call once"),
    ("n", "no", "do not run it; the model is told it was denied"),
    ("a", "always", "run it, and allow this tool without asking for the rest of the session"),
)
_MUTED = _colour("muted")
_BOX = (
    "border:1px solid " + _colour("line") + ";border-left:3px solid {accent};border-radius:6px;padding:8px 12px;"
    "margin:6px 0"
)
_PRE = (
    "white-space:pre-wrap;word-break:break-word;margin:4px 0;padding:6px 8px;border-radius:4px;"
    "background:rgba(175,184,193,0.18);font-size:12px;max-height:16em;overflow:auto"
)
_BADGE = "display:inline-block;padding:0 7px;border-radius:10px;font-size:11px;font-weight:600;line-height:18px"


def approval_prompt(spec: ToolSpec) -> str:
    """The input line itself: short, the card above says the rest."""
    return f"allow {spec.name}? [y/n/a]: "


def _arguments(arguments: Mapping[str, Any]) -> str:
    code = arguments.get("code")
    if len(arguments) == 1 and isinstance(code, str):  # code to run reads as code, not as a JSON string
        return code
    return json.dumps(dict(arguments), ensure_ascii=False, default=str, indent=2)


def approval_card(spec: ToolSpec, arguments: Mapping[str, Any], *, buttons: bool = False) -> Bundle:
    """The card shown above the input box (HTML, and plain text for frontends without HTML); with `buttons`,
    the card of a background run, answered with the buttons under it."""
    destructive = spec.destructive
    accent = "#cf222e" if destructive else "#bf8700"
    # a tool that says nothing may change things (MCP's default): said apart from one that says destructive
    word, why = (("destructive", "the tool says it may delete or overwrite data") if spec.destructive_hint
                 else ("may change data", "the tool does not say whether it changes data; MCP reads that as "
                       "possibly destructive"))
    badge = Html(
        ' <span class="snb-badge-destructive" style="{};background:#ffebe9;color:#a40e26;'
        'border:1px solid #ffcecb" title="{}">{}</span>'
    ).format(_BADGE, why, word) if destructive else ""
    server = (Html(' <span style="color:{}">on server <b>{}</b></span>').format(_MUTED, spec.server) if spec.server
              else "")
    description = spec.description.strip().split("\n", 1)[0][:200]
    answers = join(
        Html("<li>{}: {}</li>").format(word.capitalize() if word != "no" else "Deny", meaning) if buttons
        else Html("<li><code>{}</code> {}: {}</li>").format(key, word, meaning) for key, word, meaning in ANSWERS
    )
    how = "Answer with the buttons below." if buttons else "Answer in the box below."
    described = (Html('<div style="color:{};font-size:12px">{}</div>').format(_MUTED, description) if description
                 else "")
    card = Html(
        '{}<div class="snb-approval-card" style="{}">'
        "<div><b>Approve this tool call?</b> <code>{}</code>{}{}</div>{}"
        '<div style="font-size:11px;font-weight:600;color:{};margin-top:4px">ARGUMENTS</div>'
        '<pre style="{}">{}</pre>'
        '<ul style="margin:4px 0 0 0;padding-left:18px;font-size:12px">{}</ul>'
        '<div style="color:{};font-size:12px">{}</div></div>'
    ).format(Html(DARK_STYLE), _BOX.format(accent=accent), spec.name, server, badge, described, _MUTED, _PRE,
             _arguments(arguments), answers, _MUTED, how)
    where = f" on server {spec.server}" if spec.server else ""
    text = "\n".join([
        f"Approve this tool call? {spec.name}{where}" + (f" [{word}]" if destructive else ""),
        *("  " + line for line in _arguments(arguments).splitlines()),
        *(f"  {key} = {word}: {meaning}" for key, word, meaning in ANSWERS),
    ])
    return {"text/plain": text, "text/html": card}


def answered_card(spec: ToolSpec, answer: str) -> Bundle:
    """What the card becomes once answered (a saved notebook shows the decision, not an open question)."""
    word = {"yes": "approved", "always": "approved for the session", "no": "denied"}.get(answer, answer)
    colour = _colour("ok") if answer in ("yes", "always") else _colour("faint")
    mark = "✓" if answer in ("yes", "always") else "⊘"
    return {
        "text/plain": f"{mark} {spec.name}: {word}",
        "text/html": Html('{}<div class="snb-approval-card snb-answered" style="color:{}">{} <code>{}</code> {}</div>'
                          ).format(Html(DARK_STYLE), colour, mark, spec.name, word),
    }
