"""What the widgets need from the rest of the extension: the small facade protocols they are given."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, Protocol

from ...protocols import ProgressCallback
from ...types import ToolResult, ToolSpec

__all__ = ["HistoryLike", "HubLike", "RunnerLike", "StateLike", "listed_tools"]


class HubLike(Protocol):
    """The parts of McpHub the inspector uses (positional-only, so any parameter names fit)."""

    @property
    def servers(self) -> Sequence[Any]: ...

    @property
    def tools(self) -> Sequence[ToolSpec]: ...

    @property
    def all_tools(self) -> Sequence[ToolSpec]: ...

    def call(self, qualified_name: str, arguments: Mapping[str, Any], /) -> Awaitable[ToolResult]: ...

    def restart(self, name: str, /) -> Awaitable[Any]: ...

    def disconnect(self, name: str, /) -> Awaitable[Any]: ...

    def list_resources(self, name: str, /) -> Awaitable[Any]: ...

    def list_resource_templates(self, name: str, /) -> Awaitable[Any]: ...

    def list_prompts(self, name: str, /) -> Awaitable[Any]: ...

    def read_resource(self, name: str, uri: str, /) -> Awaitable[Any]: ...

    def get_prompt(self, name: str, prompt: str, arguments: Mapping[str, str] | None = None, /) -> Awaitable[Any]: ...


class RunnerLike(Protocol):
    """notebook/kernel/runner.py's Runner: `spawn` schedules a coroutine on the kernel loop and returns at once."""

    def spawn(self, coro: Coroutine[Any, Any, Any], /) -> Any: ...


class HistoryLike(Protocol):
    """synapse_nb.history.History: relations as pandas DataFrames."""

    def sql(self, query: str, /) -> Any: ...

    def tool_calls(self, session_id: str | None = None) -> Any: ...

    def llm_calls(self, session_id: str | None = None) -> Any: ...


class StateLike(Protocol):
    """The facade the notebook layer hands to `inspector()`.

    Optionally also `on_server_event(listener) -> unsubscribe`: the hub's ServerEvents, so open
    panels follow restarts and crashes (SynapseState has it; a facade without it is re-read on Refresh),
    and `answers.updates`: the (server, uri) resource updates received, shown in the resources tab.
    """

    @property
    def hub(self) -> HubLike: ...

    @property
    def runner(self) -> RunnerLike: ...

    def history(self) -> HistoryLike | None: ...

    def call_tool(
        self, qualified_name: str, arguments: Mapping[str, Any], /, *, on_progress: ProgressCallback | None = None,
        on_recorded: Callable[[float], None] | None = None,
    ) -> Awaitable[ToolResult]:
        """Call a tool through the hub and record the call (approval "manual"); `on_progress` sees the
        server's progress reports, `on_recorded` the duration recorded (ms)."""
        ...


def listed_tools(hub: HubLike) -> list[ToolSpec]:
    """The MCP tools the inspector lists: those offered to the model and the app-only ones of MCP Apps
    (their View calls them; a person may too), not those that only run as MCP tasks on a server that serves
    none (a task tool of a server that serves tasks is offered, so listed)."""
    offered = {t.name for t in hub.tools}
    return [t for t in hub.all_tools if not t.needs_task or t.name in offered]
