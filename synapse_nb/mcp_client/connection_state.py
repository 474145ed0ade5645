"""ConnectionState: one MCP server's state, its checked transitions, restart budget and recorded failures."""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import anyio

from ..config import ServerConfig
from ..errors import McpError, ServerCrashedError, ServerDownError, ServerStartError
from .convert import RawTool
from .failure import Scrubber, describe, is_connection_lost, request_error
from .handlers import ClientHandlers, ServerHooks
from .inflight import Session
from .info import EVENT_OF, TRANSITIONS, ServerInfo, ServerState, ServerTransport
from .naming import qualify
from .oauth.provider import OAuthSession
from .process import ProcessRef, StderrRing

__all__ = ["MAX_RESTARTS", "RESTART_WINDOW", "ConnectionState", "Emit"]

logger = logging.getLogger("synapse_nb.mcp")

Emit = Callable[[str, Mapping[str, Any]], None]

MAX_RESTARTS = 3
RESTART_WINDOW = 60.0
"""At most MAX_RESTARTS automatic restarts within RESTART_WINDOW seconds; the next crash leaves it down."""


class ConnectionState:
    """What a ServerConnection knows about its server, and the one way (`_move`) its state changes."""

    def __init__(
        self, config: ServerConfig, *, emit: Emit,
        server: object | None = None, hooks: ServerHooks | None = None, oauth: OAuthSession | None = None,
    ) -> None:
        self.config = config
        self.oauth = oauth  # HTTP servers: the OAuth side (sign-in, tokens); its failures become OAuthErrors
        self.hooks = hooks if hooks is not None else ServerHooks(config, ClientHandlers(), emit)
        self.state: ServerState = "stopped"  # until start(): nothing runs yet
        self.ever_connected = False
        self.tools: tuple[RawTool, ...] = ()
        self.last_error: str | None = None
        self.process: ProcessRef | None = None
        self.restarts = 0
        self.ring = StderrRing()
        self.skipped_messages = 0
        self.inproc = server
        self._scrub = Scrubber(config)
        self._emit = emit
        self._restart_times: deque[float] = deque()
        self._generation = 0
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self._session: Session | None = None
        self._life: anyio.CancelScope | None = None
        self._tools_dirty: asyncio.Event | None = None
        self._meta: dict[str, Any] = {}
        self._restart: str | None = None  # "automatic" or "manual" while a restart is connecting
        self._stopper: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def transport(self) -> ServerTransport:
        return "memory" if self.inproc is not None else self.config.transport

    def info(self) -> ServerInfo:
        c = self.config
        return ServerInfo(
            name=c.name,
            transport=self.transport,
            state=self.state,
            pid=self.process.pid if self.process is not None and self.state == "connected" else None,
            tool_count=len(self.offered()),
            last_error=self.last_error,
            stderr_tail=self.ring.tail(),
            command=c.display if self.transport == "stdio" else None,
            url=c.display if self.transport in ("http", "sse") else None,
            restarts=self.restarts,
            ever_connected=self.ever_connected,
            **self._meta,
        )

    def _move(self, to: ServerState, detail: Mapping[str, Any]) -> None:
        """The one place a state changes: checked against info.TRANSITIONS, then reported as a ServerEvent
        (named after the new state; "restarted" for "connected" at the end of a restart)."""
        was = self.state
        if to == was:
            return
        if to not in TRANSITIONS[was]:
            raise RuntimeError(f"MCP server {self.name!r}: no transition from {was} to {to}")
        self.state = to
        event = "restarted" if to == "connected" and self._restart is not None else EVENT_OF[to]
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

    def validates(self, tool: str) -> bool:
        """The tool declares an output schema, so the SDK validates its results (see tasks.validation_ready)."""
        return any(t.validated for t in self.tools if t.name == tool)

    # --- restart budget ----------------------------------------------------------------------------

    def restart_budget_left(self) -> int:
        now = time.monotonic()
        while self._restart_times and now - self._restart_times[0] > RESTART_WINDOW:
            self._restart_times.popleft()
        return MAX_RESTARTS - len(self._restart_times)

    def down_error(self) -> ServerDownError:
        return ServerDownError(
            f"MCP server {self.name!r} crashed {MAX_RESTARTS + 1} times within {RESTART_WINDOW:g} s and stays down; "
            f"run `%mcp restart {self.name}` (or `await hub.restart({self.name!r})`) to start it again",
            server=self.name,
        )

    # --- errors and failure ------------------------------------------------------------------------

    def _request_error(self, exc: Exception, gen: int, label: str) -> McpError:
        if not is_connection_lost(exc):
            return request_error(exc, self.name, label, self._scrub)
        if self._stopping:
            return self._interrupted(label)
        self._mark_dead(gen, f"connection lost during {label}: {self._scrub(describe(exc))}")
        return self._crashed_error(label)

    def _interrupted(self, label: str) -> McpError:
        if self.state in ("crashed", "down"):
            return self._crashed_error(label)
        return McpError(f"MCP server {self.name!r} was disconnected during {label}", server=self.name)

    def _crashed_error(self, label: str) -> ServerCrashedError:
        then = (
            f"it crashed too often and stays down: run `%mcp restart {self.name}`"
            if self.state == "down" else "the next call restarts it"
        )
        return ServerCrashedError(f"MCP server {self.name!r} crashed during {label}; {then}", server=self.name)

    def _eof_threadsafe(self, loop: asyncio.AbstractEventLoop, gen: int) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is left to tell
            loop.call_soon_threadsafe(self._on_stderr_eof, gen)

    def _on_stderr_eof(self, gen: int, checks: int = 0) -> None:
        # A dying process closes its files before it turns into a zombie: look again for up to a second
        # before concluding that it only closed its stderr.
        if self.process is not None and self.process.alive():
            if checks < 20 and gen == self._generation:
                asyncio.get_running_loop().call_later(0.05, self._on_stderr_eof, gen, checks + 1)
            elif checks >= 20:
                logger.debug("MCP server %r closed its stderr but is still running", self.name)
            return
        self._mark_dead(gen, "the server process exited")

    def _mark_dead(self, gen: int, reason: str) -> None:
        """The connection of generation `gen` is gone: record it, tell the hub, end the owner task."""
        if gen != self._generation or self._stopping or self.state != "connected":
            return
        self.last_error = reason
        down = self.restart_budget_left() <= 0
        self._move("down" if down else "crashed", {
            "reason": str(self.down_error()) if down else reason, "pid": self.process.pid if self.process else None,
            "stderr_tail": self.ring.tail(1000),
        })
        if self._session is not None and self._session.gen == gen:
            self._session.stop.set()

    def _failed(self, reason: str, stderr_tail: str = "", error: ServerStartError | None = None) -> ServerStartError:
        """Starting did not work: "failed", or after an automatic restart "crashed"/"down" (tried again later).

        `error` is the error to raise when it is more precise than a ServerStartError (an OAuthError)."""
        self.last_error = reason
        tail = stderr_tail or self.ring.tail(2000)
        to: ServerState = "failed"
        if self._restart == "automatic":
            to = "down" if self.restart_budget_left() <= 0 else "crashed"
        self._move(to, {"reason": reason, "stderr_tail": tail})
        if error is not None:
            return error
        last = tail.strip().splitlines()[-1:] if tail.strip() else []
        hint = f" (stderr: {last[0][:200]})" if last else ""
        return ServerStartError(
            f"MCP server {self.name!r} failed to start: {reason}{hint}", server=self.name, reason=reason,
            stderr_tail=tail,
        )
