"""Cards for what an MCP server asks of the user in a blocking cell: a form, a URL to open, a sampling request.

Same look as the tool approval card (approval_card.py): shown above the input box while the question
is open, then replaced by the decision so a saved notebook reads as what happened.
"""

from __future__ import annotations

from ...mcp_client.elicitation import ElicitationField, ElicitationForm, UrlElicitation
from ...mcp_client.sampling import SamplingRequest
from ..output.live import Bundle
from ..output.markup import Html, join
from ..output.palette import link_style
from .approval_card import _BOX, _PRE

__all__ = ["answered", "field_line", "field_prompt", "form_card", "sampling_card", "url_card"]

_ACCENT = "#0969da"
_MUTED = "color:#57606a;font-size:12px"


def field_line(f: ElicitationField) -> str:
    """One field described: name, type, required, default and choices (the card's list, the prompt's hint)."""
    parts = [f.kind.replace("_", "-")]
    if f.format:
        parts.append(f.format)
    if f.required:
        parts.append("required")
    if f.has_default:
        shown = ", ".join(f.default) if isinstance(f.default, list) else f.default
        parts.append(f"default {shown}")
    if f.minimum is not None or f.maximum is not None:
        low = "" if f.minimum is None else f"{f.minimum:g}"
        high = "" if f.maximum is None else f"{f.maximum:g}"
        parts.append(f"{low}..{high}")
    line = f"{f.title} ({'; '.join(parts)})"
    if f.choices:
        line += " choices: " + ", ".join(
            f"{i}={c.value}" if c.title == c.value else f"{i}={c.value} ({c.title})" for i, c in enumerate(f.choices, 1)
        )
    return line


def field_prompt(f: ElicitationField) -> str:
    """The input line of one field: its key, its title (when it says more), what to type, its format,
    required or optional, and the default Enter takes: `email "Your email" (string, email, required): `."""
    hint: str = "y/n" if f.kind == "boolean" else "number or value" if f.choices else f.kind
    if f.kind == "multi_choice":
        hint = "numbers or values, comma-separated"
    if f.minimum is not None or f.maximum is not None:
        hint += f" {'' if f.minimum is None else f'{f.minimum:g}'}..{'' if f.maximum is None else f'{f.maximum:g}'}"
    default = ""
    if f.has_default:
        default = f" [{', '.join(f.default) if isinstance(f.default, list) else f.default}]"
    title = f' "{f.title}"' if f.title != f.name else ""
    details = [hint, *([f.format] if f.format else []), "required" if f.required else "optional"]
    return f"{f.name}{title} ({', '.join(details)}){default}: "


def _card(title: Html, body: Html, text: str) -> Bundle:
    return {
        "text/plain": text,
        "text/html": Html('<div class="snb-elicit-card" style="{}"><div><b>{}</b></div>{}<div style="{}">Answer in the '
                          "box below.</div></div>").format(_BOX.format(accent=_ACCENT), title, body, _MUTED),
    }


def form_card(form: ElicitationForm) -> Bundle:
    """The server's message and every field with its type, default and choices."""
    items = join(
        Html("<li><code>{}</code> {}{}</li>").format(
            f.name, field_line(f),
            Html(' <span style="{}">{}</span>').format(_MUTED, f.description) if f.description else "")
        for f in form.fields
    )
    body = Html('<pre style="{}">{}</pre><ul style="margin:4px 0 0 0;padding-left:18px;font-size:12px">{}</ul>'
                '<div style="{}">a = fill in the form (Enter takes a default), d = decline, c = cancel</div>'
                ).format(_PRE, form.message, items, _MUTED)
    text = "\n".join([f"MCP server {form.server} asks for input:", f"  {form.message}",
                      *(f"  - {f.name}: {field_line(f)}" for f in form.fields),
                      "  a = fill in the form (Enter takes a default), d = decline, c = cancel"])
    return _card(Html("MCP server <code>{}</code> asks for input").format(form.server), body, text)


def url_card(request: UrlElicitation) -> Bundle:
    """The server's message and a link to open (http(s) only: any other scheme is shown as text, never
    made clickable); the user confirms once done there."""
    link = (Html('<a href="{}" target="_blank" rel="noopener noreferrer" style="{}">{}</a>').format(
                request.url, link_style(), request.url)
            if request.url.lower().startswith(("https://", "http://")) else Html("<code>{}</code>").format(request.url))
    body = Html('<pre style="{}">{}</pre><div>{}</div>'
                '<div style="{}">Open the link; press Enter here when done, n to decline, c to cancel.</div>'
                ).format(_PRE, request.message, link, _MUTED)
    text = (f"MCP server {request.server} asks you to open a URL:\n  {request.message}\n  {request.url}\n"
            "  press Enter when done, n to decline, c to cancel")
    return _card(Html("MCP server <code>{}</code> asks you to open a link").format(request.server), body, text)


def sampling_card(request: SamplingRequest, model: str) -> Bundle:
    """What the server wants the model to answer: its messages, system prompt and token limit."""
    convo = "\n".join(f"{m.role}: {m.content}" for m in request.messages)[:4000]
    system = f"system: {request.system_prompt}\n" if request.system_prompt else ""
    body = Html('<div style="{}">model {}, at most {} tokens</div><pre style="{}">{}</pre>'
                '<div style="{}">y = let the model answer, n = refuse</div>'
                ).format(_MUTED, model, request.max_tokens, _PRE, system + convo, _MUTED)
    text = (f"MCP server {request.server} asks model {model} to answer (max {request.max_tokens} tokens):\n"
            + "\n".join("  " + line for line in (system + convo).splitlines()) + "\n  y = answer, n = refuse")
    return _card(Html("MCP server <code>{}</code> asks to use the model").format(request.server), body, text)


def answered(what: str, server: str, outcome: str, *, ok: bool, detail: str = "") -> Bundle:
    """What a card becomes once answered: the decision (and a short detail), not an open question."""
    colour = "#1a7f37" if ok else "#6e7781"
    mark = "✓" if ok else "⊘"
    tail = f": {detail}" if detail else ""
    return {
        "text/plain": f"{mark} {what} from {server}: {outcome}{tail}",
        "text/html": Html('<div class="snb-elicit-card snb-answered" style="color:{}">{} {} from <code>{}</code>: {}{}'
                          "</div>").format(colour, mark, what, server, outcome,
                                           Html('<pre style="{}">{}</pre>').format(_PRE, detail) if detail else ""),
    }
