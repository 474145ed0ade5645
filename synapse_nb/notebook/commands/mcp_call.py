"""`%mcp call SERVER.TOOL ARGS`: find the tool the words name, call it by hand (no model, no approval), show its
result (and a UI tool's View above it), hold a big one by name; `--detach` leaves a call the server made an MCP
task running there."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ...errors import SynapseError, TaskDetachedError
from ...masking import SecretMask
from ...mcp_client.task_watch import TaskWatch
from ...task_state import TaskState
from ...types import ToolResult, ToolSpec
from ..output.calls import CallProgress, call_bundle, call_text
from ..output.live import LiveOutput
from ..turns.display import ticking
from ..usage import usage_error
from .args import CallTarget
from .servers import find_server

if TYPE_CHECKING:
    import pandas as pd

    from ...agent.held import HeldResults, HoldPolicy
    from ...agent.tools import ToolRegistry
    from ...mcp_client.hub import McpHub
    from ..apps.view import AppView
    from ..apps.views import AppViews
    from ..kernel.port import KernelPort
    from ..recording.manual import ManualCalls
    from ..secrets import SecretRegistry
    from ..workspace.tools import KernelTools

__all__ = ["CallOutput", "DetachedTask", "call_async", "find_tool"]


@dataclass(frozen=True)
class CallOutput:
    """What `%mcp call` returns and shows: the tool's result as the %%synapse tool block shows one (see
    notebook/output/calls.py: a table with raw, capped text, images); `.text` and `.df` hold all of it."""

    name: str
    arguments: Mapping[str, Any]
    result: ToolResult
    held: str | None = None  # the variable the kernel holds the result in (a table of many rows, a big text)
    view: AppView | None = field(default=None, repr=False)  # a UI tool's View (MCP Apps), shown above the result

    @property
    def text(self) -> str:
        return self.result.text

    @property
    def df(self) -> pd.DataFrame:
        """The tool's tabular or structured result as a DataFrame (the fields found beside a table, such as
        a `warning` or `truncated`, in its `.attrs`); ValueError when it holds neither."""
        from ..turns.frames import result_frame

        return result_frame(self.result)

    def df_of(self, name: str | int) -> pd.DataFrame:
        """One of several tables in the result, by its path (`customers`, `data.rows`) or position."""
        from ..turns.frames import result_frame

        return result_frame(self.result, name)

    @property
    def meta(self) -> dict[str, Any]:
        """The fields the server sent beside its table (`warning`, `truncated`, `nextCursor` ...); {} when the
        result is no single table or the table was all of it."""
        from ...tables import table_of

        table = None if self.result.is_error else table_of(self.result)
        return dict(table.meta) if table is not None else {}

    def __repr__(self) -> str:
        return call_text(self.name, self.result, held=self.held)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        # under a View the View is the result: its block stays closed, for whoever wants the raw answer
        return call_bundle(self.name, self.arguments, self.result, held=self.held, opened=self.view is None)


def find_tool(
    hub: McpHub | None, registry: ToolRegistry, kernel: KernelTools, secrets: SecretRegistry, target: CallTarget,
) -> ToolSpec:
    """The tool `SERVER.TOOL` names (by the server's own tool name, or the qualified one); `python.NAME` is an
    `@synapse_nb.tool` function of the notebook (listed under server `python` by %mcp tools)."""
    from ..turns.result import LOCAL_SERVER

    offered = [s for s in (hub.all_tools if hub is not None else []) if s.server == target.server]
    group: list[ToolSpec] = []
    if not offered:  # a built-in group (kernel), or the @synapse_nb.tool functions (`python`), as %mcp tools lists
        kernel.register_notebook_tools(registry)
        group = [s for s in registry.grouped if s.server == target.server]
        if target.server == LOCAL_SERVER:
            group = registry.native
    for spec in offered or group:
        if target.tool in (spec.original_name, spec.name) or spec.name == f"{target.server}__{target.tool}":
            return spec
    if not offered and target.server == LOCAL_SERVER:
        names = ", ".join(s.name for s in group) or "none"
        raise UsageError(f"%mcp call: no @synapse_nb.tool function {target.tool!r} in the notebook; its functions: "
                         f"{names} (see %mcp tools)")
    offered = offered or group
    if not group:
        info = find_server(hub, target.server)  # an unknown server gets its own message (last: it costs a snapshot)
        if not offered and not info.usable:  # its tools are unknown because it is not running: say that
            why = f"{info.state}: {info.last_error}" if info.last_error else info.state
            raise UsageError(SecretMask(secrets.values).mask(
                f"%mcp call: server {target.server!r} is not running ({why}); start it again with %mcp restart "
                f"{target.server}"))
    names = ", ".join(s.original_name or s.name for s in offered) or "none"
    raise UsageError(
        f"%mcp call: server {target.server!r} has no tool {target.tool!r}; its tools: {names} "
        f"(see %mcp tools {target.server})"
    )


@dataclass(frozen=True)
class DetachedTask:
    """What `%mcp call --detach` (or a detached call) leaves: a task running on the server, and how to come back."""

    server: str
    tool: str
    task_id: str

    def __str__(self) -> str:
        return (f"task {self.task_id} of {self.server}.{self.tool} runs on the server; %mcp tasks result "
                f"{self.task_id} waits for its result, %mcp tasks cancel {self.task_id} cancels it")

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))


async def call_async(
    spec: ToolSpec, arguments: Mapping[str, Any], *, manual: ManualCalls, port: KernelPort, apps: AppViews,
    hub: McpHub | None = None, hold: HoldPolicy | None = None, held: HeldResults | None = None,
    detach: bool = False, cell: str | None = None,
) -> CallOutput | DetachedTask:
    """`%mcp call [--detach] SERVER.TOOL ARGS`: run one tool by hand (no model, no approval) and show the result;
    what `hold` holds (a table of many rows, a big text) is kept in `held` under a name the output shows
    (agent/held.py).

    While it runs, the cell shows the time waited and the server's progress reports; a call the server runs as
    an MCP task shows the task (its id, status and message, and its question while it asks one). Cancelling it
    (an interrupt) cancels the call: the server gets an MCP cancellation (`tasks/cancel` for a task), the call is
    recorded as cancelled. `detach`: once the server has made the call a task, leave it running and say how to
    come back to it (`%mcp tasks result ID`); a call that is no task just runs. `cell` is recorded as the task's
    cell (kernel/port.py: KernelPort.cell_label). A UI tool (MCP Apps) is called with its input schema's defaults
    filled in where no value was given, so that its View sees the input the call ran with; its View shows above
    the result, whose block then stays closed (`.view` is the View)."""
    if spec.needs_task and not (spec.server is not None and hub is not None and hub.serves_tasks(spec.server)):
        raise _task_refusal(spec.server or "", spec.original_name or spec.name)
    if apps.has_view(spec):  # its View reads the tool input: give it the defaults the server would apply
        from ..apps.ui import with_defaults

        arguments = with_defaults(spec, arguments)
    name = f"{spec.server}.{spec.original_name or spec.name}"
    started = time.perf_counter()
    out = LiveOutput(live=port.live, publish=port.publish)
    shown = CallProgress(name)
    try:
        async with ticking(out, shown.bundle, asked=lambda: port.asking_since,
                           open_at_once=apps.has_view(spec)) as refresh:  # a View's cell is never cleared

            def report(done: float, total: float | None, message: str | None) -> None:
                shown.report(done, total, message)
                refresh()

            def seen(task: TaskState) -> None:
                shown.task = task
                refresh()
                if detach:
                    watch.detach()

            watch = TaskWatch(seen, cell=cell)
            result = await manual.call(spec, arguments, on_progress=report, task=watch)
    except TaskDetachedError as exc:
        return DetachedTask(spec.server or "", spec.original_name or spec.name, exc.task_id)
    except SynapseError as exc:
        raise usage_error(exc) from None
    if not result.duration_ms:
        import dataclasses

        result = dataclasses.replace(result, duration_ms=(time.perf_counter() - started) * 1000)
    viewed = await _show_view(apps, port, spec, arguments, result, name)
    kept = None
    if hold is not None and held is not None and hold.holds(result, spec.server):
        kept = (await asyncio.to_thread(held.hold, result, tool=spec.name, call_id="")).name
    return CallOutput(name, dict(arguments), result, kept, view=viewed)


async def _show_view(
    apps: AppViews, port: KernelPort, spec: ToolSpec, arguments: Mapping[str, Any], result: ToolResult, name: str,
) -> AppView | None:
    """A UI tool's View (MCP Apps), displayed above the call's result, which stays the text for frontends
    without widgets; while it opens (the first one of a kernel imports its widget code), the cell says so."""
    if not apps.has_view(spec):
        return None
    out = LiveOutput(live=port.live, publish=port.publish)
    async with ticking(out, lambda elapsed: f"opening the interactive view of {name} … {elapsed}",
                       open_at_once=True) as refresh:
        refresh()  # at once: the opening may hold the loop (imports), so no tick would show it
        opened = await apps.open(spec, arguments, result)
    if opened is None:
        return None
    opened.publish(port.publish)
    return opened.view


def _task_refusal(server: str, tool: str) -> UsageError:
    """Why a tool that requires MCP tasks cannot be called, in one line."""
    return UsageError(
        f"%mcp call: {server}.{tool} needs MCP tasks (its execution.taskSupport is 'required'), and server "
        f"{server!r} serves no tasks; it is listed but not offered to the model"
    )
