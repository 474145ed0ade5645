"""Fakes the agent tests share: a ToolSource like McpHub (FakeSource) and an EventSink that keeps events (Recorder)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from synapse_nb.errors import ToolCallTimeout, UnknownToolError
from synapse_nb.events import Event
from synapse_nb.types import ContentBlock, ToolResult, ToolSpec

Handler = Callable[[Mapping[str, Any]], Awaitable[ToolResult] | ToolResult]


class FakeSource:
    """A ToolSource like McpHub: qualified `SERVER__TOOL` specs and a call() that runs a handler per tool."""

    def __init__(self) -> None:
        self.specs: list[ToolSpec] = []
        self.handlers: dict[str, Handler] = {}
        self.calls: list[tuple[str, dict[str, Any], float | None]] = []
        # progress notifications each tool reports before it answers: (progress, total, message)
        self.progress: dict[str, list[tuple[float, float | None, str | None]]] = {}

    def add(
        self, server: str, tool: str, handler: Handler | None = None, *, description: str = "",
        schema: Mapping[str, Any] | None = None, annotations: Mapping[str, Any] | None = None,
    ) -> ToolSpec:
        spec = ToolSpec(
            name=f"{server}__{tool}", description=description or f"{tool} of {server}",
            input_schema=schema or {"type": "object", "properties": {}}, server=server, original_name=tool,
            # a tool that says nothing is possibly destructive and asks (MCP's default): the fake's tools say
            # they only read unless a test gives annotations
            annotations=dict({"readOnlyHint": True} if annotations is None else annotations),
        )
        self.specs.append(spec)
        self.handlers[spec.name] = handler or (lambda args: text_result(f"{tool} ok"))
        return spec

    def remove(self, name: str) -> None:
        self.specs = [s for s in self.specs if s.name != name]
        self.handlers.pop(name, None)

    @property
    def tools(self) -> Sequence[ToolSpec]:
        return list(self.specs)

    async def call(
        self, qualified_name: str, arguments: Mapping[str, Any], timeout: float | None = None,
        *, on_progress: Callable[[float, float | None, str | None], None] | None = None,
    ) -> ToolResult:
        """Like McpHub.call: is_error results are returned, a call past its timeout raises ToolCallTimeout."""
        self.calls.append((qualified_name, dict(arguments), timeout))
        for step in self.progress.get(qualified_name, ()):
            if on_progress is not None:
                on_progress(*step)
        if qualified_name not in self.handlers:
            raise UnknownToolError(f"no tool named {qualified_name!r}", tool=qualified_name)
        limit = 120.0 if timeout is None else timeout
        try:
            async with asyncio.timeout(limit):
                outcome = self.handlers[qualified_name](arguments)
                if asyncio.iscoroutine(outcome):
                    outcome = await outcome
        except TimeoutError:
            raise ToolCallTimeout(f"{qualified_name} timed out after {limit:g} s", timeout=limit) from None
        assert isinstance(outcome, ToolResult)
        return outcome


def text_result(text: str, *, is_error: bool = False) -> ToolResult:
    return ToolResult(content=(ContentBlock("text", text=text),), is_error=is_error)


class Recorder:
    """An EventSink keeping every event it gets."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def kinds(self) -> list[str]:
        return [type(e).__name__ for e in self.events]
