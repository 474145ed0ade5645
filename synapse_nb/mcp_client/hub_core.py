"""HubCore: a hub's connections by name, started and stopped under per-name locks on the loop that owns them."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar

from mcp import Client

from ..config import ServerConfig
from ..errors import McpError, ServerCrashedError, ServerStartError, UnknownServerError, UnknownToolError
from ..events import ServerEvent
from ..protocols import EventSink
from ..types import ToolSpec
from . import features
from .connection import ServerConnection
from .handlers import ClientHandlers, ServerHooks
from .info import ServerInfo
from .logs import check_level
from .naming import assign_names
from .oauth.provider import OAuthSession
from .oauth.redirect import SignIn, default_sign_in
from .oauth.storage import TokenStore
from .process import kill_tree

__all__ = ["HubCore"]

logger = logging.getLogger("synapse_nb.mcp")

T = TypeVar("T")


class HubCore:
    """The registry of connections and tools, their locks, event loop, events and exit cleanup; McpHub builds on it."""

    def __init__(
        self, *, on_event: EventSink | None = None, default_timeout: float = 120.0,
        handlers: ClientHandlers | None = None, max_total_timeout: float = 600.0,
        token_store: TokenStore | None = None, sign_in: SignIn | None = None,
    ) -> None:
        """`handlers` answer servers' elicitation and sampling requests (see handlers.py); a call that
        reports progress may run past its timeout, each report pushing the deadline back, up to
        `max_total_timeout` seconds. HTTP servers that ask for OAuth keep their tokens in `token_store`
        (default: TokenStore(), the keyring or a 0600 file under the data directory) and are signed in
        to through `sign_in` (default: log the link, wait for the browser at the loopback listener)."""
        self.token_store = token_store
        self.sign_in = sign_in
        self.default_timeout = default_timeout
        self.max_total_timeout = max_total_timeout
        self.handlers = handlers if handlers is not None else ClientHandlers()
        self._on_event = on_event
        self._conns: dict[str, ServerConnection] = {}
        self._specs: dict[str, ToolSpec] = {}
        self._atexit: Callable[[], None] | None = None
        self._locks: dict[str, asyncio.Lock] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing: set[asyncio.Task[None]] = set()  # stops that outlive a cancelled caller

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        states = ", ".join(f"{c.name}={c.state}" for c in self._conns.values())
        return f"<McpHub servers=[{states}] tools={len(self._specs)}>"

    # --- what is connected -----------------------------------------------------------------------

    @property
    def servers(self) -> list[ServerInfo]:
        """Every server added to the hub (connected or not), in the order they were added."""
        return [c.info() for c in self._conns.values()]

    def server(self, name: str) -> ServerInfo:
        return self._conn(name).info()

    def server_config(self, name: str) -> ServerConfig:
        """The server's configuration (its repr masks env and header values)."""
        return self._conn(name).config

    @property
    def tools(self) -> list[ToolSpec]:
        """The tools offered to the model, named `SERVER__TOOL` (see naming.py), allow-lists applied.

        Tools that only run as MCP tasks are left out (this client cannot run tasks yet); `all_tools` has them.
        """
        return [t for t in self._specs.values() if not t.needs_task]

    @property
    def all_tools(self) -> list[ToolSpec]:
        """Every listed tool, including those marked `needs_task` (for `%mcp tools` and the inspector)."""
        return list(self._specs.values())

    def tool(self, qualified_name: str) -> ToolSpec:
        spec = self._specs.get(qualified_name)
        if spec is None:
            raise UnknownToolError(
                f"no MCP tool named {qualified_name!r}; `%mcp tools` (or hub.tools) lists them", tool=qualified_name
            )
        return spec

    # --- starting and stopping ---------------------------------------------------------------------

    async def _start(self, config: ServerConfig, server: object | None = None, *,
                     sign_in: SignIn | None = None) -> ServerInfo:
        self._adopt_loop()
        # The name's lock: a second connect of the same name waits, then finds the first one's server
        # (same config: kept) or replaces it; it never starts a process the registry then forgets.
        async with self._lock(config.name):
            old = self._conns.get(config.name)
            if old is not None:
                if old.config == config and old.inproc is server and old.state == "connected":
                    return old.info()
                await old.stop(reason="replaced")
            emit = self._emitter(config.name)
            hooks = ServerHooks(config, self.handlers, emit)
            conn = ServerConnection(config, emit=emit, on_tools=self._tools_changed, server=server, hooks=hooks,
                                    oauth=self._oauth_session(config, sign_in))
            self._conns[config.name] = conn
            self._install_atexit()
            try:
                await conn.start()
            finally:
                self._rebuild()
        if config.log_level is not None:
            await self._apply_log_level(conn, config.log_level)
        return conn.info()

    async def _apply_log_level(self, conn: ServerConnection, level: str) -> None:
        """The configured log level, asked of a 2025-era server right after connecting (2026-07-28 sets it in
        every request's _meta instead); a server without logging only costs a warning."""
        try:
            await self._request(conn.name, lambda client: features.set_log_level(client, check_level(level)),
                                "logging/setLevel")
        except McpError as exc:
            logger.warning("MCP server %r: could not set its log level to %s: %s", conn.name, level, exc)

    async def restart(self, name: str) -> ServerInfo:
        """Stop and start a server again (also one that failed or is down); resets its restart budget."""
        self._check_loop()
        async with self._lock(name):
            conn = self._conn(name)
            try:
                await conn.restart(automatic=False)
            finally:
                self._rebuild()
            return conn.info()

    def _oauth_session(self, config: ServerConfig, sign_in: SignIn | None) -> OAuthSession | None:
        """HTTP servers get the OAuth side: a look at the token store and a loopback port per connect; the
        flow itself only runs when the server answers 401 (or 403 insufficient_scope)."""
        if config.url is None or config.transport == "stdio":
            return None
        if self.token_store is None:
            self.token_store = TokenStore()
        # one sign-in at a time across servers: a user answers one prompt at once
        return OAuthSession(config.name, config.url, config.oauth, self.token_store,
                            sign_in or self.sign_in or default_sign_in, turn=self._lock("\0sign-in"))

    async def disconnect(self, name: str) -> None:
        """Close the session and end the server's process; its tools disappear.

        A caller cancelled meanwhile does not cut this short: the process still ends (see `aclose`).
        """
        self._check_loop()
        async with self._lock(name):
            conn = self._conn(name)
            await self._outlasting(self._drop([conn]))

    async def aclose(self) -> None:
        """Disconnect every server (each bounded: close, then kill after 5 s).

        Runs in a task of its own that the caller awaits through `asyncio.shield`: cancelling the caller,
        even with a plain `task.cancel()`, still ends every process and answers the requests in flight.
        """
        if self._conns:
            self._check_loop()
        await self._outlasting(self._drop(list(self._conns.values())))
        if self._atexit is not None and not self._conns:
            atexit.unregister(self._atexit)
            self._atexit = None

    async def _drop(self, conns: list[ServerConnection]) -> None:
        await asyncio.gather(*(c.stop() for c in conns), return_exceptions=True)
        for conn in conns:
            if self._conns.get(conn.name) is conn:
                del self._conns[conn.name]
        self._rebuild()

    async def _outlasting(self, coro: Awaitable[None]) -> None:
        """Await `coro` in a task of its own that goes on if the caller is cancelled."""
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        await asyncio.shield(task)

    # --- requests ----------------------------------------------------------------------------------

    async def _request(self, name: str, run: Callable[[Client], Awaitable[T]], label: str) -> T:
        """Resources and prompts: a server that is not connected says so; it is not restarted for this
        (opening an inspector must not restart a crashed server; a tool call or `restart()` does)."""
        self._check_loop()
        conn = self._conn(name)
        return await conn.request(run, label, conn.config.timeout or self.default_timeout)

    async def _ensure_running(self, conn: ServerConnection) -> ServerConnection:
        """A crashed server is restarted here, on its next tool call; a down one raises ServerDownError."""
        async with self._lock(conn.name):
            conn = self._conns.get(conn.name, conn)  # replaced meanwhile: the current one
            if conn.state == "down":
                raise conn.down_error()
            if conn.state != "crashed":
                return conn  # connected by now, or stopped or failed: the request itself says so
            try:
                await conn.restart(automatic=True)
            except ServerStartError as exc:
                if conn.info().state == "down":  # the failed restart spent the budget
                    raise conn.down_error() from exc
                raise ServerCrashedError(
                    f"MCP server {conn.name!r} crashed and did not restart: {exc.reason}", server=conn.name
                ) from exc
            finally:
                self._rebuild()
            return conn

    # --- ownership -------------------------------------------------------------------------------

    def _lock(self, name: str) -> asyncio.Lock:
        lock = self._locks.get(name)
        if lock is None:
            lock = self._locks[name] = asyncio.Lock()
        return lock

    def _adopt_loop(self) -> None:
        """The first connect (or one after every server is gone) makes the running loop the owner."""
        loop = asyncio.get_running_loop()
        if self._loop is None or (not self._conns and not self._closing) or self._loop.is_closed():
            if self._loop is not loop:
                self._locks.clear()  # an asyncio.Lock belongs to the loop it was first used on
            self._loop = loop
        else:
            self._check_loop()

    def _check_loop(self) -> None:
        """The servers' owner tasks, locks and streams live on one loop; a request from another cannot work."""
        loop = asyncio.get_running_loop()
        if self._loop is not None and loop is not self._loop and not self._loop.is_closed():
            raise McpError(
                "this McpHub belongs to the event loop that connected its servers, and was called from another "
                "one (another thread, or a second asyncio.run); call it from its own loop, e.g. with "
                "asyncio.run_coroutine_threadsafe(hub.call(...), loop)"
            )

    # --- registry and events ---------------------------------------------------------------------

    def _conn(self, name: str) -> ServerConnection:
        conn = self._conns.get(name)
        if conn is None:
            known = ", ".join(self._conns) or "none"
            raise UnknownServerError(f"no MCP server named {name!r} (connected: {known})", server=name)
        return conn

    def _tools_changed(self, conn: ServerConnection) -> None:
        if self._conns.get(conn.name) is conn:
            self._rebuild()

    def _rebuild(self) -> None:
        offered = [(c.name, t) for c in self._conns.values() for t in c.offered()]
        names = assign_names((server, t.name) for server, t in offered)
        self._specs = {names[(s, t.name)]: t.spec(names[(s, t.name)], s) for s, t in offered}

    def _emitter(self, server: str) -> Callable[[str, Mapping[str, Any]], None]:
        return lambda event, detail: self._emit(server, event, detail)

    def _emit(self, server: str, event: str, detail: Mapping[str, Any]) -> None:
        logger.info("MCP server %r: %s %s", server, event, {k: v for k, v in detail.items() if k != "stderr_tail"})
        if self._on_event is None:
            return
        try:
            self._on_event(ServerEvent(server=server, event=event, detail=dict(detail)))
        except Exception:  # a sink must not raise (protocols.EventSink); if one does, the hub goes on
            logger.exception("event sink failed on a server event")

    def _install_atexit(self) -> None:
        """Kill server processes still running when the interpreter exits without aclose()."""
        if self._atexit is not None:
            return
        ref = weakref.ref(self)

        def cleanup() -> None:
            hub = ref()
            if hub is not None:
                for conn in list(hub._conns.values()):
                    if conn.process is not None:
                        with contextlib.suppress(Exception):
                            kill_tree(conn.process, grace=0.5)

        self._atexit = cleanup
        atexit.register(cleanup)

