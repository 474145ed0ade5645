"""How `%mcp call` and `%mcp read` show what a server sent: the running call (its time and the server's progress),
the result as a %%synapse tool block shows one (a table with raw, capped text, images), and a resource as what
it is (an MCP Apps View as one line, a blob by MIME type and size), never megabytes of it in the notebook."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ...mcp_client.task_watch import status_text
from ...tables import meta_items, table_of, tables_of
from ...task_state import TaskState
from ...types import ContentBlock, ToolResult
from ..turns.render import (
    IMAGE_PREVIEW_BYTES,
    STYLE,
    Rest,
    capped_text,
    progress_html,
    progress_text,
    readable,
    tool_block,
)
from ..turns.view import ToolCallView, duration, size_text
from .live import Bundle
from .markup import Html, join
from .palette import colour
from .pin_hint import pin_hint, pin_hint_html

__all__ = [
    "APP_MIME_TYPE", "CALL_REST", "CallProgress", "ResourcePart", "call_bundle", "call_text", "capped_plain",
    "read_bundle", "read_text", "resource_part", "resource_parts", "task_line",
]

CALL_REST = Rest(".text of this cell's value (_.text)", ".df of this cell's value (_.df)",
                 ".arguments of this cell's value (_.arguments)")
READ_REST = Rest(".text of this cell's value (_.text)", ".text of this cell's value (_.text)")
PLAIN_LINES = 30  # the text/plain of a result (what a terminal prints, and the notebook keeps) stops there
PLAIN_CHARS = 3_000
APP_MIME_TYPE = "text/html;profile=mcp-app"
TEXT_TYPES = frozenset({
    "application/json", "application/xml", "application/javascript", "application/ecmascript", "application/yaml",
    "application/x-yaml", "application/toml", "application/sql", "application/x-sh", "application/graphql",
    "application/csv", "application/x-ndjson", "application/ld+json",
})
MUTED = f"color:{colour('muted')}"  # the palette's muted text, light and dark


# --- a running call ---------------------------------------------------------------------------------------


@dataclass
class CallProgress:
    """A running `%mcp call` as its live output shows it: `calling demo.sleep … 3.2 s`, and once the server
    reports progress, the bar, percentage and message of the %%synapse tool block (and the inspector); for a call
    the server runs as an MCP task, the task's id, status and message, and its question while it asks one."""

    name: str
    progress: float | None = None
    total: float | None = None
    message: str | None = None
    task: TaskState | None = None

    def report(self, progress: float, total: float | None, message: str | None) -> None:
        """The hub's `on_progress`: keep the last report (one without a message keeps the last message)."""
        self.progress, self.total = progress, total
        self.message = message or self.message

    def bundle(self, elapsed: str) -> Bundle:
        line = f"calling {self.name} … {elapsed}"
        if self.task is not None:
            line = f"{line}\n{task_line(self.task)}"
        if self.progress is None:
            return {"text/plain": line, "text/markdown": Html("*{}*").format(line)}
        return {
            "text/plain": f"{line}\n{progress_text(self.progress, self.total, self.message)}",
            "text/markdown": Html("*{}*\n\n{}").format(line, progress_html(self.progress, self.total, self.message)),
        }


def task_line(task: TaskState) -> str:
    """`task 3f2a… · working · Analyzing content...`, and what it asks while it waits for input."""
    return status_text(task)


# --- a call's result --------------------------------------------------------------------------------------


def call_bundle(
    name: str, arguments: Mapping[str, Any], result: ToolResult, *, held: str | None = None, opened: bool = True,
) -> Bundle:
    """What `%mcp call` shows for its result: the %%synapse tool block of the call, `opened` (closed under an MCP
    Apps View, which is the result then: a table with a raw toggle, or the text capped with "show all"; images;
    structured content beside a text), and a plain text capped too. The rest is in the value's `.text` / `.df`."""
    view = ToolCallView("", name, arguments, approval="manual", status="error" if result.is_error else "ok",
                        result=result, duration_ms=result.duration_ms, held=held)
    parts = [STYLE, tool_block(view, 0.0, opened=opened, rest=CALL_REST), pin_hint_html(_server_of(name), result.text)]
    structured = _structured_beside(result)
    if structured is not None:
        parts.append(Html('<details class="snb-structured"><summary style="{}">structured content</summary>{}'
                          "</details>").format(MUTED, capped_text(structured, CALL_REST)))
    bundle: Bundle = {"text/plain": call_text(name, result, held=held), "text/html": join(parts)}
    images = [i for i in result.images if len(i.data or "") <= IMAGE_PREVIEW_BYTES]
    if len(images) == 1 and len(result.images) == 1:  # frontends without HTML show the image itself
        bundle[images[0].mime_type or "image/png"] = images[0].data
    return bundle


def call_text(name: str, result: ToolResult, *, held: str | None = None) -> str:
    """`demo.query → ok (6.0 s)`, the name the kernel holds it under, a table's size, then the result's text,
    capped."""
    head = f"{name} → {'error' if result.is_error else 'ok'} ({duration(result.duration_ms)})"
    if held:
        head += f" · held as {held}"
    table = None if result.is_error else table_of(result)
    lines = [head]
    if table is not None and table.columns:
        lines.extend(f"{name}: {text}" for name, text, _ in meta_items(table.meta))
        rows = len(table.rows)
        where = f" of {table.path}" if table.path else ""
        lines.append(f"{rows:,} row{'' if rows == 1 else 's'} · {len(table.columns)} columns{where} (a DataFrame: .df"
                     + (", the fields above: .meta)" if table.meta else ")"))
    elif not result.is_error:
        several = tables_of(result)
        if len(several) > 1:
            names = ", ".join(repr(t.path) for t in several)
            lines.append(f"{len(several)} tables: {names} (a DataFrame of one: .df_of(NAME))")
    if result.text:
        lines.append(capped_plain(result.text, CALL_REST))
    hint = pin_hint(_server_of(name), result.text)
    if hint:
        lines.append(hint)
    return "\n".join(lines)


def _server_of(name: str) -> str:
    """The server of `SERVER.TOOL`."""
    return name.partition(".")[0]


def capped_plain(text: str, rest: Rest, *, lines: int = PLAIN_LINES, chars: int = PLAIN_CHARS) -> str:
    """`text` (one-line JSON indented) cut to `lines` lines and `chars` characters, with a last line saying how
    much more there is and where."""
    shown = readable(text)
    # The cut lies within this window (each line kept ends in at most two characters): a 10 MB text is not split.
    window = shown[: chars + 2 * (lines + 1)]
    cut = "\n".join(window.splitlines()[:lines])[:chars]
    if len(cut) >= len(shown):
        return shown
    more = shown[len(cut):]
    return f"{cut}\n… {more.count(chr(10)) + 1:,} more lines ({len(more):,} characters) in {rest.text}"


def _structured_beside(result: ToolResult) -> str | None:
    """The structured content as indented JSON, when the block does not show it already (as its table, or as a
    text that is the same JSON, as FastMCP sends it)."""
    if result.structured_content is None or not result.content:
        return None
    structured = dict(result.structured_content)
    if not result.is_error and table_of(result) is not None:
        return None
    try:
        if json.loads(result.text) == structured:
            return None
    except ValueError:
        pass
    return json.dumps(structured, indent=2, ensure_ascii=False, default=str)


# --- a resource -------------------------------------------------------------------------------------------


Kind = Literal["app", "text", "image", "binary"]


@dataclass(frozen=True)
class ResourcePart:
    """One content item of a read resource, sorted by what it is: an MCP Apps View, text (a blob of a text
    type decoded), an image, or other bytes; `size` in bytes (of the text as UTF-8, or of the decoded blob)."""

    kind: Kind
    uri: str
    mime_type: str
    size: int
    text: str | None = None
    data: bytes | None = None
    encoded: str | None = None  # an image's base64, as the server sent it


def resource_part(block: ContentBlock, uri: str) -> ResourcePart:
    """Sort one content item of `resources/read` (see ResourcePart)."""
    mime = block.mime_type or ""
    where = block.uri or uri
    if block.text is not None:
        kind: Kind = "app" if _is_app(mime) else "text"
        return ResourcePart(kind, where, mime or "text/plain", len(block.text.encode("utf-8")), text=block.text)
    try:
        data = base64.b64decode(block.data or "", validate=True)
    except (binascii.Error, ValueError):
        return ResourcePart("binary", where, mime or "application/octet-stream", 0)
    if _is_app(mime) or _is_text(mime):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return ResourcePart("binary", where, mime, len(data), data=data)
        return ResourcePart("app" if _is_app(mime) else "text", where, mime, len(data), text=text, data=data)
    if mime.startswith("image/"):
        return ResourcePart("image", where, mime, len(data), data=data, encoded=block.data)
    return ResourcePart("binary", where, mime or "application/octet-stream", len(data), data=data)


def resource_parts(contents: Sequence[ContentBlock], uri: str) -> list[ResourcePart]:
    return [resource_part(block, uri) for block in contents]


def _is_app(mime: str) -> bool:
    return mime.replace(" ", "").lower() == APP_MIME_TYPE


def _is_text(mime: str) -> bool:
    base = mime.split(";", 1)[0].strip().lower()
    return base.startswith("text/") or base in TEXT_TYPES or base.endswith(("+json", "+xml"))


def _view_use(server: str, used_by: Sequence[str]) -> tuple[str, str | None]:
    """Which tool shows a View, and the command that shows it (None when no tool of the server names it)."""
    if not used_by:
        return f"no tool of {server} names it as its View", None
    return f"{', '.join(used_by)} shows it", f"%mcp call {used_by[0]}"


def read_bundle(server: str, uri: str, contents: Sequence[ContentBlock], used_by: Sequence[str] = ()) -> Bundle:
    """What `%mcp read` shows: per content item, its URI, MIME type and size, then what it is: an MCP Apps
    View as one line (which tool shows it, and how), text capped with "show all", an image, other bytes by
    size alone. The whole text is in the value's `.text`, the bytes of blobs in `.blobs`."""
    parts = [STYLE, Html("<div><code>{}</code> <code>{}</code></div>").format(server, uri)]
    for part in resource_parts(contents, uri):
        facts = f"{part.mime_type} · {size_text(part.size)}"
        other = Html("<code>{}</code> · ").format(part.uri) if part.uri != uri else ""
        parts.append(Html('<div style="{};font-size:12px">{}{}</div>').format(MUTED, other, facts))
        if part.kind == "app":
            use, command = _view_use(server, used_by)
            how = Html(": <code>{}</code>").format(command) if command else ""
            parts.append(Html('<div class="snb-app-resource">an MCP App View ({} of HTML, in .text): {}{}</div>'
                              ).format(size_text(part.size), use, how))
        elif part.kind == "text":
            parts.append(capped_text(part.text or "", READ_REST))
        elif part.kind == "image" and part.encoded and len(part.encoded) <= IMAGE_PREVIEW_BYTES:
            parts.append(Html('<img src="data:{};base64,{}"/>').format(part.mime_type, part.encoded))
        else:
            parts.append(Html('<div style="{}">{} data, not shown (its bytes: .blobs)</div>').format(MUTED, part.kind))
    return {"text/plain": read_text(server, uri, contents, used_by), "text/html": join(parts)}


def read_text(server: str, uri: str, contents: Sequence[ContentBlock], used_by: Sequence[str] = ()) -> str:
    """The plain-text form of `read_bundle`."""
    lines = [f"{server} {uri}"]
    for part in resource_parts(contents, uri):
        where = f"{part.uri} · " if part.uri != uri else ""
        lines.append(f"{where}{part.mime_type} · {size_text(part.size)}")
        if part.kind == "app":
            use, command = _view_use(server, used_by)
            lines.append(f"an MCP App View ({size_text(part.size)} of HTML, in .text): {use}"
                         + (f": {command}" if command else ""))
        elif part.kind == "text":
            lines.append(capped_plain(part.text or "", READ_REST))
        else:
            lines.append(f"{part.kind} data, not shown (its bytes: .blobs)")
    return "\n".join(lines)
