"""What the hub tells about servers, resources and prompts: frozen values without SDK types or secrets."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ..server_config import Transport
from ..types import Message

__all__ = [
    "EVENT_OF", "TRANSITIONS", "PromptArgument", "PromptInfo", "PromptResult", "ResourceInfo",
    "ResourceTemplateInfo", "ServerInfo", "ServerState", "ServerTransport",
]

ServerState = Literal["connecting", "connected", "crashed", "stopped", "failed", "down"]
"""connecting: starting or restarting; connected: usable; crashed: died, the next tool call restarts it;
stopped: disconnected on purpose; failed: could not start (never connected, or a restart did not);
down: crashed too often, stays down until `%mcp restart NAME`. TRANSITIONS below says which
changes are allowed; every change is reported as a ServerEvent named after the new state ("disconnected"
for stopped, "restarted" for connected again after a restart)."""

TRANSITIONS: Mapping[ServerState, frozenset[ServerState]] = {
    "connecting": frozenset({"connected", "failed", "crashed", "down", "stopped"}),
    "connected": frozenset({"connecting", "crashed", "down", "stopped"}),
    "crashed": frozenset({"connecting", "down", "stopped"}),
    "down": frozenset({"connecting", "stopped"}),
    "failed": frozenset({"connecting", "stopped"}),
    "stopped": frozenset({"connecting"}),
}
"""The allowed state changes (from -> to). A (re)start goes through "connecting"; an automatic restart
that does not come up lands on "crashed" (or "down" once the budget is spent), never back on "connected"."""

EVENT_OF: Mapping[ServerState, str] = {
    "connecting": "connecting", "connected": "connected", "crashed": "crashed", "down": "down",
    "failed": "failed", "stopped": "disconnected",
}
"""The ServerEvent name of a move into each state."""

ServerTransport = Transport | Literal["memory"]
"""How the hub talks to the server; "memory" is an in-process server object (tests, embedded servers)."""


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """A snapshot of one server. `command`/`url` are shown as configured, without credentials.

    `status` is the state in words for a listing, with what to do about it (e.g. "failed — `%mcp
    restart demo` to retry"; a remote server that went away is "unreachable", not "crashed"; a server stopped
    before it ever came up "failed to start" with the reason); `ever_connected` tells a server that never came
    up from one that did.
    """

    name: str
    transport: ServerTransport
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
    stateless: bool | None = None
    connected_at: _dt.datetime | None = None
    connect_ms: float | None = None
    discovery_ms: float | None = None
    ever_connected: bool = False
    closing: bool = False  # stopping: its session or process has not ended yet (`pid` says which process)
    protocol_pin: str | None = None  # the revision its config pins (`--protocol`, "protocol"); None: auto
    server_title: str | None = field(default=None, repr=False)  # what the server calls itself for people
    instructions: str | None = field(default=None, repr=False)  # what it tells a client about using it

    @property
    def protocol(self) -> str:
        """The negotiated protocol version in words: `2026-07-28 stateless` (each request carries it, no
        session), `2025-11-25` (an initialize handshake, a session), with `(pinned)` when the config pins the
        revision; "" before the first connection (`pinned 2025-11-25` when pinned)."""
        pinned = " (pinned)" if self.protocol_pin else ""
        if self.protocol_version is None:
            return f"pinned {self.protocol_pin}" if self.protocol_pin else ""
        return (f"{self.protocol_version} stateless" if self.stateless else self.protocol_version) + pinned

    @property
    def comes_back(self) -> str:
        """What the next call does for a crashed server: a process we started is started again; a remote
        server cannot be restarted from here, the client only connects to it again."""
        return "restarts it" if self.transport in ("stdio", "memory") else "reconnects"

    @property
    def usable(self) -> bool:
        """The server can take requests now (its tools are offered)."""
        return self.state == "connected"

    @property
    def status(self) -> str:
        """The state in words, with the command that gets the server going again where one is needed."""
        retry = f"`%mcp restart {self.name}`"
        if self.closing:
            pid = f" pid {self.pid}" if self.pid else ""
            return f"stopping{pid}… (`%mcp disconnect {self.name}` waits for it)"
        if self.state == "stopped" and not self.ever_connected and self.last_error:
            return f"failed to start: {self.last_error} — {retry} to retry"
        gone = "crashed" if self.transport in ("stdio", "memory") else "unreachable"  # a remote server went away
        return {
            "connecting": "connecting…",
            "connected": "connected",
            "crashed": f"{gone} — the next tool call {self.comes_back} (or {retry})",
            "stopped": f"disconnected — {retry} to connect again",
            "failed": f"failed — {retry} to retry",
            "down": f"down (crashed too often) — {retry} to start it again",
        }[self.state]


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """One resource a server lists."""

    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None


@dataclass(frozen=True, slots=True)
class ResourceTemplateInfo:
    """One resource template a server lists: a URI with `{variables}` (RFC 6570) to fill before reading."""

    uri_template: str
    name: str
    description: str | None = None
    mime_type: str | None = None


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
