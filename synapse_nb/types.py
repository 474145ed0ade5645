"""Value objects shared by every layer: messages, tool calls and results, tool specs (and their MCP Apps
Views), usage."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

__all__ = [
    "READ_ONLY_HINTS",
    "ContentBlock",
    "Message",
    "Role",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "ToolUi",
    "UiResource",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]
"""Who said a message; `tool` carries one tool result back to the model."""

BlockKind = Literal["text", "image", "audio", "resource_link", "resource"]


@dataclass(frozen=True, slots=True)
class ContentBlock:
    """One piece of a tool result: text, an image or audio (base64 `data`), a resource link or an embedded resource.

    `annotations` are the MCP block's (`audience`, `priority`, `lastModified`) as sent; `description`
    is a resource link's.
    """

    kind: BlockKind
    text: str | None = None
    data: str | None = None
    mime_type: str | None = None
    uri: str | None = None
    name: str | None = None
    annotations: Mapping[str, Any] | None = field(default=None, hash=False)
    description: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict without the empty fields."""
        d = {k: getattr(self, k) for k in self.__slots__ if getattr(self, k) is not None}  # type: ignore[attr-defined]
        if self.annotations is not None:
            d["annotations"] = dict(self.annotations)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ContentBlock:
        keys = ("kind", "text", "data", "mime_type", "uri", "name", "annotations", "description")
        return cls(**{k: d[k] for k in keys if k in d})


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A model's request to run one tool: `name` is the qualified name offered to the model."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": dict(self.arguments)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ToolCall:
        return cls(id=str(d["id"]), name=str(d["name"]), arguments=dict(d.get("arguments") or {}))


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returned, in full: content blocks, structured content, error flag and duration.

    `text` is the plain-text rendering sent to the model (before bounding); images travel as blocks.
    """

    content: tuple[ContentBlock, ...] = ()
    structured_content: Mapping[str, Any] | None = None
    is_error: bool = False
    duration_ms: float = 0.0

    @property
    def text(self) -> str:
        """Text blocks joined, with placeholders for non-text blocks; structured content if nothing else."""
        parts: list[str] = []
        for b in self.content:
            if b.kind in ("text", "resource") and b.text is not None:
                parts.append(b.text)
            elif b.kind == "resource_link":
                parts.append(f"[resource {b.name or ''} {b.uri or ''}]".replace("  ", " "))
            else:
                parts.append(f"[{b.kind} {b.mime_type or ''}]".replace(" ]", "]"))
        if not parts and self.structured_content is not None:
            parts.append(json.dumps(self.structured_content, default=str))
        return "\n".join(parts)

    @property
    def images(self) -> tuple[ContentBlock, ...]:
        return tuple(b for b in self.content if b.kind == "image" and b.data)

    def to_dict(self) -> dict[str, Any]:
        return {
            "content": [b.to_dict() for b in self.content],
            "structured_content": None if self.structured_content is None else dict(self.structured_content),
            "is_error": self.is_error,
            "duration_ms": self.duration_ms,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ToolResult:
        return cls(
            content=tuple(ContentBlock.from_dict(b) for b in d.get("content") or ()),
            structured_content=d.get("structured_content"),
            is_error=bool(d.get("is_error", False)),
            duration_ms=float(d.get("duration_ms", 0.0)),
        )

    @classmethod
    def error(cls, text: str, duration_ms: float = 0.0) -> ToolResult:
        """An error result carrying one line of text, as sent back to the model."""
        return cls(content=(ContentBlock("text", text=text),), is_error=True, duration_ms=duration_ms)


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation.

    An assistant message may carry `tool_calls`; a `tool` message answers one call (`tool_call_id`),
    with `content` the (bounded) text the model sees, `is_error`, and `images` it may be shown.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    images: tuple[ContentBlock, ...] = ()

    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", text)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", text)

    @classmethod
    def assistant(cls, text: str = "", tool_calls: tuple[ToolCall, ...] = ()) -> Message:
        return cls("assistant", text, tool_calls=tool_calls)

    @classmethod
    def tool(
        cls, tool_call_id: str, content: str, *, name: str | None = None, is_error: bool = False,
        images: tuple[ContentBlock, ...] = (),
    ) -> Message:
        return cls("tool", content, tool_call_id=tool_call_id, name=name, is_error=is_error, images=images)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            d["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            d["name"] = self.name
        if self.is_error:
            d["is_error"] = True
        if self.images:
            d["images"] = [b.to_dict() for b in self.images]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Message:
        return cls(
            role=d["role"],
            content=d.get("content") or "",
            tool_calls=tuple(ToolCall.from_dict(c) for c in d.get("tool_calls") or ()),
            tool_call_id=d.get("tool_call_id"),
            name=d.get("name"),
            is_error=bool(d.get("is_error", False)),
            images=tuple(ContentBlock.from_dict(b) for b in d.get("images") or ()),
        )


APP_MIME_TYPE = "text/html;profile=mcp-app"
"""The MIME type of an MCP Apps View (`ui://` resource), advertised with the extension `io.modelcontextprotocol/ui`."""


@dataclass(frozen=True, slots=True)
class ToolUi:
    """A tool's MCP Apps View (its `_meta.ui`): the `ui://` resource to render and who may call the tool.

    `visibility` is as the server declared it (default both): a tool without "model" is never offered to
    the model; a View may call only tools with "app". `resource_uri` is "" for a tool that declares a
    visibility but has no View of its own (an app-only helper its server's Views call).
    """

    resource_uri: str
    visibility: tuple[str, ...] = ("model", "app")

    @property
    def for_model(self) -> bool:
        """The model may be offered this tool."""
        return "model" in self.visibility

    @property
    def for_app(self) -> bool:
        """A View of the same server may call this tool."""
        return "app" in self.visibility


@dataclass(frozen=True, slots=True)
class UiResource:
    """A View's HTML, read from its `ui://` resource, with the resource's `_meta.ui` (the read content item's
    wins over the `resources/list` entry's).

    `csp` holds the declared `connectDomains`, `resourceDomains`, `frameDomains`, `baseUriDomains` as the
    server gave them (the View's policy is built from them, restrictive when empty); `permissions` the
    iframe permissions it asks for (camera, microphone, geolocation, clipboardWrite); `domain` and
    `prefers_border` its rendering hints.
    """

    uri: str
    html: str
    mime_type: str = APP_MIME_TYPE
    csp: Mapping[str, Any] = field(default_factory=dict, hash=False)
    permissions: Mapping[str, Any] = field(default_factory=dict, hash=False)
    domain: str | None = None
    prefers_border: bool | None = None


READ_ONLY_HINTS: Mapping[str, bool] = MappingProxyType(
    {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False})
"""The annotations of the kernel's own read-only tools (held results' SQL, tool search, skills): never asked about."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as offered to the model.

    `name` is the qualified, sanitised name (`SERVER__TOOL` for MCP tools, the function name for native
    tools); `server` is None for native tools; `original_name` is the name the server knows;
    `task_support` is the MCP tool's `execution.taskSupport`, when it says; `ui` its MCP Apps View, if any;
    `origin` is recorded as the origin of the model's calls of it (None: "agent").
    `title` the MCP tool's human-readable title, when it has one (the tool search reads it).
    """

    name: str
    description: str
    input_schema: Mapping[str, Any]
    server: str | None = None
    original_name: str | None = None
    annotations: Mapping[str, Any] = field(default_factory=dict)
    task_support: Literal["forbidden", "optional", "required"] | None = None
    ui: ToolUi | None = None
    origin: str | None = None  # who serves it when not its server: `view:SERVER`, a tool an MCP Apps View registered
    title: str | None = None

    @property
    def for_model(self) -> bool:
        """The tool may be offered to the model (no View, or a View whose visibility includes "model")."""
        return self.ui is None or self.ui.for_model

    @property
    def needs_task(self) -> bool:
        """The MCP server runs this tool only as a task (`execution.taskSupport: required`)."""
        return self.task_support == "required"

    @property
    def destructive_hint(self) -> bool | None:
        """What the tool says about side effects: False when it says it only reads (`readOnlyHint`) or
        that its changes are not destructive (`destructiveHint: false`), True when it says destructive,
        None when an MCP tool says nothing. A native tool (no server) that says nothing is False: it is
        the user's own function in the kernel, not a server's."""
        if self.annotations.get("readOnlyHint", False):
            return False
        hint = self.annotations.get("destructiveHint")
        if hint is None:
            return None if self.server is not None else False
        return bool(hint)

    @property
    def destructive(self) -> bool:
        """The tool may delete or overwrite data: it says so, or it is an MCP tool that says nothing (MCP's
        ToolAnnotations default `destructiveHint` to true when `readOnlyHint` is false), so the approval
        policy asks before it runs."""
        return self.destructive_hint is not False


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one or more LLM calls, and what they cost.

    `input_tokens` counts every prompt token, cached or not; `cached_input_tokens` (read from the
    provider's prompt cache) and `cache_write_tokens` (written to it) are the parts of it billed at the
    cache prices. `cost_usd` is None when a model has no known price ("cost unknown"); a sum with an
    unknown part is unknown, never a guess.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = 0.0

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        return Usage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens,
            self.cached_input_tokens + other.cached_input_tokens, self.cache_write_tokens + other.cache_write_tokens,
            cost,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens
