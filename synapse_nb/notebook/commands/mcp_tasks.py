"""`%mcp tasks`: the MCP tasks this history knows (across kernel restarts), `%mcp tasks cancel ID`,
`%mcp tasks result ID`; and, when a server connects, following its tasks still open since an earlier kernel,
so their results land in the history (under the tool call that started them) when they finish."""

from __future__ import annotations

import asyncio
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
from .mcp_call import CallOutput, DetachedTask

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
    "TASK_COLUMNS", "DetachedTask", "TaskParts", "cancel_async", "follow_open_tasks", "list_tasks", "parse",
    "recorded_result", "result_async", "resume_open", "task_row", "wait_for_result",
]

logger = logging.getLogger("synapse_nb.notebook")

TASK_COLUMNS = ("task_id", "server", "tool", "status", "message", "age", "cell", "tool_call_id")
_FOLLOWER = "synapse-task-"
"""The name prefix of the background task following one MCP task (one per task id)."""


@dataclass(frozen=True)
class TaskParts:
    """What following a task uses: the hub asks its server, the history says whether it was recorded, the port
    shows it, the router records it, the runner runs the followers of tasks left open by an earlier kernel."""

    hub: McpHub
    history: HistoryOf
    port: KernelPort
    router: EventRouter
    runner: Runner


def parse(words: list[str]) -> tuple[str, str | None]:
    """`%mcp tasks [--all | cancel ID | result ID | resume ID]` -> (action, task id); action "all" lists every
    notebook's; "resume" continues the turn that was waiting on the task (`%%synapse --resume`)."""
    if not words:
        return "list", None
    if words == ["--all"]:
        return "all", None
    if words[0] in ("cancel", "result", "resume") and len(words) == 2:
        return words[0], words[1]
    raise UsageError("%mcp tasks: list them with %mcp tasks [--all], or %mcp tasks cancel ID / %mcp tasks result ID "
                     "/ %mcp tasks resume ID")


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


async def result_async(parts: TaskParts, task_id: str) -> Any:
    """`%mcp tasks result ID`: wait for the task (its status shows meanwhile) and show its result as `%mcp call`
    does; recorded under the tool call that started it, unless that call's row exists already."""
    row = _row(parts.history, task_id)
    try:
        result = await _follow(parts, row, show=True)
    except SynapseError as exc:
        raise usage_error(exc) from None
    return CallOutput(f"{row['server']}.{row['tool'] or '?'}", _arguments(row), result)


def resume_open(parts: TaskParts, server: str) -> list[str]:
    """Follow, in the background, the tasks of `server` the history holds as still open (from an earlier kernel);
    returns their ids. Each one's result is recorded when it ends; one the server forgot is recorded as lost."""
    frame = _tasks(parts.history, server=server, open_only=True)
    if frame is None or frame.empty:
        return []
    following = {t.get_name() for t in parts.runner.tasks}
    started = []
    for row in frame.to_dict("records"):
        name = _FOLLOWER + str(row["task_id"])
        if name not in following:
            parts.runner.spawn(_follow_quietly(parts, row), name=name)
            started.append(str(row["task_id"]))
    return started


# --- following one task ----------------------------------------------------------------------------------


async def _follow_quietly(parts: TaskParts, row: dict[str, Any]) -> None:
    try:
        result = await _follow(parts, row, show=False)
    except SynapseError as exc:
        parts.port.publish({"text/plain": f"MCP task {row['task_id']} of {row['server']}: {exc}"}, None, False)
        return
    head = f"MCP task {row['task_id']} of {row['server']}.{row['tool'] or '?'} finished"
    parts.port.publish({"text/plain": f"{head} ({duration(result.duration_ms)}): {result.text[:200]}"}, None, False)


async def _follow(parts: TaskParts, row: dict[str, Any], *, show: bool) -> ToolResult:
    """Wait for one task's result and record it (once) under the tool call that started it; what the server asks
    meanwhile (a sampling request, and so its cost) belongs to that tool call."""
    server, task_id = str(row["server"]), str(row["task_id"])
    row = {**row, "tool_call_id": str(row.get("tool_call_id") or uuid.uuid4().hex)}
    call_id = row["tool_call_id"]
    parts.router.call_started(server, str(row.get("session_id") or ""), call_id)
    result: ToolResult | None = None
    error: str | None = None
    try:
        with parts.router.calling(call_id):
            result = await _wait(parts, server, task_id, str(row["tool"] or ""), show=show)
        return result
    except TaskDetachedError:
        raise
    except TaskError as exc:
        error = str(exc)
        raise
    finally:
        if (result is not None or error is not None) and not _recorded(parts.history, row):
            _record(parts.router, row, result, error)
        parts.router.call_ended(call_id)  # when recorded, ToolCallFinished ended it already


async def _wait(parts: TaskParts, server: str, task_id: str, tool: str, *, show: bool) -> ToolResult:
    """The task's result; `show`: its status live in the cell meanwhile."""
    from ..output.calls import CallProgress
    from ..output.live import LiveOutput
    from ..turns.display import ticking

    if not show:
        return await parts.hub.follow_task(server, task_id, tool=tool)
    port = parts.port
    progress = CallProgress(f"{server}.{tool or '?'} (task {task_id})")
    out = LiveOutput(live=port.live, publish=port.publish, withdraw=port.withdraw)
    async with ticking(out, progress.bundle, asked=lambda: port.asking_since, show_after=0.0) as refresh:
        watch = TaskWatch(lambda s: _shown(progress, s, refresh))
        return await parts.hub.follow_task(server, task_id, tool=tool, task=watch)


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


def follow_open_tasks(parts: TaskParts, name: str) -> None:
    """Tasks of `name` the history holds as open (started before a kernel restart) are followed again, in the
    background: their results land in the history when they finish."""
    if not parts.hub.serves_tasks(name):
        return
    ids = resume_open(parts, name)
    if ids:
        parts.port.publish({"text/plain": (
            f"{name}: following {len(ids)} MCP task{'s' if len(ids) > 1 else ''} still open from before "
            f"({', '.join(ids)}); their results land in the history; %mcp tasks shows them")}, None, False)


def task_row(history: HistoryOf, task_id: str) -> dict[str, Any]:
    """The history's row of task `task_id` (the `tasks` view); UsageError naming `%mcp tasks` when there is none."""
    return _row(history, task_id)


async def wait_for_result(parts: TaskParts, row: dict[str, Any]) -> ToolResult:
    """The result of the task of `row`, recorded once under its tool call: when a background follower (a task of
    an earlier kernel, followed since its server connected) runs, its end is awaited (one poller per task); else
    the task is followed here, its status shown. A task that failed or was lost gives an error result."""
    name = _FOLLOWER + str(row["task_id"])
    follower = next((t for t in parts.runner.tasks if t.get_name() == name and not t.done()), None)
    if follower is not None:
        await asyncio.wait([follower])  # an interrupt stops this wait, never the follower
    recorded = recorded_result(parts.history, str(row.get("tool_call_id") or ""))
    if recorded is not None:
        return recorded
    try:
        return await _follow(parts, row, show=True)
    except TaskDetachedError:
        raise
    except TaskError as exc:
        return ToolResult.error(str(exc))


def recorded_result(history_of: HistoryOf, tool_call_id: str) -> ToolResult | None:
    """The result the history holds for tool call `tool_call_id` (an error result for a call that failed), or None."""
    history = history_of()
    if history is None or not tool_call_id:
        return None
    rows = history.rows("SELECT result, result_text, error FROM tool_calls WHERE tool_call_id = ? "
                        "ORDER BY started_at DESC LIMIT 1", [tool_call_id], relations=("tool_calls",))
    if not rows:
        return None
    result, text, error = rows[0]
    if isinstance(result, str) and result:
        return ToolResult.from_dict(json.loads(result))
    if isinstance(result, dict):
        return ToolResult.from_dict(result)
    return ToolResult.error(str(error or text or "the tool call ended without a result"))
