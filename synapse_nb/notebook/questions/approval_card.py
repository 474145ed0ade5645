"""The approval question of a blocking cell as a card above the input box: tool, server, arguments, answers."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

from ...types import ToolSpec
from ..output.live import Bundle
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


def approval_card(spec: ToolSpec, arguments: Mapping[str, Any]) -> Bundle:
    """The card shown above the input box (HTML, and plain text for frontends without HTML)."""
    esc = html.escape
    destructive = spec.destructive
    accent = "#cf222e" if destructive else "#bf8700"
    badge = (
        f' <span class="snb-badge-destructive" style="{_BADGE};background:#ffebe9;color:#a40e26;'
        f'border:1px solid #ffcecb" title="the tool says it may delete or overwrite data">destructive</span>'
        if destructive else ""
    )
    server = f' <span style="color:{_MUTED}">on server <b>{esc(spec.server)}</b></span>' if spec.server else ""
    description = spec.description.strip().split("\n", 1)[0][:200]
    answers = "".join(
        f"<li><code>{key}</code> {word}: {esc(meaning)}</li>" for key, word, meaning in ANSWERS
    )
    card = (
        f'{DARK_STYLE}<div class="snb-approval-card" style="{_BOX.format(accent=accent)}">'
        f"<div><b>Approve this tool call?</b> <code>{esc(spec.name)}</code>{server}{badge}</div>"
        + (f'<div style="color:{_MUTED};font-size:12px">{esc(description)}</div>' if description else "")
        + f'<div style="font-size:11px;font-weight:600;color:{_MUTED};margin-top:4px">ARGUMENTS</div>'
        f'<pre style="{_PRE}">{esc(_arguments(arguments))}</pre>'
        f'<ul style="margin:4px 0 0 0;padding-left:18px;font-size:12px">{answers}</ul>'
        f"<div style=\"color:{_MUTED};font-size:12px\">Answer in the box below.</div></div>"
    )
    where = f" on server {spec.server}" if spec.server else ""
    text = "\n".join([
        f"Approve this tool call? {spec.name}{where}" + (" [destructive]" if destructive else ""),
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
        "text/html": f'{DARK_STYLE}<div class="snb-approval-card snb-answered" style="color:{colour}">{mark} '
                     f"<code>{html.escape(spec.name)}</code> {html.escape(word)}</div>",
    }
