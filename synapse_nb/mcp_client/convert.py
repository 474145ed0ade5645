"""SDK values to synapse values: tools, call results, content blocks, resources and prompts.

The only module that reads the SDK's pydantic models field by field; nothing SDK-typed leaves mcp_client.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import mcp.types as mt

from ..types import ContentBlock, Message, Role, ToolResult, ToolSpec, ToolUi
from .info import PromptArgument, PromptInfo, PromptResult, ResourceInfo, ResourceTemplateInfo

__all__ = [
    "RawTool",
    "content_block",
    "prompt_info",
    "prompt_result",
    "raw_tool",
    "resource_blocks",
    "resource_info",
    "resource_template_info",
    "tool_result",
    "tool_ui",
]

_EMPTY_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True, slots=True)
class RawTool:
    """A tool as its server lists it (server-side name), converted once when the list arrives."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    annotations: Mapping[str, Any]
    validated: bool = False
    """It declares an output schema: the SDK checks its results with jsonschema."""
    task_support: Literal["forbidden", "optional", "required"] | None = None
    ui: ToolUi | None = None
    """Its MCP Apps View (`_meta.ui`), parsed once here."""
    title: str | None = None

    def spec(self, qualified: str, server: str) -> ToolSpec:
        return ToolSpec(
            name=qualified,
            description=self.description,
            input_schema=self.input_schema,
            server=server,
            original_name=self.name,
            annotations=self.annotations,
            task_support=self.task_support,
            ui=self.ui,
            title=self.title,
        )


def raw_tool(tool: mt.Tool) -> RawTool:
    annotations: dict[str, Any] = {}
    if tool.annotations is not None:
        annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True)
    title = tool.title or annotations.get("title")
    description = tool.description or (str(title) if title else "")
    schema = tool.input_schema if isinstance(tool.input_schema, dict) and tool.input_schema else dict(_EMPTY_SCHEMA)
    task_support = tool.execution.task_support if tool.execution is not None else None
    return RawTool(tool.name, description, schema, annotations, validated=bool(tool.output_schema),
                   task_support=task_support, ui=tool_ui(tool.meta), title=str(title) if title else None)


_VISIBILITY = ("model", "app")


def tool_ui(meta: Mapping[str, Any] | None) -> ToolUi | None:
    """A tool's `_meta.ui` (MCP Apps) as a ToolUi; None when it has neither a View nor a visibility.

    The older flat key `_meta["ui/resourceUri"]` is read when `ui` has no `resourceUri`. A tool may declare
    a visibility without a View of its own (server-system-monitor's app-only `poll-system-stats`): its
    `resource_uri` is "". A missing or malformed `visibility` means the spec's default (model and app);
    unknown entries are dropped.
    """
    if not isinstance(meta, Mapping):
        return None
    ui = meta.get("ui")
    ui = ui if isinstance(ui, Mapping) else {}
    uri = ui.get("resourceUri", meta.get("ui/resourceUri"))
    uri = uri if isinstance(uri, str) else ""
    declared = ui.get("visibility")
    if not isinstance(declared, list | tuple):
        return ToolUi(uri) if uri else None
    return ToolUi(uri, tuple(v for v in _VISIBILITY if v in declared))


def content_block(block: Any) -> ContentBlock:
    """One SDK content block, annotations kept; unknown kinds become text holding their JSON, so nothing is lost."""
    notes = _annotations(block)
    if isinstance(block, mt.TextContent):
        return ContentBlock("text", text=block.text, annotations=notes)
    if isinstance(block, mt.ImageContent):
        return ContentBlock("image", data=block.data, mime_type=block.mime_type, annotations=notes)
    if isinstance(block, mt.AudioContent):
        return ContentBlock("audio", data=block.data, mime_type=block.mime_type, annotations=notes)
    if isinstance(block, mt.ResourceLink):
        return ContentBlock("resource_link", uri=str(block.uri), name=block.name, mime_type=block.mime_type,
                            annotations=notes, description=block.description)
    if isinstance(block, mt.EmbeddedResource):
        return dataclasses.replace(_resource_contents(block.resource), annotations=notes)
    dump = block.model_dump(mode="json", by_alias=True, exclude_none=True) if hasattr(block, "model_dump") else block
    return ContentBlock("text", text=json.dumps(dump, default=str))


def _annotations(block: Any) -> dict[str, Any] | None:
    notes = getattr(block, "annotations", None)
    if notes is None or not hasattr(notes, "model_dump"):
        return None
    dumped: dict[str, Any] = notes.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped or None


def _resource_contents(contents: mt.TextResourceContents | mt.BlobResourceContents) -> ContentBlock:
    if isinstance(contents, mt.TextResourceContents):
        return ContentBlock("resource", text=contents.text, uri=str(contents.uri), mime_type=contents.mime_type)
    return ContentBlock("resource", data=contents.blob, uri=str(contents.uri), mime_type=contents.mime_type)


def tool_result(result: mt.CallToolResult, duration_ms: float) -> ToolResult:
    structured = result.structured_content
    if structured is not None and not isinstance(structured, Mapping):
        structured = {"result": structured}  # the 2026 wire allows any JSON value; ToolResult keeps a mapping
    return ToolResult(
        content=tuple(content_block(b) for b in result.content),
        structured_content=structured,
        is_error=bool(result.is_error),
        duration_ms=duration_ms,
    )


def resource_info(resource: mt.Resource) -> ResourceInfo:
    return ResourceInfo(
        uri=str(resource.uri),
        name=resource.name,
        description=resource.description,
        mime_type=resource.mime_type,
        size=resource.size,
    )


def resource_template_info(template: mt.ResourceTemplate) -> ResourceTemplateInfo:
    return ResourceTemplateInfo(
        uri_template=template.uri_template,
        name=template.name,
        description=template.description,
        mime_type=template.mime_type,
    )


def resource_blocks(result: mt.ReadResourceResult) -> tuple[ContentBlock, ...]:
    return tuple(_resource_contents(c) for c in result.contents)


def prompt_info(prompt: mt.Prompt) -> PromptInfo:
    return PromptInfo(
        name=prompt.name,
        description=prompt.description,
        arguments=tuple(
            PromptArgument(a.name, a.description, bool(a.required)) for a in (prompt.arguments or ())
        ),
    )


def prompt_result(result: mt.GetPromptResult) -> PromptResult:
    return PromptResult(result.description, tuple(_prompt_message(m) for m in result.messages))


def _prompt_message(message: mt.PromptMessage) -> Message:
    block = content_block(message.content)
    role: Role = "assistant" if message.role == "assistant" else "user"
    if block.kind == "image":
        return Message(role, "", images=(block,))
    return Message(role, ToolResult(content=(block,)).text)

