"""`%mcp tasks`: the MCP tasks this history knows (across kernel restarts), `%mcp tasks cancel ID`,
`%mcp tasks result ID`; and, when a server connects, following its tasks still open since an earlier kernel,
so their results land in the history (under the tool call that started them) when they finish."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ...errors import SynapseError, TaskDetachedError, TaskError
from ...events import ToolCallFinished, utcnow
from ...mcp_client.task_watch import TaskWatch
from ...task_state import TaskState
from ...types import ToolCall, ToolResult
from ..turns.view import duration
from ..usage import usage_error
from .mcp import CallOutput, DetachedTask

if TYPE_CHECKING:
    import pandas as pd

    from ...history.reader import History
    from ...mcp_client.hub import McpHub
    from ..kernel.port import KernelPort
    from ..kernel.runner import Runner
    from ..recording.router import EventRouter

HistoryOf = Callable[[], "History | None"]
"""The history reader of the moment (None when the history cannot be read)."""

__all__ = [
    "TASK_COLUMNS", "DetachedTask", "cancel_async", "follow_open_tasks", "list_tasks", "parse", "result_async",
    "resume_open",
]

logger = logging.getLogger("synapse_nb.notebook")

TASK_COLUMNS = ("task_id", "server", "tool", "status", "message", "age", "cell", "tool_call_id")
_FOLLOWER = "synapse-task-"
"""The name prefix of the background task following one MCP task (one per task id)."""


def parse(words: list[str]) -> tuple[str, str | None]:
    """`%mcp tasks [--all | cancel ID | result ID]` -> (action, task id); action "all" lists every notebook's."""
    if not words:
        return "list", None
    if words == ["--all"]:
        return "all", None
    if words[0] in ("cancel", "result") and len(words) == 2:
        return words[0], words[1]
    raise UsageError("%mcp tasks: list them with %mcp tasks [--all], or %mcp tasks cancel ID / %mcp tasks result ID")


def list_tasks(history: HistoryOf, port: KernelPort, *, every: bool = False) -> pd.DataFrame:
    """`%mcp tasks`: this notebook's tasks of the history (`every`: all notebooks'; a kernel that does not know
    its notebook lists all), open ones first, with their age and cell."""
    from ..output.listing import Listing

    frame = _tasks(history)
    now = utcnow()
    notebook = None if every else port.notebook_name()
    rows = []
    for r in frame.to_dict("records") if frame is not None else []:
        if notebook and not str(r["cell"] or "").startswith(f"{notebook} "):
            continue
        created = r.get("created_at")
        age = duration((now - created).total_seconds() * 1000) if created is not None and created == created else ""
        rows.append({"task_id": r["task_id"], "server": r["server"], "tool": r["tool"] or "", "status": r["status"],
                     "message": r["status_message"] or "", "age": age, "cell": r["cell"] or "",
                     "tool_call_id": r["tool_call_id"] or "", "_open": r["status"] not in _TERMINAL})
    rows.sort(key=lambda row: not row["_open"])  # stable: open first, each group in creation order
    for row in rows:
        del row["_open"]
    return Listing(rows, columns=list(TASK_COLUMNS))


async def cancel_async(hub: McpHub, history: HistoryOf, task_id: str) -> str:
    """`%mcp tasks cancel ID`: ask the task's server to cancel it."""
    row = _row(history, task_id)
    try:
        await hub.cancel_task(row["server"], task_id)
    except SynapseError as exc:
        raise usage_error(exc) from None
    return f"asked {row['server']} to cancel task {task_id} ({row['tool'] or 'tool unknown'})"


async def result_async(
    hub: McpHub, history: HistoryOf, port: KernelPort, router: EventRouter, task_id: str,
) -> Any:
    """`%mcp tasks result ID`: wait for the task (its status shows meanwhile) and show its result as `%mcp call`
    does; recorded under the tool call that started it, unless that call's row exists already."""
    row = _row(history, task_id)
    try:
        result = await _follow(_Following(hub, history, port, router), row, show=True)
    except SynapseError as exc:
        raise usage_error(exc) from None
    return CallOutput(f"{row['server']}.{row['tool'] or '?'}", _arguments(row), result)


def resume_open(
    hub: McpHub, history: HistoryOf, port: KernelPort, router: EventRouter, runner: Runner, server: str,
) -> list[str]:
    """Follow, in the background, the tasks of `server` the history holds as still open (from an earlier kernel);
    returns their ids. Each one's result is recorded when it ends; one the server forgot is recorded as lost."""
    frame = _tasks(history, server=server, open_only=True)
    if frame is None or frame.empty:
        return []
    following = {t.get_name() for t in runner.tasks}
    parts = _Following(hub, history, port, router)
    started = []
    for row in frame.to_dict("records"):
        name = _FOLLOWER + str(row["task_id"])
        if name not in following:
            runner.spawn(_follow_quietly(parts, row), name=name)
            started.append(str(row["task_id"]))
    return started


# --- following one task ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Following:
    """What following a task uses: the hub asks its server, the history says whether it was recorded, the port
    shows it, the router records it."""

    hub: McpHub
    history: HistoryOf
    port: KernelPort
    router: EventRouter


async def _follow_quietly(parts: _Following, row: dict[str, Any]) -> None:
    try:
        result = await _follow(parts, row, show=False)
    except SynapseError as exc:
        parts.port.publish({"text/plain": f"MCP task {row['task_id']} of {row['server']}: {exc}"}, None, False)
        return
    head = f"MCP task {row['task_id']} of {row['server']}.{row['tool'] or '?'} finished"
    parts.port.publish({"text/plain": f"{head} ({duration(result.duration_ms)}): {result.text[:200]}"}, None, False)


async def _follow(parts: _Following, row: dict[str, Any], *, show: bool) -> ToolResult:
    """Wait for one task's result and record it (once) under the tool call that started it."""
    from ..output.calls import CallProgress
    from ..output.live import LiveOutput
    from ..turns.display import ticking

    server, task_id, tool = str(row["server"]), str(row["task_id"]), str(row["tool"] or "")
    progress = CallProgress(f"{server}.{tool or '?'} (task {task_id})")
    result: ToolResult | None = None
    error: str | None = None
    try:
        port = parts.port
        if show:
            out = LiveOutput(live=port.live, publish=port.publish)
            async with ticking(out, progress.bundle, asked=lambda: port.asking_since, show_after=0.0) as refresh:
                watch = TaskWatch(lambda s: _shown(progress, s, refresh))
                result = await parts.hub.follow_task(server, task_id, tool=tool, task=watch)
        else:
            result = await parts.hub.follow_task(server, task_id, tool=tool)
        return result
    except TaskDetachedError:
        raise
    except TaskError as exc:
        error = str(exc)
        raise
    finally:
        if (result is not None or error is not None) and not _recorded(parts.history, row):
            _record(parts.router, row, result, error)


def _shown(progress: Any, state: TaskState, refresh: Any) -> None:
    progress.task = state
    refresh()


def _record(router: EventRouter, row: dict[str, Any], result: ToolResult | None, error: str | None) -> None:
    server, tool = str(row["server"]), str(row["tool"] or "")
    call = ToolCall(str(row["tool_call_id"] or uuid.uuid4().hex), f"{server}__{tool}", _arguments(row))
    created = row.get("created_at")
    started_at = created if created is not None and created == created else utcnow()
    took = result.duration_ms if result is not None else (row.get("duration_ms") or 0.0)
    router.record(ToolCallFinished(
        session_id=str(row["session_id"] or ""), call=call, server=server, tool=tool, approval="manual",
        started_at=started_at.to_pydatetime() if hasattr(started_at, "to_pydatetime") else started_at,
        duration_ms=float(took), result=result, error=error, origin="manual"))


def _recorded(history_of: HistoryOf, row: dict[str, Any]) -> bool:
    history = history_of()
    if history is None or not row.get("tool_call_id"):
        return False
    return bool(history.rows("SELECT 1 FROM tool_calls WHERE tool_call_id = ? LIMIT 1", [row["tool_call_id"]],
                             relations=("tool_calls",)))


# --- the history's tasks ---------------------------------------------------------------------------------

_TERMINAL = ("completed", "failed", "cancelled")


def _tasks(history_of: HistoryOf, *, server: str | None = None, open_only: bool = False) -> pd.DataFrame | None:
    history = history_of()
    if history is None:
        return None
    return history.tasks(server, open_only=open_only)


def _row(history: HistoryOf, task_id: str) -> dict[str, Any]:
    frame = _tasks(history)
    rows = [] if frame is None else [r for r in frame.to_dict("records") if r["task_id"] == task_id]
    if not rows:
        raise UsageError(f"%mcp tasks: no task {task_id!r} in the history; %mcp tasks lists them")
    row: dict[str, Any] = rows[0]
    return row


def _arguments(row: dict[str, Any]) -> dict[str, Any]:
    raw = row.get("arguments")
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}
    return dict(raw) if isinstance(raw, dict) else {}


def follow_open_tasks(
    hub: McpHub, history: HistoryOf, port: KernelPort, router: EventRouter, runner: Runner, name: str,
) -> None:
    """Tasks of `name` the history holds as open (started before a kernel restart) are followed again, in the
    background: their results land in the history when they finish."""
    if not hub.serves_tasks(name):
        return
    ids = resume_open(hub, history, port, router, runner, name)
    if ids:
        port.publish({"text/plain": (
            f"{name}: following {len(ids)} MCP task{'s' if len(ids) > 1 else ''} still open from before "
            f"({', '.join(ids)}); their results land in the history; %mcp tasks shows them")}, None, False)
