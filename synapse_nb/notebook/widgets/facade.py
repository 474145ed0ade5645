"""What the widgets need from the rest of the extension: the facade protocols they are given, every member of them.

A widget reads nothing else of the notebook's parts: `tests/notebook/widgets/test_widgets_facade.py` fails when
a widget reaches past these protocols (an attribute of the facade they do not list, or a `getattr` probe).
The command layer hands the inspector a `WidgetParts` built from the kernel's parts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ...protocols import ProgressCallback
from ...types import ToolResult, ToolSpec

__all__ = [
    "AnswersLike",
    "AppsLike",
    "CallTool",
    "HistoryLike",
    "HubLike",
    "KernelToolsLike",
    "RegistryLike",
    "RunnerLike",
    "SignInLike",
    "SkillsLike",
    "StateLike",
    "WidgetParts",
    "listed_tools",
]


class SkillsLike(Protocol):
    """The hub's skills (mcp_client/skill_shelf.py) as the inspector reads them: each server's listed entries."""

    def listed(self, server: str | None = None, /) -> Sequence[Any]: ...


class HubLike(Protocol):
    """The parts of McpHub the inspector uses (positional-only, so any parameter names fit)."""

    @property
    def skills(self) -> SkillsLike: ...

    @property
    def servers(self) -> Sequence[Any]: ...

    @property
    def tools(self) -> Sequence[ToolSpec]: ...

    @property
    def all_tools(self) -> Sequence[ToolSpec]: ...

    def restart(self, name: str, /) -> Awaitable[Any]: ...

    def disconnect(self, name: str, /) -> Awaitable[Any]: ...

    def list_resources(self, name: str, /) -> Awaitable[Any]: ...

    def list_resource_templates(self, name: str, /) -> Awaitable[Any]: ...

    def list_prompts(self, name: str, /) -> Awaitable[Any]: ...

    def read_resource(self, name: str, uri: str, /) -> Awaitable[Any]: ...

    def subscribe(self, name: str, uri: str, /) -> Awaitable[Any]: ...

    def unsubscribe(self, name: str, uri: str, /) -> Awaitable[Any]: ...

    def get_prompt(self, name: str, prompt: str, arguments: Mapping[str, str] | None = None, /) -> Awaitable[Any]: ...

    def logs(self, name: str, n: int | None = None, *, level: str = "debug") -> Sequence[Any]: ...


class RunnerLike(Protocol):
    """notebook/kernel/runner.py's Runner: `spawn` schedules a coroutine on the kernel loop and returns at once."""

    def spawn(self, coro: Coroutine[Any, Any, Any], /) -> Any: ...


class HistoryLike(Protocol):
    """synapse_nb.history.History: relations as pandas DataFrames."""

    def sql(self, query: str, /) -> Any: ...

    def tool_calls(self, session_id: str | None = None) -> Any: ...

    def llm_calls(self, session_id: str | None = None) -> Any: ...


class AnswersLike(Protocol):
    """notebook/questions/answers.py's NotebookAnswers, as the server panels read it."""

    @property
    def updates(self) -> Sequence[tuple[str, str]]:
        """(server, uri) of the resource updates received, oldest first (the resources tab lists them)."""
        ...

    @property
    def asking(self) -> Sequence[Any]:
        """The elicitation widgets waiting for an answer now (each has `.request.server`)."""
        ...


class SignInLike(Protocol):
    """notebook/questions/sign_in.py's NotebookSignIn: the sign-ins waiting for the user now."""

    @property
    def open(self) -> Sequence[Any]: ...


class AppsLike(Protocol):
    """notebook/apps/views.py's AppViews: opens a UI tool's View for a call's result (None: it has none)."""

    def open(self, spec: ToolSpec, arguments: Mapping[str, Any], result: ToolResult | None, /) -> Awaitable[Any]: ...


class RegistryLike(Protocol):
    """agent/tools.py's ToolRegistry, as the `kernel` group's card reads it."""

    @property
    def grouped(self) -> Sequence[ToolSpec]: ...


class KernelToolsLike(Protocol):
    """notebook/workspace/tools.py's KernelTools: the `kernel__*` group, registered in a registry on demand."""

    def install(self, registry: Any, /) -> None: ...


class CallTool(Protocol):
    """notebook/recording/manual.py's ManualCalls.call: run a tool by hand and record it (approval "manual");
    `on_progress` sees the server's progress reports, `on_recorded` the duration recorded (ms)."""

    def __call__(
        self, spec: Any, arguments: Mapping[str, Any], /, *, on_progress: ProgressCallback | None = None,
        on_recorded: Callable[[float], None] | None = None,
    ) -> Awaitable[ToolResult]: ...


class StateLike(Protocol):
    """Everything the inspector and its panels read: nothing else is reached (see the module docstring)."""

    @property
    def hub(self) -> HubLike: ...

    @property
    def runner(self) -> RunnerLike: ...

    @property
    def history(self) -> Callable[[], HistoryLike | None]:
        """A reader over the history file (None: it cannot be read)."""
        ...

    @property
    def call_tool(self) -> CallTool: ...

    @property
    def on_server_event(self) -> Callable[[Callable[[Any], None]], Callable[[], None]] | None:
        """Subscribe to the hub's ServerEvents (open panels follow restarts and crashes); returns the
        unsubscribe function. None: the panels are re-read on Refresh only."""
        ...

    @property
    def answers(self) -> AnswersLike | None: ...

    @property
    def sign_in(self) -> SignInLike | None: ...

    @property
    def apps(self) -> AppsLike | None: ...

    @property
    def kernel(self) -> KernelToolsLike | None:
        """The `kernel__*` group (None: no such group here: the inspector shows no `kernel` card)."""
        ...

    @property
    def registry(self) -> RegistryLike | None: ...

    @property
    def kernel_tools(self) -> Callable[[], bool]:
        """Whether cells are offered the `kernel__*` group now (`%config SynapseMagics.kernel_tools`)."""
        ...

    @property
    def search_tools(self) -> Callable[[str], Sequence[Mapping[str, Any]]] | None:
        """Ranks the tools for a request in plain words (`%mcp search`'s rows, best first); None: no search box."""
        ...


@dataclass(frozen=True, slots=True)
class WidgetParts:
    """The parts the command layer hands the inspector: a StateLike made of the kernel's parts."""

    hub: HubLike
    runner: RunnerLike
    history: Callable[[], HistoryLike | None]
    call_tool: CallTool
    on_server_event: Callable[[Callable[[Any], None]], Callable[[], None]] | None = None
    answers: AnswersLike | None = None
    sign_in: SignInLike | None = None
    apps: AppsLike | None = None
    kernel: KernelToolsLike | None = None
    registry: RegistryLike | None = None
    kernel_tools: Callable[[], bool] = bool
    search_tools: Callable[[str], Sequence[Mapping[str, Any]]] | None = None


def listed_tools(hub: HubLike) -> list[ToolSpec]:
    """The MCP tools the inspector lists: those offered to the model and the app-only ones of MCP Apps
    (their View calls them; a person may too), not those that only run as MCP tasks on a server that serves
    none (a task tool of a server that serves tasks is offered, so listed)."""
    offered = {t.name for t in hub.tools}
    return [t for t in hub.all_tools if not t.needs_task or t.name in offered]
