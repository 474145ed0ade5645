"""`%%synapse --resume` (and `%mcp tasks resume ID`): continue a turn the kernel left waiting on tool results.

A kernel that stops during a turn's tool calls (restarted while an MCP task ran on its server) leaves the
session's transcript in the history ending with the model's reply that asked for them, and no tool messages.
Resuming loads that session, takes each missing result from the history (an MCP task's result once it finished,
waiting for one still running, as `%mcp tasks result` does), gives them to the model as the tool messages it
was waiting for, and the turn goes on from there like any `%%synapse` turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ...agent.tool_batch import bound_text
from ...errors import SynapseError
from ...history.transcript import waiting_calls
from ...types import Message, ToolCall, ToolResult
from ..recording.reader import reader
from . import mcp_tasks

if TYPE_CHECKING:
    from ...history.reader import History
    from ..settings import Settings
    from ..state import SynapseState

__all__ = ["STOPPED", "resumed_turn", "waiting_session"]

STOPPED = "no result: the kernel stopped before this tool call finished"
"""The tool message of a waiting call that was not an MCP task and left no result (it cannot be fetched now)."""

_WHERE = "%%synapse --resume"
_OPEN = ("working", "input_required")


async def resumed_turn(state: SynapseState, settings: Settings, session: str | None) -> tuple[str, list[Message]]:
    """(the session's name in this kernel, the tool messages its waiting turn goes on with).

    `session` (a name or an id prefix) names the session; None: the newest session of this notebook whose turn
    waits on an MCP task it started. UsageError, one line, when there is no such turn."""
    history = reader(state.store)
    if history is None:
        raise UsageError(f"{_WHERE}: there is no history to resume from ({state.store.problem or 'it is closed'})")
    session_id = history.find_session(session) if session else waiting_session(state, history)
    if session_id is None:
        raise UsageError(f"{_WHERE}: no session {session!r} in the history; %synapse session list shows them"
                         if session else f"{_WHERE}: no turn of this notebook is waiting on an MCP task's result; "
                         "%mcp tasks lists the tasks, --session NAME names a session")
    try:
        name = state.sessions.resume_recorded(session_id, lambda: state.models.provider(None))
    except SynapseError as exc:  # its agent is answering a prompt right now
        raise UsageError(f"{_WHERE}: {exc}") from None
    assert name is not None  # found above
    calls = waiting_calls(state.sessions[name].messages)
    if not calls:
        raise UsageError(f"{_WHERE}: session {name!r} has no turn waiting on tool results; ask it something with "
                         f"%%synapse --session {name}")
    limit = settings.max_result_chars
    messages = []
    for call in calls:
        result = await _result_of(state, history, call)
        messages.append(Message.tool(call.id, bound_text(result.text, limit), name=call.name,
                                     is_error=result.is_error, images=result.images))
    return name, messages


def waiting_session(state: SynapseState, history: History) -> str | None:
    """The newest session (of this notebook, when the kernel knows it) with an MCP task whose turn's transcript
    still waits on tool results."""
    notebook = mcp_tasks.notebook_name(state)
    rows = history.rows(
        "SELECT session_id, cell FROM tasks WHERE session_id IS NOT NULL AND session_id <> '' "
        "ORDER BY created_at DESC", relations=("task_events",))
    seen: set[str] = set()
    for session_id, cell in rows:
        if session_id in seen or (notebook and not str(cell or "").startswith(f"{notebook} ")):
            continue
        seen.add(session_id)
        messages, _ = history.transcript(str(session_id))
        if waiting_calls(messages):
            return str(session_id)
    return None


async def _result_of(state: SynapseState, history: History, call: ToolCall) -> ToolResult:
    """A waiting call's result: as recorded; else its MCP task's (followed to its end); else STOPPED."""
    recorded = mcp_tasks.recorded_result(state, call.id)
    if recorded is not None:
        return recorded
    rows = history.rows("SELECT task_id FROM tasks WHERE tool_call_id = ? ORDER BY created_at DESC LIMIT 1",
                        [call.id], relations=("task_events",))
    if not rows:
        return ToolResult.error(STOPPED)
    row: dict[str, Any] = mcp_tasks.task_row(state, str(rows[0][0]))
    server = str(row["server"])
    if not state.has_hub or server not in {s.name for s in state.hub.servers}:
        raise UsageError(f"{_WHERE}: the turn waits on task {row['task_id']} of {server}, which is not connected; "
                         f"%mcp connect {server} first")
    try:
        return await mcp_tasks.wait_for_result(state, row)
    except SynapseError as exc:
        raise UsageError(f"{_WHERE}: {type(exc).__name__}: {exc}") from None
