"""ConnectionState: what is known about one MCP server, the one way its state changes, its restart budget.

A ServerConnection owns one (`conn.state`) and drives it; everything here is plain bookkeeping on the
event loop: no tasks, no SDK.
"""

from __future__ import annotations

import fnmatch
import re
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Literal

from ..config import ServerConfig
from ..errors import McpError, ServerCrashedError, ServerDownError, ServerStartError
from .convert import RawTool
from .failure import Scrubber
from .info import EVENT_OF, TRANSITIONS, ServerInfo, ServerState, ServerTransport
from .naming import qualify
from .process import ProcessRef, StderrRing

__all__ = ["MAX_RESTARTS", "RESTART_WINDOW", "ConnectionState", "Emit", "RestartKind"]

Emit = Callable[[str, Mapping[str, Any]], None]
RestartKind = Literal["automatic", "manual"]

MAX_RESTARTS = 3
RESTART_WINDOW = 60.0
"""At most MAX_RESTARTS automatic restarts within RESTART_WINDOW seconds; the next crash leaves it down."""


class ConnectionState:
    """One server's state (`current`), tools, process, failures and restarts; every change of `current`
    goes through `move`, checked against info.TRANSITIONS and reported as a ServerEvent through `emit`."""

    def __init__(self, config: ServerConfig, transport: ServerTransport, emit: Emit) -> None:
        self.config = config
        self.transport = transport
        self.current: ServerState = "stopped"  # until the first start: nothing runs yet
        self.ever_connected = False
        self._tools: tuple[RawTool, ...] = ()
        self._validated: frozenset[str] = frozenset()
        self.last_error: str | None = None
        self.process: ProcessRef | None = None
        self.restarts = 0
        self.restart: RestartKind | None = None  # while a restart is connecting
        self.ring = StderrRing(clean=Scrubber(config))
        self.closing = False  # a stop is ending the session and the process (ServerConnection._halt_now)
        self.skipped_messages = 0
        self._emit = emit
        self._restart_times: deque[float] = deque()
        self._meta: dict[str, Any] = {}

    @property
    def name(self) -> str:
        return self.config.name

    def info(self) -> ServerInfo:
        c = self.config
        return ServerInfo(
            name=c.name,
            transport=self.transport,
            state=self.current,
            pid=self.process.pid if self.process is not None and (self.current == "connected" or self.closing)
            else None,
            tool_count=len(self.offered()),
            last_error=self.last_error,
            stderr_tail=self.ring.tail(),
            command=c.display if self.transport == "stdio" else None,
            url=c.display if self.transport in ("http", "sse") else None,
            restarts=self.restarts,
            ever_connected=self.ever_connected,
            closing=self.closing,
            protocol_pin=c.protocol if c.protocol not in (None, "auto") else None,
            **self._meta,
        )

    def move(self, to: ServerState, detail: Mapping[str, Any]) -> None:
        """The one place the state changes: checked against info.TRANSITIONS, then reported as a ServerEvent
        (named after the new state; "restarted" for "connected" at the end of a restart)."""
        was = self.current
        if to == was:
            return
        if to not in TRANSITIONS[was]:
            raise RuntimeError(f"MCP server {self.name!r}: no transition from {was} to {to}")
        self.current = to
        event = "restarted" if to == "connected" and self.restart is not None else EVENT_OF[to]
        self._emit(event, {**detail, "from": was})

    def offered(self) -> list[RawTool]:
        """The tools the allow-list (`tools` globs, matched on the server-side or qualified name) admits."""
        patterns = self.config.tools
        if patterns is None:
            return list(self.tools)
        return [
            t for t in self.tools
            if any(fnmatch.fnmatchcase(t.name, p) or fnmatch.fnmatchcase(qualify(self.name, t.name), p)
                   for p in patterns)
        ]

    @property
    def tools(self) -> tuple[RawTool, ...]:
        """The server's tools as it last listed them."""
        return self._tools

    @tools.setter
    def tools(self, tools: tuple[RawTool, ...]) -> None:
        self._tools = tools
        self._validated = frozenset(t.name for t in tools if t.validated)  # looked up on every call

    def validates(self, tool: str) -> bool:
        """The tool declares an output schema, so the SDK validates its results (see tasks.validation_ready)."""
        return tool in self._validated

    # --- the steps of a connection's life ----------------------------------------------------------

    def connecting(self) -> None:
        """A (re)start begins: what the last connection knew is gone."""
        self.tools = ()
        self.process = None
        self._meta = {}
        self.move("connecting", {"transport": self.transport, "restart": self.restart, "restarts": self.restarts,
                                 "reason": self.last_error if self.restart == "automatic" else None})

    def connected(self, meta: Mapping[str, Any], tools: tuple[RawTool, ...]) -> None:
        """The handshake and the first tool listing are done; `meta` holds ServerInfo's server_* and timing fields."""
        self._meta = dict(meta)
        self.tools = tools
        self.last_error = None
        self.ever_connected = True
        self.move("connected", {
            "transport": self.transport, "pid": self.process.pid if self.process else None,
            "tools": len(self.offered()), "connect_ms": self._meta["connect_ms"],
            "discovery_ms": self._meta["discovery_ms"], "protocol_version": self._meta["protocol_version"],
            "restarts": self.restarts, "restart": self.restart,
        })

    def relisted(self, tools: tuple[RawTool, ...]) -> None:
        """The server's tools were listed again after it announced a change."""
        before = {t.name for t in self.tools}
        after = {t.name for t in tools}
        self.tools = tools
        self._emit("tools_changed", {"added": sorted(after - before), "removed": sorted(before - after),
                                     "tools": len(self.offered())})

    def died(self, reason: str) -> None:
        """The connected server is gone: "crashed" (the next tool call restarts it), or "down" once the
        restart budget is spent."""
        self.last_error = reason
        down = self.restart_budget_left() <= 0
        self.move("down" if down else "crashed", {
            "reason": str(self.down_error()) if down else reason, "pid": self.process.pid if self.process else None,
            "stderr_tail": self.ring.tail(1000),
        })

    def failed(self, reason: str, stderr_tail: str = "", error: ServerStartError | None = None) -> ServerStartError:
        """Starting did not work: "failed", or after an automatic restart "crashed"/"down" (tried again later).

        Returns the error to raise: `error` when it is more precise than a ServerStartError (an OAuthError)."""
        tail = stderr_tail or self.ring.tail(2000)
        said = last_meaningful_line(tail)
        hint = f" (stderr: {said[:200]})" if said else ""
        self.last_error = reason + hint  # what the server said about why: %mcp list and the inspector show it
        to: ServerState = "failed"
        if self.restart == "automatic":
            to = "down" if self.restart_budget_left() <= 0 else "crashed"
        self.move(to, {"reason": reason, "stderr_tail": tail})
        if error is not None:
            return error
        return ServerStartError(
            f"MCP server {self.name!r} failed to start: {reason}{hint}", server=self.name, reason=reason,
            stderr_tail=tail,
        )

    # --- restart budget ----------------------------------------------------------------------------

    def count_restart(self, automatic: bool) -> None:
        """An automatic restart spends budget; a manual one (`%mcp restart`) gives it all back."""
        if automatic:
            self._restart_times.append(time.monotonic())
        else:
            self._restart_times.clear()

    def restart_budget_left(self) -> int:
        now = time.monotonic()
        while self._restart_times and now - self._restart_times[0] > RESTART_WINDOW:
            self._restart_times.popleft()
        return MAX_RESTARTS - len(self._restart_times)

    # --- the errors its state explains ---------------------------------------------------------------

    def down_error(self) -> ServerDownError:
        return ServerDownError(
            f"MCP server {self.name!r} crashed {MAX_RESTARTS + 1} times within {RESTART_WINDOW:g} s and stays down; "
            f"run `%mcp restart {self.name}` (or `await hub.restart({self.name!r})`) to start it again",
            server=self.name,
        )

    def not_running_error(self, label: str) -> McpError:
        """A request came while the server is not connected (it is not restarted for it here)."""
        if self.current == "down":
            return self.down_error()
        return ServerCrashedError(f"MCP server {self.name!r} is {self.info().status} (it cannot run {label})",
                                  server=self.name)

    def interrupted_error(self, label: str) -> McpError:
        """A request the connection ended because the server stopped or crashed under it."""
        if self.current in ("crashed", "down"):
            return self.crashed_error(label)
        return McpError(f"MCP server {self.name!r} was disconnected during {label}", server=self.name)

    def crashed_error(self, label: str) -> ServerCrashedError:
        then = (
            f"it crashed too often and stays down: run `%mcp restart {self.name}`"
            if self.current == "down" else f"the next call {self.info().comes_back}"
        )
        return ServerCrashedError(f"MCP server {self.name!r} crashed during {label}; {then}", server=self.name)


_NOISE = re.compile(r"^(?:\s+at |\s*File \"|\s*\^[\^~ ]*$|Traceback \(|Node\.js v\d|\s*[~^]+\s*$|\s*\}?\s*$)")
"""Lines of a stderr tail that say where, not why: stack frames (Node's `    at ...`, Python's `  File "..."`),
carets under a line, Node's closing `Node.js v22...`, a lone brace."""


def last_meaningful_line(tail: str) -> str | None:
    """The last line of a stderr tail that says something (not a stack frame, a caret line or a blank)."""
    for line in reversed(tail.splitlines()):
        if line.strip() and not _NOISE.match(line):
            return line.strip()
    return None
