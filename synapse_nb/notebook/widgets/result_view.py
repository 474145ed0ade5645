"""ResultView: one tool result shown as it deserves: text, pretty JSON, images, links, errors in red."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import ipywidgets as w

from ...tables import Table, table_of
from ...types import ToolResult
from ..output.markup import Html, join
from ..turns.render import meta_html, progress_html
from ._html import SPINNER, badge, fmt_ms, json_block, pre

__all__ = ["ResultView", "png_size", "result_html", "table_html"]

MIN_IMAGE_WIDTH = 128


def result_html(result: ToolResult, *, elapsed_ms: float | None = None, note: str | None = None) -> Html:
    """Everything but the images: a status line, the text blocks, the structured content, resource links.

    The status line's time is `elapsed_ms` (the whole call, as recorded) when given, else the server's own;
    `note` says what it includes (`incl. restarting the server`)."""
    duration = elapsed_ms if elapsed_ms is not None else result.duration_ms
    status = badge("error", "red") if result.is_error else badge("ok", "green")
    took = fmt_ms(duration) + (f", {note}" if note else "")
    parts = [Html('<div class="snb-result-status">{}<span class="snb-muted">{}</span></div>').format(status, took)]
    table = None if result.is_error else table_of(result)
    if table is not None and table.columns:
        parts.append(meta_html(table) + table_html(table))
        raw = join(_text(b.text, error=False) for b in result.content if b.text is not None)
        if result.structured_content is not None:
            raw += json_block(dict(result.structured_content))
        parts.append(Html('<details class="snb-raw"><summary class="snb-muted">raw</summary>{}</details>').format(raw))
        return join(parts)
    structured = dict(result.structured_content) if result.structured_content is not None else None
    shown_text = False
    for block in result.content:
        if block.kind in ("text", "resource") and block.text is not None:
            if structured is not None and _same_json(block.text, structured):
                continue  # FastMCP repeats structured content as text; show it once, pretty
            parts.append(_text(block.text, error=result.is_error))
            shown_text = True
        elif block.kind == "resource_link":
            parts.append(Html("<div>↗ {} <code>{}</code></div>").format(block.name or "", block.uri or ""))
        elif block.kind == "image":
            continue  # rendered as Image widgets
        else:
            parts.append(Html('<div class="snb-muted">[{} {}]</div>').format(block.kind, block.mime_type or ""))
    if structured is not None:
        # beside a text rendering, the structured form is one click away; alone, it is the result
        pretty = json_block(structured, error=result.is_error)
        opened = "" if shown_text else " open"
        parts.append(Html('<details class="snb-structured"{}><summary class="snb-muted">structured content</summary>'
                          "{}</details>").format(opened, pretty))
    if len(parts) == 1 and not result.images:
        parts.append(Html('<div class="snb-muted">(empty result)</div>'))
    return join(parts)


def table_html(table: Table, limit: int = 200) -> Html:
    """A tabular result as a table (the first `limit` rows), in a scroll box."""
    head = join(Html("<th>{}</th>").format(c) for c in table.columns)
    rows = join(
        Html("<tr>{}</tr>").format(join(Html("<td>{}</td>").format(_cell(v)) for v in row))
        for row in table.rows[:limit]
    )
    more = len(table.rows) - limit
    note = Html('<div class="snb-muted">{:,} more rows not shown</div>').format(more) if more > 0 else ""
    count = Html('<div class="snb-muted">{:,} rows · {} columns</div>').format(len(table.rows), len(table.columns))
    return Html('{}<div style="max-height:320px;overflow:auto"><table class="snb-table snb-result-table">'
                "<tr>{}</tr>{}</table></div>{}").format(count, head, rows, note)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _text(text: str, *, error: bool) -> Html:
    """Text that is a JSON document is shown indented; anything else as it came."""
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and len(stripped) < 200_000:
        try:
            return json_block(json.loads(stripped), error=error)
        except json.JSONDecodeError:
            pass
    return pre(text, error=error)


def _same_json(text: str, value: Any) -> bool:
    try:
        return bool(json.loads(text) == value)
    except (json.JSONDecodeError, TypeError):
        return False


def png_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG header, None for anything else."""
    if len(data) < 24 or not data.startswith(b"\x89PNG\r\n\x1a\n") or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


class ResultView(w.VBox):  # type: ignore[misc]
    """The result area under a tool's Call button; `show*` reassign its children."""

    children: tuple[Any, ...]

    def __init__(self) -> None:
        super().__init__([], layout=w.Layout(width="100%"))
        self.add_class("snb-result")

    def show_pending(self, label: str) -> None:
        self.children = (w.HTML(Html('<span class="snb-muted">{} {}</span>').format(SPINNER, label)),)

    def show_progress(self, label: str, progress: float, total: float | None, message: str | None) -> None:
        """A running call that reports progress: its label, then the bar and message a cell's tool block shows."""
        self.children = (w.HTML(Html('<span class="snb-muted">{} {}</span>{}').format(
            SPINNER, label, progress_html(progress, total, message))),)

    def show_cancelled(self, *, elapsed_ms: float | None = None, note: str | None = None) -> None:
        """A call the user stopped: neutral, not an error."""
        took = fmt_ms(elapsed_ms) + (f", {note}" if note else "")
        self.children = (w.HTML(Html('<div>{}<span class="snb-muted">after {}</span></div>').format(
            badge("cancelled", "grey"), took)),)

    def show_error(self, message: str, *, elapsed_ms: float | None = None, note: str | None = None) -> None:
        took = fmt_ms(elapsed_ms) + (f", {note}" if note else "")
        self.children = (w.HTML(Html('<div>{}<span class="snb-muted">{}</span></div>{}').format(
            badge("failed", "red"), took, pre(message, error=True))),)

    def show(self, result: ToolResult, *, elapsed_ms: float | None = None, note: str | None = None) -> None:
        children: list[w.Widget] = [w.HTML(result_html(result, elapsed_ms=elapsed_ms, note=note))]
        for block in result.images:
            try:
                data = base64.b64decode(block.data or "", validate=True)
            except (binascii.Error, ValueError):
                children.append(w.HTML(pre(f"[image {block.mime_type}: data is not valid base64]", error=True)))
                continue
            fmt = (block.mime_type or "image/png").split("/")[-1].split("+")[0]
            size = png_size(data)
            # natural size (not stretched to the panel's width), shrunk to fit, tiny ones enlarged to be seen
            layout = w.Layout(max_width="100%", align_self="flex-start")
            if size is not None and size[0] < MIN_IMAGE_WIDTH:
                layout.width = f"{MIN_IMAGE_WIDTH}px"
            image = w.Image(value=data, format=fmt, layout=layout)
            image.add_class("snb-image")
            caption = f"{block.mime_type or 'image'}" + (f" · {size[0]} x {size[1]} px" if size else "")
            children += [image, w.HTML(Html('<span class="snb-muted">{}</span>').format(caption))]
        self.children = tuple(children)

    def clear(self) -> None:
        self.children = ()
