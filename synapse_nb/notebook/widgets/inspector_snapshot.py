"""The inspector as static HTML and text: servers, their tools and the recent calls, for saved notebooks."""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Sequence
from typing import Any

from ..output.markup import Html, join
from ._html import clean, fmt_ms
from .facade import HistoryLike, StateLike, listed_tools
from .kernel_group import KERNEL, BuiltinInfo, kernel_group
from .server_panel import card_html
from .tool_panel import annotation_badges, ui_badge, ui_mark

__all__ = ["RECENT", "inspector_snapshot", "recent_calls_query"]

logger = logging.getLogger("synapse_nb.notebook")

RECENT = 10


def recent_calls_query(servers: Sequence[str], limit: int = RECENT) -> str:
    names = ", ".join("'" + s.replace("'", "''") + "'" for s in servers) or "NULL"
    return (
        "SELECT server, tool, started_at, duration_ms, is_error, error, approval FROM tool_calls "
        f"WHERE server IN ({names}) ORDER BY started_at DESC LIMIT {int(limit)}"
    )


def inspector_snapshot(state: StateLike, only: str | None, history: HistoryLike | None) -> tuple[Html, str]:
    """(html, text) of what the inspector shows now."""
    hub = state.hub
    infos: list[Any] = [s for s in hub.servers if only is None or s.name == only]
    tools = listed_tools(hub)
    group = kernel_group(state) if only in (None, KERNEL) else None
    if group is not None:
        infos.append(group[0])
        tools += group[1]
    if not infos:
        message = "No MCP servers are connected (%mcp connect NAME -- COMMAND)."
        return Html('<div class="snb-root snb-inspector snb-card snb-muted">{}</div>').format(message), message
    html = [Html('<div class="snb-root snb-inspector"><div class="snb-title">MCP inspector</div>')]
    text = ["MCP inspector"]
    for info in infos:
        name = str(info.name)
        mine = [t for t in tools if t.server == name]
        html.append(Html('<div class="snb-card" style="margin:6px 0">{}').format(card_html(name, info)))
        state_word = info.note if isinstance(info, BuiltinInfo) else str(getattr(info, "state", "?"))
        line = f"{name}: {state_word}, {len(mine)} tools"
        if state_word in ("failed", "down"):
            line += f" — %mcp restart {name} to retry"
        text.append(line)
        if mine:
            rows = join(
                Html("<tr><td><code>{}</code> {}{}</td><td>{}</td></tr>").format(
                    t.original_name or t.name, annotation_badges(t.annotations), ui_badge(t),
                    _first_line(t.description))
                for t in mine
            )
            html.append(Html('<table class="snb-table"><tr><th>tool</th><th>description</th></tr>{}</table>'
                             ).format(rows))
            text.extend(f"  {t.original_name or t.name}{f' [{ui_mark(t)}]' if t.ui else ''}: "
                        f"{_first_line(t.description)}" for t in mine)
        html.append(Html("</div>"))
    calls = _recent(history, [str(i.name) for i in infos])
    if calls:
        html.append(Html('<div class="snb-muted" style="margin-top:6px"><b>Recent calls</b></div>'))
        rows = join(
            Html("<tr><td>{}</td><td><code>{}.{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>").format(
                _when(r.get("started_at")), r.get("server"), r.get("tool"), fmt_ms(r.get("duration_ms")),
                _status_html(r), r.get("approval") or "")
            for r in calls
        )
        html.append(Html(
            '<table class="snb-table"><tr><th>started (UTC)</th><th>tool</th><th>duration</th><th>status</th>'
            "<th>approval</th></tr>{}</table>"
        ).format(rows))
        text.append("recent calls:")
        text.extend(
            f"  {_when(r.get('started_at'))} {r.get('server')}.{r.get('tool')} {fmt_ms(r.get('duration_ms'))} "
            f"{_status(r)}"
            for r in calls
        )
    html.append(Html("</div>"))
    return join(html), "\n".join(text)


def _recent(history: HistoryLike | None, servers: list[str]) -> list[dict[str, Any]]:
    if history is None or not servers:
        return []
    try:
        frame = history.sql(recent_calls_query(servers))
        return [{k: clean(v) for k, v in row.items()} for row in frame.to_dict("records")]
    except Exception:  # a snapshot without recent calls is still a snapshot
        logger.exception("reading the recent calls for the inspector's snapshot failed")
        return []


def _status(row: dict[str, Any]) -> str:
    if row.get("approval") == "denied":
        return "denied"
    if row.get("error") == "cancelled":
        return "cancelled"
    return "error" if row.get("is_error") or row.get("error") else "ok"


def _status_html(row: dict[str, Any]) -> Html:
    status = _status(row)
    cls = {"ok": "snb-ok", "error": "snb-err"}.get(status, "snb-muted")
    return Html('<span class="{}">{}</span>').format(cls, status)


def _when(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if isinstance(value, _dt.datetime) else str(value or "")


def _first_line(text: str) -> str:
    line = (text or "").strip().split("\n", 1)[0]
    return line[:117] + "…" if len(line) > 120 else line
