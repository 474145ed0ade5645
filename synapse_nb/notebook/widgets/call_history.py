"""CallHistory: the last recorded calls of one tool, from the history file, with a small latency chart."""

from __future__ import annotations

import datetime as _dt
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as w

from ..output.markup import Html, join
from ._html import clean, fmt_ms
from .facade import HistoryLike
from .trace import row_status

__all__ = ["CallHistory", "history_query", "latency_svg", "rows_html"]

logger = logging.getLogger("synapse_nb.notebook")

LIMIT = 20  # calls charted; the table shows the newest TABLE_ROWS of them
TABLE_ROWS = 8


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


_STATUS_HTML = {
    "ok": Html('<span class="snb-ok">ok</span>'),
    "error": Html('<span class="snb-err">error</span>'),
    "cancelled": Html('<span class="snb-muted">cancelled</span>'),
    "denied": Html('<span class="snb-muted">denied</span>'),
}


def history_query(server: str, tools: Sequence[str], limit: int = LIMIT) -> str:
    """The SQL for the last calls of one tool (recorded by its original or its qualified name)."""
    names = ", ".join(_sql_str(t) for t in dict.fromkeys(tools))
    return (
        "SELECT started_at, duration_ms, is_error, error, arguments, result_text, approval, session_id "
        f"FROM tool_calls WHERE server = {_sql_str(server)} AND tool IN ({names}) "
        f"ORDER BY started_at DESC LIMIT {int(limit)}"
    )


def latency_svg(rows: Sequence[dict[str, Any]], *, width: int = 320, height: int = 64) -> Html:
    """Bars of duration, oldest left, errors red; a plain inline SVG (no plotting library in widgets)."""
    calls = [r for r in reversed(rows) if isinstance(r.get("duration_ms"), int | float)]
    if not calls:
        return Html()
    peak = max(float(r["duration_ms"]) for r in calls) or 1.0
    slot = width / max(len(calls), 10)
    bars = []
    for i, r in enumerate(calls):
        ms = float(r["duration_ms"])
        h = max(2.0, (height - 14) * ms / peak)
        status = row_status(r)
        colour = {"ok": "#0969da", "error": "#cf222e"}.get(status, "#8c959f")  # cancelled, denied: grey
        tip = f"{fmt_ms(ms)}{'' if status == 'ok' else f' ({status})'}"
        bars.append(Html('<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}" rx="1"><title>{}'
                         "</title></rect>").format(i * slot + 1, height - h, max(slot - 2, 1), h, colour, tip))
    return Html(
        '<svg class="snb-latency" width="{}" height="{}" viewBox="0 0 {} {}" '
        'role="img" aria-label="latency of the last {} calls">'
        '<text x="0" y="10" font-size="10" fill="currentColor" opacity="0.7">max {}</text>{}</svg>'
    ).format(width, height, width, height, len(calls), fmt_ms(peak), join(bars))


def rows_html(rows: Sequence[dict[str, Any]]) -> Html:
    """The newest calls as a compact table: when, how long, ok/error, arguments."""
    lines = []
    for r in rows[:TABLE_ROWS]:
        at = r.get("started_at")
        when = at.strftime("%Y-%m-%d %H:%M:%S") if isinstance(at, _dt.datetime) else at
        detail = r.get("error") or r.get("result_text") or ""
        status = _STATUS_HTML[row_status(r)]
        args = _compact(r.get("arguments"))
        lines.append(Html('<tr><td>{}</td><td>{}</td><td title="{}">{}</td><td title="{}"><code>{}{}</code></td></tr>'
                          ).format(when, fmt_ms(r.get("duration_ms")), str(detail)[:500], status, args, args[:80],
                                   "…" if len(args) > 80 else ""))
    return Html(
        '<table class="snb-table"><tr><th>started (UTC)</th><th>duration</th><th>status</th><th>arguments</th></tr>'
        "{}</table>"
    ).format(join(lines))


def _arguments_of(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    return dict(value) if isinstance(value, Mapping) else None


def _compact(arguments: Any) -> str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return str(arguments)
    return json.dumps(arguments, ensure_ascii=False, default=str, separators=(", ", ": "))


class CallHistory(w.VBox):  # type: ignore[misc]
    """Recent calls of one tool; `load(history)` re-reads them (sync: a small indexed DuckDB query).

    Choosing a call in the list hands its arguments to `on_pick` (the tool panel refills its form)."""

    def __init__(self, server: str, tools: Sequence[str]) -> None:
        self.server = server
        self.tools = tuple(tools)
        self.view = w.HTML()
        self.rows: list[dict[str, Any]] = []
        self.on_pick: Callable[[Mapping[str, Any]], None] | None = None
        self.picker = w.Select(options=[], rows=4, layout=w.Layout(width="100%", display="none"))
        self.picker.add_class("snb-recent-picker")
        self.picker.observe(self._picked, "value")
        self._loading = False
        super().__init__([
            w.HTML('<div class="snb-muted"><b>Recent calls</b> · choose one to put its arguments in the form</div>'),
            self.picker, self.view,
        ])
        self.add_class("snb-history")

    def _picked(self, change: Mapping[str, Any]) -> None:
        index = change.get("new")
        if self._loading or not isinstance(index, int) or not 0 <= index < len(self.rows):
            return
        arguments = _arguments_of(self.rows[index].get("arguments"))
        if arguments is not None and self.on_pick is not None:
            self.on_pick(arguments)

    def _fill_picker(self) -> None:
        self._loading = True
        try:
            options = []
            for i, r in enumerate(self.rows[:TABLE_ROWS]):
                at = r.get("started_at")
                when = at.strftime("%H:%M:%S") if isinstance(at, _dt.datetime) else str(at or "")
                args = _compact(r.get("arguments"))
                options.append((f"{when} · {row_status(r)} · {args[:90]}", i))
            self.picker.options = options
            self.picker.value = None
            self.picker.layout.display = None if options else "none"
        finally:
            self._loading = False

    def load(self, history: HistoryLike | None) -> None:
        try:
            self._load(history)
        finally:
            self._fill_picker()

    def _load(self, history: HistoryLike | None) -> None:
        if history is None:
            self.rows = []
            self.view.value = '<span class="snb-muted">No history file is open, so past calls are not shown.</span>'
            return
        try:
            frame = history.sql(history_query(self.server, self.tools))
            self.rows = [{k: clean(v) for k, v in row.items()} for row in frame.to_dict("records")]
        except Exception as exc:  # a widget callback: show the problem, log it, keep the inspector alive
            logger.exception("reading the call history of %s failed", self.tools[0])
            self.rows = []
            self.view.value = Html('<span class="snb-err">Past calls cannot be read: {}</span>').format(exc)
            return
        if not self.rows:
            self.view.value = (
                '<span class="snb-muted">No recorded calls of this tool yet '
                "(calls from here, from %mcp call and by the agent are recorded).</span>"
            )
            return
        durations = [r["duration_ms"] for r in self.rows if isinstance(r.get("duration_ms"), int | float)]
        errors = sum(1 for r in self.rows if row_status(r) == "error")  # a cancel or a refusal is no error
        mean = sum(durations) / len(durations) if durations else None
        calls = "last call" if len(self.rows) == 1 else f"last {len(self.rows)} calls"
        summary = Html('<div class="snb-muted">{} · mean {} · {} error{}</div>').format(
            calls, fmt_ms(mean), errors, "s" if errors != 1 else "")
        self.view.value = summary + latency_svg(self.rows) + rows_html(self.rows)
