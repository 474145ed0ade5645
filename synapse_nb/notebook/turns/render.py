"""A TurnView as a MIME bundle: Markdown with HTML tool-call blocks, and plain text for other frontends.

The Markdown carries a small stylesheet; every look that matters (border, tint, colours, scroll caps)
is also an inline style, so that a saved notebook rendered where `<style>` is stripped (GitHub,
nbviewer) still reads well. Toggles ("show all", "raw") are `<details>` elements: no script needed.
Icons are inline SVG or glyphs DejaVu Sans has; nothing needs an emoji font.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...tables import Table, meta_items, tables_of
from ...types import ToolResult
from ..output.live import Bundle
from ..output.markup import Html, join
from ..output.palette import DARK_STYLE
from ..output.palette import colour as _colour
from ..output.pin_hint import pin_hint, pin_hint_html
from .dollars import text_dollars
from .result import parse_json_answer
from .view import ToolCallView, TurnView, progress_fraction

__all__ = [
    "STYLE", "TURN_REST", "Rest", "capped_text", "markdown", "meta_html", "plain", "progress_html", "progress_text",
    "readable", "render", "tool_block",
]

RESULT_PREVIEW = 20_000  # characters of a result shown in the cell (all of it is in _synapse.tool_calls)
ARGUMENTS_PREVIEW = 4_000  # characters of a call's arguments shown in its block (all of them are recorded)
TABLE_ROWS = 200
CAP_LINES = 18  # longer results and answers sit in a scroll box with "show all"
ANSWER_CAP_CHARS = 6_000
IMAGE_PREVIEW_BYTES = 400_000
PRETTY_JSON_CHARS = 120  # one-line JSON longer than this is shown indented (and so capped by lines)


@dataclass(frozen=True, slots=True)
class Rest:
    """Where the user finds what a capped result leaves out: its whole text, and all of its rows."""

    text: str
    rows: str
    arguments: str = "the history's tool_calls.arguments"


TURN_REST = Rest("_synapse.tool_calls", "_synapse.tool_calls", "_synapse.tool_calls.arguments")

COLOURS: Mapping[str, str] = {
    "ok": _colour("ok"), "finished": _colour("ok"), "error": _colour("error"), "failed": _colour("error"),
    "denied": _colour("faint"), "cancelled": _colour("muted"),
    "running": _colour("info"), "streaming": _colour("info"),
    "budget_exceeded": _colour("warn"), "tool_failed": _colour("warn"),
}
RED, MUTED, LINE = _colour("error"), _colour("muted"), _colour("line")
# error text sits on a light red, not on the grey tint (red on grey inside the tinted box is 4.47:1)
ON_RED = f"color:{RED};background:{_colour('error-bg')}"
BOX = (
    "border:1px solid " + LINE + ";border-left:3px solid {accent};border-radius:6px;"
    "background:rgba(175,184,193,0.12);padding:6px 10px;margin:6px 0 14px 0"
)
PRE = (
    "white-space:pre-wrap;word-break:break-word;margin:2px 0 6px 0;padding:6px 8px;border-radius:4px;"
    "background:rgba(175,184,193,0.18);font-size:12px"
)
CAPPED = "max-height:22em;overflow:auto"
# Inline too: an untrusted JupyterLab right-aligns the table cells of rendered Markdown.
CELL = f"border:1px solid {LINE};padding:2px 6px;text-align:left;vertical-align:top"
LABEL = f"font-size:11px;font-weight:600;text-transform:uppercase;letter-spacing:.04em;color:{MUTED};margin-top:4px"

# One line (a Markdown HTML block must not contain a blank line).
STYLE = Html(
    DARK_STYLE + "<style>"
    ".snb-turn-tool>summary{cursor:pointer}"
    ".snb-all>summary,.snb-raw>summary{cursor:pointer;font-size:11px;display:inline-block;"
    f"color:{_colour('info')}}}"
    ".snb-all[open]+.snb-cap,.snb-all[open]+div .snb-cap{max-height:none!important}"
    ".snb-all[open]>summary .snb-more{display:none}"
    ".snb-all[open]>summary .snb-less{display:inline!important}"
    f".snb-spin{{display:inline-block;width:8px;height:8px;border:2px solid {_colour('info')};"
    "border-right-color:transparent;"
    "border-radius:50%;animation:snb-rot .8s linear infinite;vertical-align:-1px}"
    "@keyframes snb-rot{to{transform:rotate(360deg)}}"
    ".snb-tbl{border-collapse:collapse;font-size:12px}"
    f".snb-tbl th,.snb-tbl td{{border:1px solid {LINE};padding:2px 6px;text-align:left;vertical-align:top}}"
    "</style>"
)

# A wrench drawn with strokes (no icon font, no emoji).
WRENCH = Html(
    '<svg width="13" height="13" viewBox="0 0 16 16" aria-hidden="true" style="vertical-align:-2px">'
    '<path d="M10.5 1.5a4 4 0 0 0-3.8 5.3L1.8 11.7a1.4 1.4 0 0 0 2 2l4.9-4.9a4 4 0 0 0 5.3-3.8l-2.3 2.3'
    '-2.1-.6-.6-2.1 2.3-2.3a4 4 0 0 0-.8-.1z" fill="none" stroke="currentColor" stroke-width="1.4" '
    'stroke-linejoin="round"/></svg>'
)
SPINNER = Html('<span class="snb-spin" aria-label="running"></span>')


def render(view: TurnView) -> Bundle:
    """The MIME bundle of the view: Markdown (unless --format text) and plain text."""
    bundle: Bundle = {"text/plain": plain(view)}
    if view.format != "text":
        bundle["text/markdown"] = markdown(view)
    return bundle


# --- Markdown -------------------------------------------------------------------------------------


def markdown(view: TurnView) -> str:
    now = view.clock()
    blocks: list[str] = [STYLE if any(isinstance(p, ToolCallView) for p in view.parts) or _long(view) else DARK_STYLE]
    for part in view.parts[view.first:]:
        if isinstance(part, ToolCallView):
            blocks.append(tool_block(part, now))
        elif part.strip():
            text = text_dollars(part.strip("\n"))  # a `$` is money, not math (dollars.py)
            if view.status == "running":
                blocks.append(_close_fence(text))
            else:
                blocks.extend(_capped_answer(text))
    if view.format == "json" and view.status == "finished":
        blocks = [b for b in blocks if b.startswith(("<style>", '<div class="snb-turn-tool'))]
        blocks.append(_json_block(view.text))
    if view.segment:  # the head of a turn cut at a View: its parts only, the rest follows below the View
        return "\n\n".join(blocks)
    activity = view.activity
    if activity:
        blocks.append(Html('<div class="snb-activity" style="color:{}">{} {}</div>').format(MUTED, SPINNER,
                                                                                              _money(activity)))
    blocks.extend(Html("> {}").format(_money(note)) for note in view.notes)  # budget notes name amounts
    if view.shown_error:
        colour = COLOURS["budget_exceeded"] if view.status == "budget_exceeded" else RED
        error = Html(text_dollars(_one_line(view.shown_error)))
        blocks.append(Html('<pre style="{};color:{}">{}</pre>').format(PRE, colour, error))
    colour = COLOURS.get(view.tone, MUTED)
    if view.footer_elsewhere:
        return "\n\n".join(blocks)
    blocks.append(Html('<sub class="snb-footer snb-{}" style="color:{}">{}</sub>').format(view.tone, colour,
                                                                                        _money(view.footer)))
    return "\n\n".join(blocks)


def _long(view: TurnView) -> bool:
    return view.status != "running" and any(isinstance(p, str) and _too_long(p) for p in view.parts)


def _too_long(text: str) -> bool:
    return len(text) > ANSWER_CAP_CHARS or text.count("\n") > 60


def _capped_answer(text: str) -> list[str]:
    """A long answer stays Markdown, inside a scroll box with "show all" (blank lines keep it Markdown)."""
    if not _too_long(text):
        return [text]
    return [
        _show_all(text.count("\n") + 1, "lines"),
        Html('<div class="snb-cap snb-answer-cap" style="max-height:36em;overflow:auto">'),
        _close_fence(text),  # Markdown, not HTML (an open code fence would swallow the closing tag)
        Html("</div>"),
    ]


def _show_all(count: int, unit: str) -> Html:
    return Html(
        '<details class="snb-all"><summary><span class="snb-more">show all '
        '({:,} {})</span><span class="snb-less" style="display:none">show less</span></summary></details>'
    ).format(count, unit)


def tool_block(call: ToolCallView, now: float, *, opened: bool = False, rest: Rest = TURN_REST) -> Html:
    """One tool call: a one-line summary; expanded (`opened`, or while it reports progress), its arguments and
    result in a bordered, tinted box. `rest` says where the parts of a capped result are."""
    colour = COLOURS[call.status]
    icon = SPINNER if call.status in ("running", "streaming") else WRENCH
    where = Html(' <span style="color:{}">on {}</span>').format(MUTED, call.server) if call.server else ""
    held = Html(' <span class="snb-held-name" style="color:{}">→ <code>{}</code></span>').format(
        MUTED, call.held) if call.held else ""
    summary = Html(
        '{} <code>{}</code>{} '
        '<span class="snb-outcome snb-{}" style="color:{};font-weight:600;white-space:nowrap">{}</span>{}'
    ).format(icon, call.call_line, where, call.status, colour, call.outcome(now), held)
    body: list[Html] = [Html('<div style="{}">arguments</div>').format(LABEL)]
    if call.status == "streaming":
        streamed = _capped_arguments(call.streamed or " ", rest)
        body.append(Html('<pre style="{};{}">{}</pre>').format(PRE, CAPPED, _one_line(streamed)))
    else:
        arguments = _capped_arguments(_arguments_text(call.arguments) or "(none)", rest)
        body.append(Html('<pre style="{};{}">{}</pre>').format(PRE, CAPPED, _one_line(arguments)))
    if call.status == "running" and call.progress is not None:
        body.append(_progress(call))
    if call.error and call.status == "cancelled":
        body.append(Html('<div style="{}">cancelled</div>').format(LABEL))
    elif call.error:
        body.append(Html('<div style="{};color:{}">error</div><pre style="{};{}">{}</pre>').format(
            LABEL, RED, PRE, ON_RED, _one_line(call.error)))
    if call.status in ("error", "ok"):
        body.append(pin_hint_html(call.server, call.error or call.result_text))
    is_open = " open" if opened or (call.status == "running" and call.progress is not None) else ""
    # a figure (a chart drawn by kernel__run_python) shows under the closed block, not inside it: the answer
    # that speaks of "the chart above" finds it there
    figures = Html("") if is_open or call.result is None else _images_html(call.result)
    if call.result is not None and not call.error:
        body.append(_result_html(call, rest, images=not figures))
    below = Html('<div class="snb-tool-figures">{}</div>').format(figures) if figures else ""
    return Html(
        '<div class="snb-turn-tool snb-call-{}" style="margin:4px 0 14px 0">'
        '<details class="snb-turn-tool"{}><summary>{}</summary>'
        '<div class="snb-tool-body" style="{}">{}</div></details>{}</div>'
    ).format(call.status, Html(is_open), summary, BOX.format(accent=colour), join(body), below)


def _progress(call: ToolCallView) -> Html:
    assert call.progress is not None
    return progress_html(call.progress, call.total, call.progress_message)


def progress_html(progress: float, total: float | None, message: str | None) -> Html:
    """A running call's progress: a bar (indeterminate without a total), the amount and the server's message.
    Shared by the cell's tool blocks and the inspector's result area."""
    fraction = progress_fraction(progress, total)
    if fraction is not None:
        bar = Html('<progress value="{:.3f}" max="1" style="width:240px;vertical-align:middle"></progress>'
                   ).format(fraction)
        amount = f"{fraction * 100:.0f}%"
    else:
        bar = Html('<progress style="width:240px;vertical-align:middle"></progress>')
        amount = f"{progress:g}"
    shown = f" {message}" if message else ""
    return Html('<div class="snb-progress">{} <span style="color:{}">{}{}</span></div>').format(bar, MUTED, amount,
                                                                                                shown)


def progress_text(progress: float, total: float | None, message: str | None) -> str:
    """The plain-text form of `progress_html`: `[########------------] 40% step 2 of 5`."""
    fraction = progress_fraction(progress, total)
    amount = f"{fraction * 100:.0f}%" if fraction is not None else f"{progress:g}"
    filled = 0 if fraction is None else round(fraction * 20)
    bar = "" if fraction is None else "[" + "#" * filled + "-" * (20 - filled) + "] "
    return f"{bar}{amount}" + (f" {message}" if message else "")


def _result_html(call: ToolCallView, rest: Rest, *, images: bool = True) -> Html:
    assert call.result is not None
    label = "result (error)" if call.status == "error" else "result"
    colour = f";{ON_RED}" if call.status == "error" else ""
    out = [Html('<div style="{}{}">{}</div>').format(LABEL, ";color:" + RED if call.status == "error" else "", label)]
    if call.held:
        out.append(Html('<div class="snb-held" style="color:{}">held in the kernel as <code>{}</code> (all of it; the '
                        "model was given a summary and can query it with results__sql)</div>").format(MUTED, call.held))
    table = call.table if call.status == "ok" else None
    if table is not None and table.columns:
        out.append(_table_html(table, call.derived("readable", lambda r: readable(r.text)), rest))
    else:
        several = tables_of(call.result) if call.status == "ok" else []
        if len(several) > 1:
            names = ", ".join(t.path for t in several)
            out.append(Html('<div style="color:{};font-size:12px">{} tables: {} (a DataFrame of one: <code>{}</code>)'
                            "</div>").format(MUTED, len(several), names, _pick_one(rest)))
        out.append(call.derived(f"capped {colour} {rest}", lambda r: capped_text(r.text, rest, colour=colour)))
    if images:
        out.append(_images_html(call.result))
    return join(out)


def _images_html(result: ToolResult) -> Html:
    """The result's images small enough to show inline (the rest are in the history)."""
    return join(Html('<img src="data:{};base64,{}"/>').format(image.mime_type or "image/png", image.data)
                for image in result.images if image.data and len(image.data) <= IMAGE_PREVIEW_BYTES)


def _pick_one(rest: Rest) -> str:
    return "_synapse.tool_calls.result_df(i, table=NAME)" if rest is TURN_REST else ".df_of(NAME)"


def capped_text(text: str, rest: Rest = TURN_REST, *, colour: str = "") -> Html:
    """A text in a scroll box, "show all" above it when it is long: its first RESULT_PREVIEW characters
    (one-line JSON indented first, see `readable`), then a line saying how much more there is and where."""
    shown = readable(text)
    if len(shown) > RESULT_PREVIEW:
        more = len(shown) - RESULT_PREVIEW
        shown = shown[:RESULT_PREVIEW] + f"\n… {more:,} more characters in {rest.text}"
    lines = shown.count("\n") + 1
    box = Html('<pre class="snb-cap" style="{};{}{}">{}</pre>').format(PRE, CAPPED, colour,
                                                                      _one_line(shown or "(empty)"))
    return (_show_all(lines, "lines") + box) if lines > CAP_LINES else box


def readable(text: str) -> str:
    """`text`, or, when it is one long line of JSON, the same JSON indented (a 100 KB line is unreadable and
    would not cap by lines)."""
    stripped = text.strip()
    if len(stripped) <= PRETTY_JSON_CHARS or "\n" in stripped or stripped[:1] not in ("{", "["):
        return text
    try:
        value = json.loads(stripped)
    except ValueError:
        return text
    return json.dumps(value, indent=2, ensure_ascii=False)


def _first_line(text: str) -> str:
    """The first line that is not blank, found without splitting all of a (maybe 3 MB) result."""
    start = len(text) - len(text.lstrip())
    end = text.find("\n", start)
    return (text[start:] if end < 0 else text[start:end]).strip()


def _table_html(table: Table, raw: str, rest: Rest) -> Html:
    rows = table.rows[:TABLE_ROWS]
    head = join(Html('<th style="{}">{}</th>').format(CELL, c) for c in table.columns)
    body = join(
        Html("<tr>{}</tr>").format(join(Html('<td style="{}">{}</td>').format(CELL, _cell(v)) for v in row))
        for row in rows
    )
    more = len(table.rows) - len(rows)
    note = (Html('<div style="color:{};font-size:11px">{:,} more rows in {}</div>').format(MUTED, more, rest.rows)
            if more else "")
    count = f"{len(table.rows):,} row{'s' if len(table.rows) != 1 else ''} · {len(table.columns)} columns"
    capped = len(rows) > CAP_LINES
    grid = Html(
        '<div class="snb-table-box"><div class="snb-cap" style="{}">'
        '<table class="snb-tbl" style="border-collapse:collapse;font-size:12px"><thead><tr>{}</tr></thead>'
        "<tbody>{}</tbody></table></div>{}</div>"
    ).format(CAPPED if capped else "", head, body, note)
    raw_text = raw if len(raw) <= RESULT_PREVIEW else raw[:RESULT_PREVIEW] + f"\n… the rest in {rest.text}"
    toggle = Html('<details class="snb-raw"><summary>raw</summary><pre style="{};{}">{}</pre></details>').format(
        PRE, CAPPED, _one_line(raw_text))
    caption = Html('<span style="color:{};font-size:11px">{}</span> ').format(MUTED, count)
    show_all = _show_all(len(rows), "rows") if capped else ""
    return Html("{}<div>{}{}</div>{}{}").format(meta_html(table), caption, toggle, show_all, grid)


def meta_html(table: Table) -> Html:
    """The fields found beside a table (a warning, `truncated`, a cursor ...), one line each above it,
    warnings in the warning colour: what the server said about its rows is read before the rows."""
    lines = []
    for name, text, warns in meta_items(table.meta):
        lines.append(Html('<div class="snb-table-meta{}" style="font-size:12px;color:{}"><b>{}</b>: {}</div>').format(
            Html(" snb-table-warning") if warns else "", _colour("warn") if warns else MUTED, name, text))
    if table.path:
        lines.append(Html('<div class="snb-table-meta" style="font-size:11px;color:{}">the table of '
                          "<code>{}</code></div>").format(MUTED, table.path))
    return join(lines)


NESTED_CHARS = 60  # a nested value (an object or a list in a cell) longer than this as JSON is summarised


def _cell(value: Any) -> str:
    """A table cell: text as it is, a number or a short nested value as JSON, a longer nested value summarised
    (`{5 keys: name, rows, …}`, `[120 items]`): all of it is in the raw toggle and the value's `.text`, and a
    table of nested rows (scenario-modeler's) stays a table, not thousands of pixels of JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= NESTED_CHARS or not isinstance(value, dict | list):
        return text
    if isinstance(value, list):
        return f"[{len(value):,} item{'' if len(value) == 1 else 's'}]"
    keys = [str(k) for k in value]
    named = ", ".join(keys[:3]) + (", …" if len(keys) > 3 else "")
    return f"{{{len(keys):,} key{'' if len(keys) == 1 else 's'}: {named}}}"


def _arguments_text(arguments: Mapping[str, Any]) -> str:
    """`name: value` lines; strings as written (a SQL query keeps its lines), other values as JSON."""
    lines: list[str] = []
    for name, value in arguments.items():
        if isinstance(value, str):
            text = value
        else:
            indent = 2 if isinstance(value, dict | list) else None
            text = json.dumps(value, ensure_ascii=False, default=str, indent=indent)
        pad = "\n" + " " * (len(name) + 2)
        lines.append(f"{name}: {pad.join(text.splitlines()) if text else repr(text)}")
    return "\n".join(lines)


def _capped_arguments(text: str, rest: Rest) -> str:
    """A call's arguments cut to ARGUMENTS_PREVIEW characters, with how many more there are and where: a
    60,000-character argument (a whole file written by the model) is not printed whole into the notebook."""
    if len(text) <= ARGUMENTS_PREVIEW:
        return text
    return f"{text[:ARGUMENTS_PREVIEW]}\n… {len(text) - ARGUMENTS_PREVIEW:,} more characters in {rest.arguments}"


def _money(text: object) -> Html:
    """Escaped, each `$` as text (a cost, a budget), never a math delimiter (dollars.py)."""
    return Html(text_dollars(Html.escape(text)))


def _json_block(text: str) -> str:
    value, ok = parse_json_answer(text)
    if not ok:
        return text + "\n\n> the answer is not valid JSON"
    return "```json\n" + json.dumps(value, indent=2, ensure_ascii=False) + "\n```"


def _one_line(text: str) -> Html:
    """Escaped, with newlines as entities: the HTML block stays one line, so Markdown keeps it whole."""
    return Html.escape(text).replace("\n", Html("&#10;"))


def _close_fence(text: str) -> str:
    """A streamed answer cut inside a code block: close it, so the rest of the view renders normally."""
    fences = sum(1 for line in text.splitlines() if line.lstrip().startswith("```"))
    return text + "\n```" if fences % 2 else text


# --- plain text -------------------------------------------------------------------------------------


def plain(view: TurnView) -> str:
    now = view.clock()
    lines: list[str] = []
    for part in view.parts[view.first:]:
        if isinstance(part, ToolCallView):
            where = f" on {part.server}" if part.server else ""
            held = f" → held as {part.held}" if part.held else ""
            lines.append(f"[tool] {part.call_line}{where} {part.outcome(now)}{held}")
            if part.status == "running" and part.progress is not None:
                lines.append("       " + progress_text(part.progress, part.total, part.progress_message))
            detail = part.error or part.result_text
            if detail and part.status != "cancelled":
                first = _first_line(detail)
                lines.append("       → " + (first[:100] + "…" if len(first) > 100 else first))
                hint = pin_hint(part.server, detail)
                if hint:
                    lines.append("       " + hint)
        elif part.strip():
            lines.append(part.strip("\n"))
    if view.segment:
        return "\n".join(lines)
    activity = view.activity
    if activity:
        lines.append(activity)
    lines.extend(f"note: {note}" for note in view.notes)
    if view.shown_error:
        lines.append(f"error: {view.shown_error}")
    if not view.footer_elsewhere:
        lines.append(f"-- {view.footer}")
    return "\n".join(lines)

