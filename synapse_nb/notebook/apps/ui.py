"""What the notebook reads of a tool's MCP Apps UI (the hub's `ToolSpec.ui`), and the wire forms a View gets.

The hub (mcp_client) puts a `ToolUi` on each ToolSpec of a tool that declares `_meta.ui` (`resource_uri`,
`for_model`, `for_app`); this module is the one place the notebook layer asks those questions, so the View
code does not repeat them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...types import ToolResult, ToolSpec

__all__ = ["callable_from_view", "resource_uri", "tool_wire", "wire_result", "with_defaults"]


def resource_uri(spec: ToolSpec) -> str | None:
    """The `ui://` View of the tool, or None when it has none (or only a visibility)."""
    return spec.ui.resource_uri if spec.ui is not None and spec.ui.resource_uri else None


def callable_from_view(spec: ToolSpec) -> bool:
    """A View may call a tool whose visibility includes "app" (the spec's default visibility has it)."""
    return spec.ui is None or spec.ui.for_app


def tool_wire(spec: ToolSpec) -> dict[str, Any]:
    """The tool as the View's host context names it (`toolInfo.tool`): its own name, description, schema."""
    return {"name": spec.original_name or spec.name, "description": spec.description,
            "inputSchema": dict(spec.input_schema)}


def wire_result(result: ToolResult) -> dict[str, Any]:
    """A ToolResult as the MCP CallToolResult wire dict a View receives (`content`, `structuredContent`,
    `isError`): text, images, audio and resource links as content blocks."""
    content: list[dict[str, Any]] = []
    for block in result.content:
        if block.kind in ("image", "audio") and block.data is not None:
            content.append({"type": block.kind, "data": block.data, "mimeType": block.mime_type or "image/png"})
        elif block.kind == "resource_link" and block.uri is not None:
            content.append({"type": "resource_link", "uri": block.uri, "name": block.name or block.uri})
        elif block.text is not None:
            content.append({"type": "text", "text": block.text})
    if not content and result.text:
        content.append({"type": "text", "text": result.text})
    wire: dict[str, Any] = {"content": content, "isError": bool(result.is_error)}
    if result.structured_content is not None:
        wire["structuredContent"] = result.structured_content
    return wire


def with_defaults(spec: ToolSpec, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with the input schema's top-level defaults filled in where none was given (what the
    inspector's form shows in an empty field): a View reads its tool input, not what the server did with the
    gaps (server-sheet-music's View got `{}` and drew nothing, while the server had used its default tune)."""
    properties = spec.input_schema.get("properties")
    filled = dict(arguments)
    if not isinstance(properties, Mapping):
        return filled
    for name, node in properties.items():
        if name not in filled and isinstance(node, Mapping) and "default" in node:
            filled[str(name)] = node["default"]
    return filled
