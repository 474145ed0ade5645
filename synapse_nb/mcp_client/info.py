"""What the hub tells about servers, resources and prompts: frozen values without SDK types or secrets."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Literal

from ..types import Message

__all__ = ["PromptArgument", "PromptInfo", "PromptResult", "ResourceInfo", "ServerInfo", "ServerState"]

ServerState = Literal["connecting", "connected", "crashed", "stopped", "failed", "down"]
"""connecting: starting or restarting; connected: usable; crashed: died, the next call restarts it;
stopped: disconnected on purpose; failed: could not start; down: crashed too often, stays down until
`%mcp restart NAME`."""


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """A snapshot of one server. `command`/`url` are shown as configured, without credentials."""

    name: str
    transport: Literal["stdio", "http", "sse"]
    state: ServerState
    pid: int | None = None
    tool_count: int = 0
    last_error: str | None = None
    stderr_tail: str = field(default="", repr=False)
    command: str | None = None
    url: str | None = None
    restarts: int = 0
    server_name: str | None = None
    server_version: str | None = None
    protocol_version: str | None = None
    connected_at: _dt.datetime | None = None
    connect_ms: float | None = None
    discovery_ms: float | None = None


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """One resource a server lists."""

    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None


@dataclass(frozen=True, slots=True)
class PromptArgument:
    """One argument of a prompt template."""

    name: str
    description: str | None = None
    required: bool = False


@dataclass(frozen=True, slots=True)
class PromptInfo:
    """One prompt template a server lists."""

    name: str
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()


@dataclass(frozen=True, slots=True)
class PromptResult:
    """A rendered prompt: messages ready to send (text in `content`, images in `images`)."""

    description: str | None
    messages: tuple[Message, ...]
