"""The session trace: a timeline of one session's LLM and tool calls, bars to scale, each expandable."""

from __future__ import annotations

import datetime as _dt
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as w

from ..output.markup import Html, join
from ._html import STYLE, badge, clean, fmt_ms, json_block, pre
from ._snapshot import Snapshot
from ._threads import call_on, current_loop

__all__ = [
    "SessionTrace", "Span", "TraceData", "TurnGroup", "build_timeline", "read_trace", "row_status", "session_trace",
    "trace_html", "trace_text",
]

logger = logging.getLogger("synapse_nb.notebook")

LLM_COLOUR, TOOL_COLOUR, ERROR_COLOUR = "#8250df", "#0969da", "#cf222e"
DENIED_COLOUR, CANCELLED_COLOUR = "#afb8c1", "#6e7781"


@dataclass(frozen=True, slots=True)
class Span:
    """One LLM call or tool call on the timeline."""

    kind: str  # "llm" | "tool"
    start: _dt.datetime
    duration_ms: float
    row: dict[str, Any]
    reply: tuple[dict[str, Any], ...] = ()  # assistant messages this LLM call produced

    @property
    def end(self) -> _dt.datetime:
        return self.start + _dt.timedelta(milliseconds=self.duration_ms)

    @property
    def status(self) -> str:
        """ok, error, denied or cancelled: only a real failure is an error (a refusal or a Stop is not)."""
        return row_status(self.row)

    @property
    def error(self) -> str | None:
        """The error text of a real failure (None for ok, denied and cancelled calls)."""
        if self.status != "error":
            return None
        err = self.row.get("error")
        if err:
            return str(err)
        return str(self.row.get("result_text") or "the tool returned an error")


def row_status(row: dict[str, Any]) -> str:
    """ok / error / denied / cancelled of a recorded LLM or tool call."""
    if row.get("approval") == "denied":
        return "denied"
    error = row.get("error")
    if error == "cancelled":
        return "cancelled"
    if error or row.get("is_error"):
        return "error"
    return "ok"


@dataclass(frozen=True, slots=True)
class TurnGroup:
    """The spans of one turn (or of the whole session when turns are not recorded)."""

    turn: dict[str, Any] | None
    spans: tuple[Span, ...] = field(default_factory=tuple)
    label: str = "Calls"  # the title of a group that is not a turn

    @property
    def start(self) -> _dt.datetime | None:
        starts = [s.start for s in self.spans]
        if self.turn and isinstance(self.turn.get("started_at"), _dt.datetime):
            starts.append(self.turn["started_at"])
        return min(starts) if starts else None

    @property
    def end(self) -> _dt.datetime | None:
        ends = [s.end for s in self.spans]
        turn = self.turn or {}
        started, ms = turn.get("started_at"), turn.get("duration_ms")
        if isinstance(started, _dt.datetime) and isinstance(ms, int | float):
            ends.append(started + _dt.timedelta(milliseconds=float(ms)))
        return max(ends) if ends else None


def _records(frame: Any) -> list[dict[str, Any]]:
    if frame is None:
        return []
    rows = frame.to_dict("records") if hasattr(frame, "to_dict") else list(frame)
    return [{k: clean(v) for k, v in dict(r).items()} for r in rows]


def _spans(rows: list[dict[str, Any]], kind: str) -> list[Span]:
    out = []
    for r in rows:
        start = r.get("started_at")
        if isinstance(start, _dt.datetime):
            ms = r.get("duration_ms")
            out.append(Span(kind, start, float(ms) if isinstance(ms, int | float) else 0.0, r))
    return out


def build_timeline(
    llm_rows: list[dict[str, Any]],
    tool_rows: list[dict[str, Any]],
    turn_rows: list[dict[str, Any]] | None = None,
    message_rows: list[dict[str, Any]] | None = None,
) -> list[TurnGroup]:
    """Spans in start order, grouped by turn; each LLM call gets the assistant messages written after it."""
    llm = sorted(_spans(llm_rows, "llm"), key=lambda s: s.start)
    replies = [
        m for m in message_rows or ()
        if m.get("role") == "assistant" and isinstance(m.get("created_at"), _dt.datetime)
    ]
    replies.sort(key=lambda m: (m["created_at"], m.get("seq") or 0))
    with_replies: list[Span] = []
    for i, span in enumerate(llm):
        nxt = llm[i + 1].start if i + 1 < len(llm) else None
        mine = tuple(m for m in replies if m["created_at"] >= span.start and (nxt is None or m["created_at"] < nxt))
        with_replies.append(Span(span.kind, span.start, span.duration_ms, span.row, mine))
    tools = _spans(tool_rows, "tool")
    # calls made by hand (%mcp call, the inspector) are not part of any turn: their own group
    manual = tuple(sorted((s for s in tools if s.row.get("approval") == "manual"), key=lambda s: s.start))
    manual_group = [TurnGroup(None, manual, label="Manual calls")] if manual else []
    by_agent = [s for s in tools if s.row.get("approval") != "manual"]
    spans = sorted([*with_replies, *by_agent], key=lambda s: (s.start, s.kind != "llm"))
    turns = sorted(
        [t for t in turn_rows or () if isinstance(t.get("started_at"), _dt.datetime)], key=lambda t: t["started_at"]
    )
    if not turns:
        return ([TurnGroup(None, tuple(spans))] if spans else []) + manual_group
    groups: list[list[Span]] = [[] for _ in turns]
    before: list[Span] = []
    for span in spans:
        index = max((i for i, t in enumerate(turns) if t["started_at"] <= span.start), default=None)
        (before if index is None else groups[index]).append(span)
    out = [TurnGroup(None, tuple(before))] if before else []
    return out + [TurnGroup(t, tuple(g)) for t, g in zip(turns, groups, strict=True)] + manual_group


@dataclass(frozen=True, slots=True)
class TraceData:
    """What the trace shows of one session, read once from the history."""

    session_id: str
    session: dict[str, Any] | None
    llm_rows: list[dict[str, Any]]
    tool_rows: list[dict[str, Any]]
    groups: list[TurnGroup]


def read_trace(history: Any, session_id: str) -> TraceData:
    """Read a session's calls, turns and messages from a History."""
    def read(name: str) -> list[dict[str, Any]]:
        method: Callable[..., Any] | None = getattr(history, name, None)
        return _records(method(session_id=session_id)) if method is not None else []

    sessions = read("sessions")
    llm_rows, tool_rows = read("llm_calls"), read("tool_calls")
    groups = build_timeline(llm_rows, tool_rows, read("turns"), read("messages"))
    return TraceData(session_id, sessions[0] if sessions else None, llm_rows, tool_rows, groups)


def trace_html(history: Any, session_id: str, data: TraceData | None = None) -> Html:
    """The whole trace as HTML (rows are <details>: click one to see its arguments and result)."""
    data = data or read_trace(history, session_id)
    head = _header(session_id, data.session, data.llm_rows, data.tool_rows)
    if not data.groups:
        return head + Html('<div class="snb-muted">No LLM or tool calls are recorded for this session yet.</div>')
    numbers = _turn_numbers(data.groups)
    return head + join(_group_html(g, n) for g, n in zip(data.groups, numbers, strict=True))


def _turn_numbers(groups: list[TurnGroup]) -> list[int]:
    """Turns are numbered 1, 2, ... (groups that are not turns, like manual calls, take no number)."""
    out, n = [], 0
    for group in groups:
        n += group.turn is not None
        out.append(n)
    return out


def trace_text(data: TraceData) -> str:
    """The trace as plain text: one line per turn and per call (what a saved notebook shows without HTML)."""
    name = (data.session or {}).get("name") or data.session_id
    errors = sum(1 for r in [*data.llm_rows, *data.tool_rows] if row_status(r) == "error")
    lines = [
        f"Session {name}: {len(data.llm_rows)} LLM calls, {len(data.tool_rows)} tool calls, "
        f"{errors} error{'s' if errors != 1 else ''}"
    ]
    turn_no = 0
    for group in data.groups:
        if group.turn is not None:
            turn_no += 1
            prompt = " ".join(str(group.turn.get("prompt") or "").split())
            lines.append(
                f"Turn {turn_no} · {group.turn.get('status') or '?'} · {fmt_ms(group.turn.get('duration_ms'))} · "
                f"{prompt[:80]}{'…' if len(prompt) > 80 else ''}"
            )
        else:
            lines.append(group.label)
        for span in group.spans:
            r = span.row
            if span.kind == "llm":
                label = f"LLM  {r.get('provider') or ''}:{r.get('model') or ''}"
            else:
                server = r.get("server")
                label = f"tool {str(server) + '.' if server else ''}{r.get('tool') or ''}"
            mark = "" if span.status == "ok" else f" [{span.status}]"
            lines.append(f"  {label}{mark} {fmt_ms(span.duration_ms)}")
    return "\n".join(lines)


def _header(
    session_id: str, session: dict[str, Any] | None, llm: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> Html:
    tokens_in = sum(int(r.get("input_tokens") or 0) for r in llm)
    tokens_out = sum(int(r.get("output_tokens") or 0) for r in llm)
    errors = sum(1 for r in [*llm, *tools] if row_status(r) == "error")
    llm_ms = sum(float(r.get("duration_ms") or 0) for r in llm)
    tool_ms = sum(float(r.get("duration_ms") or 0) for r in tools)
    name = (session or {}).get("name") or session_id
    model = (session or {}).get("model")
    facts = [
        f"{len(llm)} LLM call{'s' if len(llm) != 1 else ''} ({fmt_ms(llm_ms)})",
        f"{len(tools)} tool call{'s' if len(tools) != 1 else ''} ({fmt_ms(tool_ms)})",
        f"{tokens_in:,} → {tokens_out:,} tokens",
    ]
    err = Html(" {}").format(badge(f"{errors} error" + ("s" if errors != 1 else ""), "red")) if errors else ""
    legend = Html(
        '<span class="snb-muted"><span class="snb-dot" style="background:{}"></span>LLM '
        '<span class="snb-dot" style="background:{}"></span>tool '
        '<span class="snb-dot" style="background:{}"></span>error</span>'
    ).format(LLM_COLOUR, TOOL_COLOUR, ERROR_COLOUR)
    return Html(
        '<div class="snb-title">Session {}{}</div><div class="snb-muted">{}{} · <code>{}</code></div><div>{}</div>'
    ).format(name, err, model + " · " if model else "", " · ".join(facts), session_id, legend)


def _group_html(group: TurnGroup, n: int) -> Html:
    start, end = group.start, group.end
    span_ms = max((end - start).total_seconds() * 1000, 1.0) if start and end else 1.0
    turn = group.turn
    if turn is not None:
        status = str(turn.get("status") or "")
        colour = {"finished": "green", "failed": "red"}.get(status, "grey")  # cancelled is neutral
        prompt = str(turn.get("prompt") or "")
        title = Html(
            '<div class="snb-turn">Turn {} {} <span class="snb-muted">{}</span> <span title="{}">{}{}</span></div>'
        ).format(n, badge(status or "?", colour), fmt_ms(turn.get("duration_ms")), prompt, prompt[:120],
                 "…" if len(prompt) > 120 else "")
        if turn.get("error"):
            title += Html('<div class="snb-err">{}</div>').format(turn["error"])
    else:
        title = Html('<div class="snb-turn snb-group-{}">{}</div>').format(group.label.split()[0].lower(),
                                                                           group.label)
    rows = join(_span_html(s, start, span_ms) for s in group.spans) if start else ""
    return title + (rows or Html('<div class="snb-muted">no calls in this turn</div>'))


def _span_html(span: Span, origin: _dt.datetime, scale_ms: float) -> Html:
    left = max(0.0, (span.start - origin).total_seconds() * 1000 / scale_ms * 100)
    width = min(max(span.duration_ms / scale_ms * 100, 0.4), 100 - min(left, 99.6))
    colour = {"error": ERROR_COLOUR, "denied": DENIED_COLOUR, "cancelled": CANCELLED_COLOUR}.get(
        span.status, LLM_COLOUR if span.kind == "llm" else TOOL_COLOUR
    )
    r = span.row
    if span.kind == "llm":
        label = f"{r.get('provider') or ''}:{r.get('model') or ''}"
        tokens = f"{int(r.get('input_tokens') or 0):,}→{int(r.get('output_tokens') or 0):,} tok"
        body = _llm_body(span)
    else:
        server = r.get("server")
        label = f"{str(server) + '.' if server else ''}{r.get('tool') or ''}"
        tokens = "" if not r.get("approval") or r.get("approval") == "auto" else str(r.get("approval"))
        body = _tool_body(span)
    tip = f"{label} · {fmt_ms(span.duration_ms)}"
    bar = Html('<div class="snb-track"><div class="snb-bar" title="{}" style="left:{:.2f}%;width:{:.2f}%;'
               'background:{}"></div></div>').format(tip, left, width, colour)
    flags = {"error": ("error", "red"), "denied": ("denied", "grey"), "cancelled": ("cancelled", "grey")}
    flag = Html(" {}").format(badge(*flags[span.status])) if span.status in flags else ""
    kind_colour = LLM_COLOUR if span.kind == "llm" else TOOL_COLOUR
    kind = Html('<span class="snb-kind" style="background:{}">{}</span>').format(
        kind_colour, "LLM" if span.kind == "llm" else "tool")
    return Html(
        '<details class="snb-span snb-span-{}"><summary>'
        '<span class="snb-label" title="{}">{}<span class="snb-name">{}</span>{}</span>{}'
        '<span class="snb-num">{}{}</span></summary><div class="snb-body">{}</div></details>'
    ).format(span.kind, label, kind, label, flag, bar, fmt_ms(span.duration_ms), " · " + tokens if tokens else "",
             body)


def _llm_body(span: Span) -> Html:
    r = span.row
    facts = [
        f"started {span.start.strftime('%H:%M:%S.%f')[:-3]} UTC",
        f"time to first token {fmt_ms(r.get('ttft_ms'))}",
        f"{int(r.get('input_tokens') or 0):,} input / {int(r.get('output_tokens') or 0):,} output tokens",
        f"stop reason {r.get('stop_reason') or '-'}",
    ]
    out = Html('<div class="snb-muted">{}</div>').format(" · ".join(facts))
    if span.error:
        out += pre(span.error, error=True)
    for m in span.reply:
        if m.get("content"):
            out += Html('<div class="snb-muted">reply</div>') + pre(str(m["content"]))
        calls = _json_value(m.get("tool_calls"))
        if calls:
            out += Html('<div class="snb-muted">asked for tools</div>') + json_block(calls)
    return out


def _tool_body(span: Span) -> Html:
    r = span.row
    out = Html('<div class="snb-muted">started {} UTC · approval {} · id <code>{}</code></div>').format(
        span.start.strftime("%H:%M:%S.%f")[:-3], r.get("approval") or "-", r.get("tool_call_id") or "")
    out += Html('<div class="snb-muted">arguments</div>') + json_block(_json_value(r.get("arguments")) or {})
    if r.get("error"):
        out += Html('<div class="snb-muted">error</div>') + pre(str(r["error"]), error=True)
    result = _json_value(r.get("result"))
    structured = result.get("structured_content") if isinstance(result, dict) else None
    if r.get("result_text"):
        out += Html('<div class="snb-muted">result</div>') + pre(str(r["result_text"]), error=bool(r.get("is_error")))
    if structured:
        opened = "" if r.get("result_text") else " open"  # beside the text, one click away
        out += Html('<details{}><summary class="snb-muted">structured content</summary>{}</details>').format(
            opened, json_block(structured))
    return out


def _json_value(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


class SessionTrace(Snapshot, w.VBox):  # type: ignore[misc]
    """The trace widget; `reload()` re-reads the history (the session may still be running).

    Its MIME bundle carries a static HTML and text snapshot beside the widget view, so a saved
    notebook shows the timeline without a kernel."""

    def __init__(self, history: Any, session_id: str) -> None:
        self.history = history
        self.session_id = session_id
        self.text = ""
        self.view = w.HTML()
        self.reload_button = w.Button(description="Reload", icon="refresh", layout=w.Layout(width="auto"))
        self.loop = current_loop()  # the kernel's loop when built in a cell; clicks may come from a subshell
        self.reload_button.on_click(lambda _b: call_on(self.loop, self.reload))
        super().__init__([w.HTML(STYLE), self.view, self.reload_button], layout=w.Layout(width="100%"))
        self.add_class("snb-root")
        self.add_class("snb-trace")
        self.reload()

    def reload(self) -> None:
        try:
            data = read_trace(self.history, self.session_id)
            self.view.value = trace_html(self.history, self.session_id, data)
            self.text = trace_text(data)
        except Exception as exc:  # a widget callback: show the problem, log it
            logger.exception("reading the trace of session %s failed", self.session_id)
            self.view.value = Html('<span class="snb-err">The trace cannot be read: {}</span>').format(exc)
            self.text = f"The trace cannot be read: {exc}"

    def snapshot(self) -> tuple[Html, str]:
        # the view's value is Html this widget built (a trait may hand it back as a plain str)
        return Html('<div class="snb-root snb-trace">{}</div>').format(Html(self.view.value)), self.text


def session_trace(history: Any, session_id: str) -> SessionTrace:
    """A timeline of the session's LLM and tool calls from the history file."""
    return SessionTrace(history, session_id)
