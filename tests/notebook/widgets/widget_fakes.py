"""Small stand-ins for the widgets' facade: a hub, a runner whose loop the test drives, a history."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from synapse_nb.errors import ServerCrashedError
from synapse_nb.types import ContentBlock, ToolResult, ToolSpec


@dataclass(frozen=True)
class Info:
    """Shaped like mcp_client's ServerInfo (the fields the contract names)."""

    name: str
    transport: str = "stdio"
    state: str = "connected"
    pid: int | None = 4242
    tool_count: int = 0
    last_error: str | None = None
    stderr_tail: str = ""
    command: str | None = "python -m demo"
    url: str | None = None


@dataclass(frozen=True)
class Resource:
    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None


@dataclass(frozen=True)
class PromptArg:
    name: str
    description: str | None = None
    required: bool = False


@dataclass(frozen=True)
class Prompt:
    name: str
    description: str | None = None
    arguments: tuple[PromptArg, ...] = ()


ECHO_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "What to say back"}},
    "required": ["text"],
}
SLEEP_SCHEMA = {
    "type": "object",
    "properties": {"seconds": {"type": "number", "minimum": 0, "maximum": 60, "default": 1}},
}


def spec(name: str, schema: Mapping[str, Any], *, server: str = "demo", description: str = "",
         annotations: Mapping[str, Any] | None = None) -> ToolSpec:
    return ToolSpec(
        name=f"{server}__{name}", description=description or f"The {name} tool.", input_schema=schema,
        server=server, original_name=name, annotations=dict(annotations or {}),
    )


def text_result(text: str, *, is_error: bool = False, ms: float = 12.5) -> ToolResult:
    return ToolResult(content=(ContentBlock("text", text=text),), is_error=is_error, duration_ms=ms)


@dataclass
class FakeSkills:
    """The hub's skills as the inspector reads them: each server's listed entries."""

    entries: dict[str, list[Any]]

    def listed(self, server: str | None = None) -> list[Any]:
        if server is None:
            return [e for listed in self.entries.values() for e in listed]
        return list(self.entries.get(server, []))


@dataclass
class FakeHub:
    servers: list[Info] = field(default_factory=list)
    tools: list[ToolSpec] = field(default_factory=list)
    results: dict[str, ToolResult | BaseException] = field(default_factory=dict)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    actions: list[tuple[str, str]] = field(default_factory=list)
    resources: dict[str, list[Any] | BaseException] = field(default_factory=dict)
    prompts: dict[str, list[Any] | BaseException] = field(default_factory=dict)
    skill_entries: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def all_tools(self) -> list[ToolSpec]:
        return self.tools

    @property
    def skills(self) -> FakeSkills:
        return FakeSkills(self.skill_entries)

    async def call(
        self, qualified: str, arguments: Mapping[str, Any], timeout: float | None = None,
        *, on_progress: Any = None,
    ) -> ToolResult:
        self.calls.append((qualified, dict(arguments)))
        outcome = self.results.get(qualified, text_result("ok"))
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def _set_state(self, name: str, **changes: Any) -> None:
        self.servers = [dataclasses.replace(s, **changes) if s.name == name else s for s in self.servers]

    async def restart(self, name: str) -> Info:
        self.actions.append(("restart", name))
        if name == "broken":
            raise ServerCrashedError("broken crashed again while starting", server=name)
        old = next(s for s in self.servers if s.name == name)
        self._set_state(name, state="connected", pid=(old.pid or 0) + 1, last_error=None)
        return next(s for s in self.servers if s.name == name)

    async def disconnect(self, name: str) -> None:
        self.actions.append(("disconnect", name))
        self._set_state(name, state="stopped", pid=None)

    async def list_resources(self, name: str) -> list[Any]:
        found = self.resources.get(name, [])
        if isinstance(found, BaseException):
            raise found
        return found

    async def list_resource_templates(self, name: str) -> list[Any]:
        return []

    async def read_resource(self, name: str, uri: str) -> tuple[ContentBlock, ...]:
        self.actions.append(("read", f"{name} {uri}"))
        image = ContentBlock("image", data="AAAA", mime_type="image/png")
        return (ContentBlock("text", text=f"contents of {uri}"), image)

    async def get_prompt(self, name: str, prompt: str, arguments: Mapping[str, str] | None = None) -> Any:
        from synapse_nb.mcp_client.info import PromptResult
        from synapse_nb.types import Message

        self.actions.append(("prompt", f"{name} {prompt} {dict(arguments or {})}"))
        return PromptResult("A summary prompt", (Message.user(f"Summarize {dict(arguments or {}).get('table')}"),))

    async def subscribe(self, name: str, uri: str) -> None:
        self.actions.append(("subscribe", f"{name} {uri}"))

    async def unsubscribe(self, name: str, uri: str) -> None:
        self.actions.append(("unsubscribe", f"{name} {uri}"))

    def logs(self, name: str, n: int | None = None, *, level: str = "debug") -> list[Any]:
        return []

    async def list_prompts(self, name: str) -> list[Any]:
        found = self.prompts.get(name, [])
        if isinstance(found, BaseException):
            raise found
        return found


class FakeRunner:
    """spawn() schedules on a loop that only runs when the test says so (`drain`): clicks never block."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.tasks: list[asyncio.Task[Any]] = []

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = self.loop.create_task(coro)
        self.tasks.append(task)
        return task

    def drain(self, timeout: float = 10.0) -> None:
        """Run every spawned task (and those they spawn) to completion, within `timeout`."""
        async def wait_all() -> None:
            async with asyncio.timeout(timeout):
                while pending := [t for t in self.tasks if not t.done()]:
                    await asyncio.gather(*pending)

        self.loop.run_until_complete(wait_all())
        for task in self.tasks:
            task.result()  # surface a task's exception in the test

    def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        self.loop.run_until_complete(asyncio.sleep(0))
        self.loop.close()


class FakeHistory:
    """Answers the queries the widgets make from in-memory rows, and remembers the SQL it was sent."""

    def __init__(self, tool_rows: list[dict[str, Any]] | None = None, **tables: list[dict[str, Any]]) -> None:
        self.tool_rows = tool_rows or []
        self.tables = tables
        self.queries: list[str] = []

    def sql(self, query: str) -> pd.DataFrame:
        self.queries.append(query)
        return pd.DataFrame(self.tool_rows)

    def _frame(self, table: str, session_id: str | None) -> pd.DataFrame:
        rows = [r for r in self.tables.get(table, []) if session_id is None or r.get("session_id") == session_id]
        return pd.DataFrame(rows)

    def tool_calls(self, session_id: str | None = None) -> pd.DataFrame:
        return self._frame("tool_calls", session_id)

    def llm_calls(self, session_id: str | None = None) -> pd.DataFrame:
        return self._frame("llm_calls", session_id)

    def turns(self, session_id: str | None = None) -> pd.DataFrame:
        return self._frame("turns", session_id)

    def messages(self, session_id: str | None = None) -> pd.DataFrame:
        return self._frame("messages", session_id)

    def sessions(self, session_id: str | None = None) -> pd.DataFrame:
        return self._frame("sessions", session_id)


@dataclass
class FakeState:
    """The widgets' facade (widgets/facade.py: StateLike), every member of it and nothing more: a widget that
    reads anything else of it fails the test (not even `getattr(state, "x", None)` gets a quiet None)."""

    hub: FakeHub
    runner: FakeRunner
    history_obj: Any = None
    listeners: list[Any] = field(default_factory=list)
    answers: Any = None
    sign_in: Any = None
    apps: Any = None
    kernel: Any = None
    registry: Any = None
    search_tools: Any = None

    def __getattr__(self, name: str) -> Any:
        # only called for what the class does not have: a widget reached past its protocol
        raise AssertionError(f"a widget read {name!r} of its facade, which widgets/facade.py's StateLike does not list")

    def kernel_tools(self) -> bool:
        return False

    def history(self) -> Any:
        return self.history_obj

    def on_server_event(self, listener: Any) -> Any:
        """Like SynapseState.on_server_event: the hub's ServerEvents reach `listener`."""
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def server_event(self, server: str, event: str, **state: Any) -> None:
        """The hub changed a server (e.g. a call restarted it): change the fake, then tell the listeners."""
        from synapse_nb.events import ServerEvent

        self.hub._set_state(server, **state)
        for listener in list(self.listeners):
            listener(ServerEvent(server=server, event=event))

    async def call_tool(
        self, qualified: str, arguments: Mapping[str, Any], *, on_progress: Any = None, on_recorded: Any = None,
    ) -> ToolResult:
        return await self.hub.call(qualified, arguments, on_progress=on_progress)
