"""ManualCalls: a tool call made by hand (`%mcp call`, the inspector's Call, an MCP Apps View), run and recorded."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ...errors import SynapseError, TaskDetachedError
from ...events import ToolCallFinished, utcnow
from ...types import ToolCall, ToolResult, ToolSpec

if TYPE_CHECKING:
    from ...agent.tools import ToolRegistry
    from ...mcp_client.hub import McpHub
    from ...mcp_client.task_watch import TaskWatch
    from ...protocols import ProgressCallback
    from ..sessions import Sessions
    from .router import EventRouter

__all__ = ["ManualCalls"]


class ManualCalls:
    """Runs one tool by hand and records it as the agent's calls are, with approval "manual", in the current
    session (or none before its first turn), beside the router that records the agent's calls.

    `hub` and `registry` are asked for on each call (the kernel builds them on first use).
    """

    def __init__(self, hub: Callable[[], McpHub], registry: Callable[[], ToolRegistry], sessions: Sessions,
                 router: EventRouter) -> None:
        self._hub = hub
        self._registry = registry
        self._sessions = sessions
        self._router = router

    def spec(self, qualified_name: str) -> ToolSpec:
        """The tool of that name: a built-in group's (`kernel__*`), an `@synapse_nb.tool` function's
        (`python.NAME`) or a connected server's (UnknownToolError)."""
        registry = self._registry()
        if self._in_process(registry, qualified_name):
            return registry.spec(qualified_name)
        return self._hub().tool(qualified_name)

    async def call(
        self, spec: ToolSpec | str, arguments: Mapping[str, Any], *, on_progress: ProgressCallback | None = None,
        origin: str = "manual", on_recorded: Callable[[float], None] | None = None, task: TaskWatch | None = None,
    ) -> ToolResult:
        """Run the tool `spec` (or the one of that qualified name) and record it. A server's tool goes to the hub;
        a built-in group's (`kernel__*`) runs in process through the registry. `on_progress` sees the
        server's progress reports (the inspector's bar); `origin` is recorded as who asked ("manual", or
        "app:SERVER" for an MCP Apps View's call); `on_recorded` gets the duration recorded (ms: the tool's own time,
        as the hub measured the request, not the wait before it), so what shows
        the call (the inspector's badge) says what its history row says. A call the server runs as an MCP task is
        seen through `task` (its status, its question); one detached from (TaskDetachedError) is recorded when its
        result is fetched (commands/mcp_tasks.py), under the same tool call id."""
        if isinstance(spec, str):
            spec = self.spec(spec)
        registry = self._registry()
        grouped = self._in_process(registry, spec.name)
        call = ToolCall(uuid.uuid4().hex, spec.name, dict(arguments))
        started_at, started = utcnow(), time.perf_counter()
        result: ToolResult | None = None
        error: str | None = "cancelled"
        if spec.server is not None:
            self._router.call_started(spec.server, self._session_id(), call.id)
        if task is not None:
            task.tool_call_id = call.id
            task.session_id = self._session_id() or None
        detached = False
        try:
            with self._router.calling(call.id):  # what the server asks meanwhile belongs to this call
                if grouped:
                    result = await registry.call(spec.name, arguments, on_progress=on_progress)
                else:
                    result = await self._hub().call(spec.name, arguments, on_progress=on_progress, task=task)
            error = None
            return result
        except TaskDetachedError:
            detached = True
            raise
        except SynapseError as exc:
            error = str(exc)
            raise
        finally:
            if not detached:  # a detached task's result is recorded when it is fetched (commands/mcp_tasks.py)
                # the tool's own time, as the agent's calls record it: what the hub measured around the request
                # (not the wait before it, e.g. the first output-schema validation's import), else the wall time
                took = (result.duration_ms if result is not None and result.duration_ms
                        else (time.perf_counter() - started) * 1000)
                self._router.record(ToolCallFinished(
                    session_id=self._session_id(), call=call, server=spec.server,
                    tool=spec.original_name or spec.name, approval="manual", started_at=started_at,
                    duration_ms=took, result=result, error=error, origin=origin,
                ))
                if on_recorded is not None:
                    on_recorded(took)

    @staticmethod
    def _in_process(registry: ToolRegistry, name: str) -> bool:
        """Whether the tool runs in this process: a built-in group's or an `@synapse_nb.tool` function."""
        return registry.group_of(name) is not None or any(s.name == name for s in registry.native)

    def _session_id(self) -> str:
        """The current session's id once it has a turn, else "" (a call before the first turn has no session)."""
        agent = self._sessions.get(self._sessions.current)
        return agent.session_id if agent is not None and agent.messages else ""
