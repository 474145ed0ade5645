"""The tools MCP Apps Views registered, offered to the model and callable from Python (issue 36, item 2).

`ViewTools` is an AgentTool (agent/turn.py's `agent_tools`): each turn offers the tools of the kernel's live Views
that declared some, named `view_SERVER__TOOL` (the latest View of a server wins a name), described as the View's;
the agent asks approval under the turn's policy (a tool that says nothing about side effects asks) and records the
call as any, with origin `view:SERVER` (ToolSpec.origin). `ViewCalls` is Python's way in (`await view.call_tool(name,
...)`): a person's own call, not asked about, recorded with approval `manual` and the same origin.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...events import ToolCallFinished, utcnow
from ...mcp_client.naming import qualify
from ...types import ContentBlock, ToolCall, ToolResult, ToolSpec
from .app_tools import AppToolError

if TYPE_CHECKING:
    from ..recording.router import EventRouter
    from .view import AppView

__all__ = ["ViewCalls", "ViewTools", "origin_of", "tool_result_of", "view_tool_spec"]


def origin_of(view: AppView) -> str:
    """What the history records as the origin of a call of a View's tool: `view:SERVER`."""
    return f"view:{view.server}"


def view_tool_spec(view: AppView, tool: Mapping[str, Any]) -> ToolSpec:
    """One of the View's tools as the model is offered it."""
    name = str(tool.get("name"))
    opened_by = str(view.tool.get("name") or "")
    what = str(tool.get("description") or tool.get("title") or "").strip()
    schema = tool.get("inputSchema")
    annotations = tool.get("annotations")
    return ToolSpec(
        name=qualify(f"view_{view.server}", name),
        description=(f"A tool of the interactive view {view.server}.{opened_by} ({view.resource_uri}) the user has "
                     f"open in the notebook; it answers from what the view shows now. {what}").strip(),
        input_schema=dict(schema) if isinstance(schema, Mapping) else {"type": "object", "properties": {}},
        server=view.server, original_name=name,
        annotations=dict(annotations) if isinstance(annotations, Mapping) else {},
        origin=origin_of(view),
    )


def tool_result_of(wire: Mapping[str, Any], duration_ms: float) -> ToolResult:
    """A View's CallToolResult wire dict as a ToolResult: text, images and audio, resource links; structured
    content; `isError`."""
    blocks: list[ContentBlock] = []
    for block in wire.get("content") or []:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            blocks.append(ContentBlock("text", text=block["text"]))
        elif kind in ("image", "audio") and isinstance(block.get("data"), str):
            blocks.append(ContentBlock(kind, data=block["data"], mime_type=block.get("mimeType")))
        elif kind == "resource_link" and isinstance(block.get("uri"), str):
            blocks.append(ContentBlock("resource_link", uri=block["uri"], name=block.get("name")))
    structured = wire.get("structuredContent")
    return ToolResult(content=tuple(blocks), is_error=bool(wire.get("isError")),
                      structured_content=dict(structured) if isinstance(structured, Mapping) else None,
                      duration_ms=duration_ms)


async def call_view(view: AppView, name: str, arguments: Mapping[str, Any]) -> ToolResult:
    """Call the View's tool through its browser view; a View that cannot answer is an error result."""
    started = time.perf_counter()
    try:
        wire = await view.app_tools.call(name, arguments)
    except AppToolError as exc:
        return ToolResult.error(f"{view.server} view's {name}: {exc}",
                                duration_ms=(time.perf_counter() - started) * 1000)
    return tool_result_of(wire, (time.perf_counter() - started) * 1000)


class ViewTools:
    """The AgentTool of the Views' tools: `views()` gives the kernel's live Views, in the order they opened."""

    def __init__(self, views: Callable[[], Sequence[AppView]]) -> None:
        self._views = views

    def _offered(self) -> dict[str, tuple[AppView, ToolSpec]]:
        offered: dict[str, tuple[AppView, ToolSpec]] = {}
        for view in self._views():  # a later View of the same server's tool takes the name
            for tool in view.app_tools.tools:
                spec = view_tool_spec(view, tool)
                offered[spec.name] = (view, spec)
        return offered

    def specs(self) -> Sequence[ToolSpec]:
        return [spec for _view, spec in self._offered().values()]

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        found = self._offered().get(name)
        if found is None:
            return ToolResult.error(f"no open view has the tool {name!r} any more (its view was closed)")
        view, spec = found
        return await call_view(view, spec.original_name or name, arguments)


class ViewCalls:
    """Python's calls of a View's tools (`AppView.call_tool`): run through the browser and recorded as the session's
    hand calls are (approval `manual`), with origin `view:SERVER`."""

    def __init__(self, router: EventRouter, session_id: Callable[[], str]) -> None:
        """`router` records the calls; `session_id` gives the current session's id ("" before its first turn)."""
        self._router = router
        self._session_id = session_id

    async def call(self, view: AppView, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        call = ToolCall(uuid.uuid4().hex, qualify(f"view_{view.server}", name), dict(arguments))
        started_at = utcnow()
        result = await call_view(view, name, arguments)
        self._router.record(ToolCallFinished(
            session_id=self._session_id(), call=call, server=view.server, tool=name, approval="manual",
            started_at=started_at, duration_ms=result.duration_ms, result=result,
            error=None, origin=origin_of(view),
        ))
        return result
