"""Native Python tools (`@tool`, schema from signature and docstring) and the ToolRegistry joining them to MCP."""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import inspect
import json
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, TypeVar, overload

from ..errors import ConfigError, ToolCallTimeout, UnknownToolError
from ..protocols import ProgressCallback, ToolSource
from ..types import ContentBlock, ToolResult, ToolSpec
from .schema import ToolArguments

__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "NativeTool",
    "ToolRegistry",
    "error_line",
    "native_tool",
    "tool",
]

logger = logging.getLogger("synapse_nb.agent")

DEFAULT_TOOL_TIMEOUT = 120.0
"""Seconds a tool call may take when nobody said otherwise (DESIGN section 6)."""
TOOL_THREADS = 32
"""Worker threads for sync native tools: enough that the calls of one reply run side by side on any machine
(the loop's default executor has only min(32, cpus + 4))."""

TOOL_ATTR = "__synapse_tool__"
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

F = TypeVar("F", bound=Callable[..., Any])


def error_line(exc: BaseException) -> str:
    """`Type: message` on one line: what the model is told when a tool raised."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass(frozen=True, slots=True)
class NativeTool:
    """A Python function offered to the model as a tool: its spec and how to call it."""

    spec: ToolSpec
    fn: Callable[..., Any]
    is_async: bool
    arguments: ToolArguments

    async def __call__(self, arguments: Mapping[str, Any], executor: Executor | None = None) -> ToolResult:
        """Run the function; anything it raises becomes an error result (one line: type and message).

        Sync functions run in a worker thread (of `executor`, else the loop's default) so that a slow
        one cannot block the event loop.
        """
        started = time.perf_counter()
        try:
            args, kwargs = self._bind(arguments)
            if self.is_async:
                value = await self.fn(*args, **kwargs)
            else:
                call = functools.partial(contextvars.copy_context().run, self.fn, *args, **kwargs)
                value = await asyncio.get_running_loop().run_in_executor(executor, call)
        except Exception as exc:  # the tool's own failure is data for the model, not a crash
            logger.debug("native tool %s raised", self.spec.name, exc_info=True)
            return ToolResult.error(error_line(exc), duration_ms=(time.perf_counter() - started) * 1000)
        result = to_tool_result(value)
        return dataclasses.replace(result, duration_ms=(time.perf_counter() - started) * 1000)

    def _bind(self, arguments: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        return self.arguments.bind(arguments)  # TypeError naming each argument that does not fit


def to_tool_result(value: Any) -> ToolResult:
    """Turn what a native tool returned into a ToolResult: text as is, JSON-able values as JSON."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, ContentBlock):
        return ToolResult(content=(value,))
    if isinstance(value, list | tuple) and value and all(isinstance(v, ContentBlock) for v in value):
        return ToolResult(content=tuple(value))
    if isinstance(value, str):
        return ToolResult(content=(ContentBlock("text", text=value),))
    if value is None or isinstance(value, dict | list | tuple | int | float | bool):
        text = json.dumps(value, default=str, ensure_ascii=False)
        structured = dict(value) if isinstance(value, dict) else (None if value is None else {"result": value})
        return ToolResult(content=(ContentBlock("text", text=text),), structured_content=structured)
    return ToolResult(content=(ContentBlock("text", text=str(value)),))


def native_tool(
    fn: Callable[..., Any], *, name: str | None = None, description: str | None = None,
    annotations: Mapping[str, Any] | None = None,
) -> NativeTool:
    """Build the NativeTool of a function (without marking the function)."""
    tool_name = name or str(getattr(fn, "__name__", ""))
    if not _NAME_RE.match(tool_name):
        raise ConfigError(
            f"tool name {tool_name!r} is not allowed: use 1-64 letters, digits, '_' or '-' (@tool(name=...))"
        )
    arguments = ToolArguments.of(fn)
    spec = ToolSpec(
        name=tool_name,
        description=description if description is not None else (arguments.description or tool_name),
        input_schema=arguments.input_schema,
        server=None,
        original_name=tool_name,
        annotations=dict(annotations or {}),
    )
    return NativeTool(spec=spec, fn=fn, is_async=inspect.iscoroutinefunction(fn), arguments=arguments)


@overload
def tool(fn: F, /) -> F: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None, annotations: Mapping[str, Any] | None = None
) -> Callable[[F], F]: ...
def tool(
    fn: F | None = None, /, *, name: str | None = None, description: str | None = None,
    annotations: Mapping[str, Any] | None = None,
) -> F | Callable[[F], F]:
    """Mark a function as a tool the agent may call: `@tool` or `@tool(name=..., description=...)`.

    The function is returned unchanged (still callable as before), carrying its NativeTool in an
    attribute; a ToolRegistry picks it up with `register(fn)` or `register_namespace(namespace)`.
    `annotations` are MCP-style hints, e.g. `{"destructiveHint": True}` makes approval ask by default.
    """

    def mark(f: F) -> F:
        setattr(f, TOOL_ATTR, native_tool(f, name=name, description=description, annotations=annotations))
        return f

    return mark(fn) if fn is not None else mark


def _marked(obj: Any) -> NativeTool | None:
    if not inspect.isroutine(obj):
        return None
    found = getattr(obj, TOOL_ATTR, None)
    return found if isinstance(found, NativeTool) else None


# -------------------------------------------------------------------------------------------- registry


class ToolRegistry:
    """Every tool the agent can offer: MCP tools of a source (read live) plus native Python tools.

    MCP tools keep their qualified `SERVER__TOOL` names; native tools are unprefixed. A native tool may
    not take the name of an MCP tool (refused when registered; if a server added later brings a clash,
    the native tool wins and the MCP tool is hidden, with a warning).

    A tool group (`register_group`) is a set of native tools served in process under a server name
    (`kernel__list_variables`, server "kernel"). Groups are opt-in: `specs()` offers a group's tools only
    when a pattern that starts with the group's `SERVER__` prefix selects them, so `None` and `*` leave
    them out and `kernel__*` (or `kernel__get_value`) turns them on.
    """

    def __init__(self, source: ToolSource | None = None, *, default_timeout: float = DEFAULT_TOOL_TIMEOUT) -> None:
        self.source = source
        self.default_timeout = default_timeout
        self._native: dict[str, NativeTool] = {}
        self._warned: set[str] = set()
        self._groups: dict[str, str] = {}  # tool name -> server of its opt-in group
        self._executor: ThreadPoolExecutor | None = None

    def close(self) -> None:
        """Release the worker threads of sync tools (calls still running finish in the background)."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def _threads(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(TOOL_THREADS, thread_name_prefix="synapse-tool")
        return self._executor

    # -- registering

    def register(
        self, fn: Callable[..., Any] | NativeTool, *, name: str | None = None, description: str | None = None
    ) -> ToolSpec:
        """Add a native tool (a `@tool` function, a plain function, or a NativeTool); a same-named one is replaced."""
        if isinstance(fn, NativeTool):
            native = fn
        else:
            marked = _marked(fn)
            if marked is not None and name is None and description is None:
                native = marked
            else:
                if marked is not None:
                    name = name or marked.spec.name
                    description = marked.spec.description if description is None else description
                native = native_tool(
                    fn, name=name, description=description, annotations=marked.spec.annotations if marked else None
                )
        tool_name = native.spec.name
        if any(s.name == tool_name for s in self._source_tools()):
            raise ConfigError(
                f"native tool {tool_name!r} has the name of an MCP tool; rename it with @tool(name=...)"
            )
        self._native[tool_name] = native
        return native.spec

    def register_namespace(self, namespace: Mapping[str, Any]) -> list[str]:
        """Register every `@tool`-decorated function found in a namespace (e.g. the notebook's); returns their names."""
        names: list[str] = []
        for value in list(namespace.values()):
            native = _marked(value)
            if native is not None:
                names.append(self.register(native).name)
        return names

    def register_group(self, server: str, tools: Iterable[NativeTool]) -> list[str]:
        """Add (or replace) an opt-in group of in-process tools served as `server` (see the class docstring).

        Each tool's spec must carry `server` and a name starting with `SERVER__`; returns the names.
        """
        prefix = f"{server}__"
        names: list[str] = []
        for native in tools:
            if native.spec.server != server or not native.spec.name.startswith(prefix):
                raise ConfigError(f"tool {native.spec.name!r} is not named {prefix}NAME with server {server!r}")
            self._native[native.spec.name] = native
            self._groups[native.spec.name] = server
            names.append(native.spec.name)
        return names

    def runs_here(self, name: str) -> bool:
        """Whether the tool of that name runs in this process (a native tool, or one of an opt-in group)."""
        return name in self._native

    def group_of(self, name: str) -> str | None:
        """The server of the opt-in group a tool belongs to, or None."""
        return self._groups.get(name)

    def unregister(self, name: str) -> None:
        """Remove a native tool (no error if it is not there)."""
        self._native.pop(name, None)
        self._groups.pop(name, None)

    @property
    def native(self) -> list[ToolSpec]:
        """The native tools (`@tool` functions and the like), not those of groups."""
        return [t.spec for t in self._native.values() if t.spec.name not in self._groups]

    @property
    def grouped(self) -> list[ToolSpec]:
        """The tools of opt-in groups (e.g. `kernel__*`), whether a cell offers them or not."""
        return [t.spec for t in self._native.values() if t.spec.name in self._groups]

    # -- looking up

    def _source_tools(self) -> Sequence[ToolSpec]:
        return () if self.source is None else self.source.tools

    def _all(self) -> list[ToolSpec]:
        specs: list[ToolSpec] = []
        for spec in self._source_tools():
            if spec.name in self._native:
                if spec.name not in self._warned:
                    self._warned.add(spec.name)
                    logger.warning("MCP tool %s is hidden by the native tool of the same name", spec.name)
                continue
            specs.append(spec)
        specs.extend(t.spec for t in self._native.values())
        return specs

    @property
    def tools(self) -> list[ToolSpec]:
        """All tools now (the registry is itself a ToolSource)."""
        return self._all()

    def specs(self, patterns: Iterable[str] | None = None) -> list[ToolSpec]:
        """The tools whose qualified names match any of the glob patterns (None: all; empty: none).

        A tool of an opt-in group matches only a pattern starting with its group's `SERVER__` prefix.
        """
        specs = self._all()
        if patterns is None:
            return [s for s in specs if s.name not in self._groups]
        pats = list(patterns)
        return [s for s in specs if any(self._selects(p, s.name) for p in pats)]

    def _selects(self, pattern: str, name: str) -> bool:
        group = self._groups.get(name)
        if group is not None and not pattern.startswith(f"{group}__"):
            return False
        return fnmatchcase(name, pattern)

    def spec(self, name: str) -> ToolSpec:
        """The tool by qualified name; UnknownToolError if there is none."""
        native = self._native.get(name)
        if native is not None:
            return native.spec
        for spec in self._source_tools():
            if spec.name == name:
                return spec
        raise UnknownToolError(f"no tool named {name!r}", tool=name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and any(s.name == name for s in self._all())

    def __len__(self) -> int:
        return len(self._all())

    # -- calling

    async def call(
        self, name: str, arguments: Mapping[str, Any], timeout: float | None = None,
        *, on_progress: ProgressCallback | None = None,
    ) -> ToolResult:
        """Run a tool. Native tools' exceptions come back as error results; raises UnknownToolError,
        ToolCallTimeout (and, for MCP tools, whatever the source raises: server crashed or down).

        `on_progress` goes to the source for MCP tools (their progress notifications); native tools
        report none."""
        native = self._native.get(name)
        if native is None:
            if self.source is None or not any(s.name == name for s in self.source.tools):
                raise UnknownToolError(f"no tool named {name!r}", tool=name)
            return await self.source.call(name, arguments, timeout, on_progress=on_progress)
        limit = self.default_timeout if timeout is None else timeout
        try:
            async with asyncio.timeout(limit):
                return await native(arguments, None if native.is_async else self._threads())
        except TimeoutError:
            raise ToolCallTimeout(f"tool {name!r} did not finish within {limit:g} s", timeout=limit) from None
