"""McpHub: the connected MCP servers, their tools under qualified names, and routing of calls to them.

    async with McpHub(on_event=store.record) as hub:
        await hub.connect("demo", command=sys.executable, args=["-m", "synapse_nb.mcp_client.demo_server"])
        result = await hub.call("demo__list_tables", {})

Servers that crash are restarted on their next tool call (at most 3 times a minute, then they stay
"down" until `restart()`); listing or reading resources and prompts never restarts one. Every state
change is reported as a `ServerEvent` to `on_event` (info.TRANSITIONS lists them), which is how
panels keep up. One lock per server name orders connect, restart and disconnect of that name. A hub
belongs to the event loop that connected its servers: a request from another loop raises McpError.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from mcp import Client

from ..config import ApprovePolicy, ServerConfig, Transport, load_mcp_config
from ..errors import (
    McpError,
    ServerCrashedError,
    ServerStartError,
    ToolCallTimeout,
    UnknownServerError,
    UnknownToolError,
)
from ..events import ServerEvent
from ..oauth_settings import OAuthSettings
from ..protocols import EventSink, ProgressCallback
from ..types import ContentBlock, ToolResult, ToolSpec
from . import features
from .connection import ServerConnection
from .convert import prompt_info, prompt_result, resource_blocks, resource_info, tool_result
from .handlers import ClientHandlers, ServerHooks
from .info import PromptInfo, PromptResult, ResourceInfo, ServerInfo
from .logs import LEVELS, LogEntry, check_level
from .naming import assign_names
from .oauth.provider import OAuthSession
from .oauth.redirect import SignIn, default_sign_in
from .oauth.storage import TokenStore
from .process import kill_tree
from .tasks import validation_ready

__all__ = ["McpHub", "PromptInfo", "PromptResult", "ResourceInfo", "ServerInfo"]

logger = logging.getLogger("synapse_nb.mcp")

T = TypeVar("T")


class McpHub:
    """Connects MCP servers and offers their tools; satisfies `protocols.ToolSource`."""

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

    # --- connecting ------------------------------------------------------------------------------

    async def connect(
        self,
        name: str,
        *,
        command: str | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        transport: Transport | None = None,
        timeout: float | None = None,
        approve: ApprovePolicy | None = None,
        tools: Sequence[str] | None = None,
        connect_timeout: float | None = None,
        elicitation: str | None = None,
        sampling: str | None = None,
        roots: Sequence[str | Path] | None = None,
        log_level: str | None = None,
        oauth: OAuthSettings | Mapping[str, Any] | None = None,
        sign_in: SignIn | None = None,
    ) -> ServerInfo:
        """Start one server (stdio `command`, or `url` for streamable HTTP / SSE) and list its tools.

        An HTTP server that answers 401 with OAuth metadata is signed in to (the SDK's flow): `oauth`
        configures it (OAuthSettings, or the config file's `oauth` object), `sign_in` is the user's step
        (default: the hub's). Stored tokens are used first and refreshed when they expire.
        A server already connected under `name` is replaced unless its configuration is the same.
        Raises ServerStartError (the server stays listed as "failed", with its stderr tail), OAuthError
        when signing in did not work.
        """
        config = _config_from_args(
            name, command=command, args=args, env=env, cwd=cwd, url=url, headers=headers, transport=transport,
            timeout=timeout, approve=approve, tools=tools, connect_timeout=connect_timeout,
            elicitation=elicitation, sampling=sampling, roots=roots, log_level=log_level,
            oauth=OAuthSettings.from_mapping(oauth) if isinstance(oauth, Mapping) else oauth,
        )
        return await self._start(config, sign_in=sign_in)

    async def connect_in_process(
        self,
        name: str,
        server: object,
        *,
        timeout: float | None = None,
        approve: ApprovePolicy | None = None,
        tools: Sequence[str] | None = None,
        connect_timeout: float | None = None,
    ) -> ServerInfo:
        """Connect an in-process server object (`mcp.server.mcpserver.MCPServer` or a lowlevel `Server`).

        The SDK pairs the client with it in memory: no process, no pipes. For embedded servers and
        for tests of everything above the transport. Its ServerInfo says transport "memory".
        """
        config = _config_from_args(
            name, command=None, args=(), env=None, cwd=None, url=None, headers=None, transport=None,
            timeout=timeout, approve=approve, tools=tools, connect_timeout=connect_timeout, in_process=server,
        )
        return await self._start(config, server)

    async def connect_config(
        self, path: str | Path | None = None, *, sign_in: SignIn | None = None,
    ) -> dict[str, ServerInfo | ServerStartError]:
        """Connect every enabled server of the config file (DESIGN.md section 5) at once.

        Servers that need a sign-in ask for it one after the other (through `sign_in`, default the
        hub's); the others connect meanwhile. Never raises for one bad server: its entry in the result
        is the ServerStartError. A file that cannot be read or parsed raises ConfigError.
        """
        configs = [c for c in load_mcp_config(path).values() if not c.disabled]
        results = await asyncio.gather(*(self._start_quiet(c, sign_in) for c in configs))
        return {c.name: r for c, r in zip(configs, results, strict=True)}

    async def _start_quiet(self, config: ServerConfig, sign_in: SignIn | None = None) -> ServerInfo | ServerStartError:
        try:
            return await self._start(config, sign_in=sign_in)
        except ServerStartError as exc:
            logger.warning("%s", exc)
            return exc

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

    # --- OAuth (oauth/) ----------------------------------------------------------------------------

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

    def has_tokens(self, name: str) -> bool:
        """Whether OAuth tokens are stored for the server's URL (a reconnect needs no sign-in)."""
        url = self._conn(name).config.url
        return url is not None and self.token_store is not None and self.token_store.has_tokens(url)

    async def logout(self, name: str) -> bool:
        """Forget the server's stored OAuth tokens and registered client, and disconnect it.

        Returns whether anything was stored. The next connect signs in afresh."""
        conn = self._conn(name)
        url = conn.config.url
        if url is None:
            raise McpError(f"MCP server {name!r} is a stdio server; it has no OAuth sign-in", server=name)
        await self.disconnect(name)
        store = self.token_store if self.token_store is not None else TokenStore()
        return await asyncio.to_thread(store.forget, url)

    async def authenticate(self, name: str, *, sign_in: SignIn | None = None) -> ServerInfo:
        """Sign in to the server again (its stored tokens are dropped, its registered client kept) and reconnect.

        Raises OAuthError when the sign-in does not work (the server is then "failed")."""
        config = self._conn(name).config
        if config.url is None:
            raise McpError(f"MCP server {name!r} is a stdio server; it has no OAuth sign-in", server=name)
        store = self.token_store if self.token_store is not None else TokenStore()
        await asyncio.to_thread(store.forget_tokens, config.url)
        self.token_store = store
        async with self._lock(name):
            old = self._conns.get(name)
            if old is not None:
                await old.stop(reason="signing in again")
        return await self._start(config, sign_in=sign_in)

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

    # --- calling ---------------------------------------------------------------------------------

    async def call(
        self, qualified_name: str, arguments: Mapping[str, Any], timeout: float | None = None,
        *, on_progress: ProgressCallback | None = None,
    ) -> ToolResult:
        """Call a tool by qualified name. `is_error` results are returned; failures raise McpError subclasses.

        `on_progress(progress, total, message)` sees the server's progress reports; each report also
        pushes the timeout back (at most to `max_total_timeout` seconds in all).
        Raises UnknownToolError, ToolCallTimeout (the call is cancelled on the server),
        ServerCrashedError (the server died; the next call restarts it), ServerDownError, and
        McpError for a tool that needs MCP tasks.
        """
        spec = self.tool(qualified_name)
        assert spec.server is not None
        assert spec.original_name is not None
        self._check_loop()
        if spec.needs_task:
            raise McpError(f"tool {qualified_name!r} needs MCP tasks, which this client does not support yet",
                           server=spec.server)
        conn = self._conn(spec.server)
        if conn.state != "connected":
            conn = await self._ensure_running(conn)
        limit = timeout if timeout is not None else (conn.config.timeout or self.default_timeout)
        tool, args = spec.original_name, dict(arguments)
        if conn.validates(tool):
            await validation_ready()
        started = time.perf_counter()

        async def run(client: Client) -> ToolResult | None:
            result = await features.call_tool(client, tool, args, timeout=limit, max_total=self.max_total_timeout,
                                              on_progress=on_progress, on_url_required=conn.hooks.url_required,
                                              deadlines=conn.hooks.deadlines)
            return None if result is None else tool_result(result, (time.perf_counter() - started) * 1000)

        # the deadline lives in features.call_tool, where progress reports can move it
        result = await conn.request(run, f"tool {tool!r}", None)
        if result is None:
            raise ToolCallTimeout(
                f"tool {tool!r} on MCP server {conn.name!r} did not finish within {limit:g} s; it was cancelled",
                server=conn.name, timeout=limit,
            )
        return result

    async def list_resources(self, name: str) -> list[ResourceInfo]:
        async def run(client: Client) -> list[ResourceInfo]:
            if client.server_capabilities.resources is None:
                return []
            return [resource_info(r) for r in (await client.list_resources()).resources]

        return await self._request(name, run, "resources/list")

    async def read_resource(self, name: str, uri: str) -> tuple[ContentBlock, ...]:
        async def run(client: Client) -> tuple[ContentBlock, ...]:
            return resource_blocks(await client.read_resource(uri))

        return await self._request(name, run, f"resources/read {uri!r}")

    async def list_prompts(self, name: str) -> list[PromptInfo]:
        async def run(client: Client) -> list[PromptInfo]:
            if client.server_capabilities.prompts is None:
                return []
            return [prompt_info(p) for p in (await client.list_prompts()).prompts]

        return await self._request(name, run, "prompts/list")

    async def get_prompt(self, name: str, prompt: str, arguments: Mapping[str, str] | None = None) -> PromptResult:
        args = {k: str(v) for k, v in (arguments or {}).items()}

        async def run(client: Client) -> PromptResult:
            return prompt_result(await client.get_prompt(prompt, args))

        return await self._request(name, run, f"prompt {prompt!r}")

    # --- client features (handlers.py, features.py) -----------------------------------------------

    def logs(self, name: str, n: int | None = None, *, level: str = "debug") -> list[LogEntry]:
        """The server's last `n` log messages (all kept when None) at `level` or above, oldest first."""
        return self._conn(name).hooks.log_ring.tail(n, level)

    async def set_log_level(self, name: str, level: str) -> None:
        """Ask the server for log messages at `level` and above (they land in `logs(name)`).

        On a 2026-07-28 connection the level travels in each request's _meta, fixed when the client
        connects: there it applies from the next (re)connection."""
        conn = self._conn(name)
        conn.hooks.log_level = check_level(level)
        await self._request(name, lambda client: features.set_log_level(client, check_level(level)),
                            "logging/setLevel")

    def roots(self, name: str) -> tuple[Path, ...]:
        """The directories this client offers the server as roots."""
        return self._conn(name).hooks.roots

    async def set_roots(self, name: str, paths: Sequence[str | Path]) -> tuple[Path, ...]:
        """Replace the server's roots and tell it (notifications/roots/list_changed); returns them resolved."""
        conn = self._conn(name)
        roots = conn.hooks.set_roots(paths)
        await self._request(name, features.notify_roots_changed, "roots/list_changed")
        self._emit(name, "roots_changed", {"roots": [str(p) for p in roots]})
        return roots

    async def subscribe(self, name: str, uri: str) -> None:
        """Subscribe to a resource; its updates reach `handlers.on_resource_updated(server, uri)`."""
        await self._request(name, lambda client: features.subscribe(client, uri), f"resources/subscribe {uri!r}")

    async def unsubscribe(self, name: str, uri: str) -> None:
        await self._request(name, lambda client: features.unsubscribe(client, uri), f"resources/unsubscribe {uri!r}")

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


def _config_from_args(
    name: str,
    *,
    command: str | None,
    args: Sequence[str],
    env: Mapping[str, str] | None,
    cwd: str | Path | None,
    url: str | None,
    headers: Mapping[str, str] | None,
    transport: Transport | None,
    timeout: float | None,
    approve: ApprovePolicy | None,
    tools: Sequence[str] | None,
    connect_timeout: float | None,
    in_process: object | None = None,
    elicitation: str | None = None,
    sampling: str | None = None,
    roots: Sequence[str | Path] | None = None,
    log_level: str | None = None,
    oauth: OAuthSettings | None = None,
) -> ServerConfig:
    problems: list[str] = []
    if not isinstance(name, str) or not name.strip():
        problems.append("the server needs a non-empty name")
    if in_process is not None:
        pass  # no command, no url: the SDK pairs a client with the object itself
    elif (command is None) == (url is None):
        problems.append("give either command (stdio) or url (http, sse), not both or neither")
    kind: Transport = transport or ("stdio" if command is not None else "http")
    if kind not in ("stdio", "http", "sse"):
        problems.append(f"transport must be stdio, http or sse (got {kind!r})")
    elif (kind == "stdio") != (command is not None):
        problems.append(f"transport {kind} does not fit {'command' if command is not None else 'url'}")
    for label, value in (("timeout", timeout), ("connect_timeout", connect_timeout)):
        if value is not None and not value > 0:
            problems.append(f"{label} must be a positive number of seconds")
    for label, seq in (("args", args), ("tools", tools)):
        if isinstance(seq, str):
            problems.append(f"{label} must be a list of strings, not one string")
    verdicts = [approve] if isinstance(approve, str) else list(approve.values()) if approve is not None else []
    if any(v not in ("auto", "ask", "deny") for v in verdicts):
        problems.append("approve must be auto, ask, deny, or a mapping of tool patterns to those")
    choices: tuple[tuple[str, str | None, tuple[str, ...]], ...] = (
        ("elicitation", elicitation, ("ask", "decline")), ("sampling", sampling, ("ask", "auto", "deny")),
        ("log_level", log_level, LEVELS),
    )
    for label, chosen, allowed in choices:
        if chosen is not None and chosen not in allowed:
            problems.append(f"{label} must be one of {', '.join(allowed)}")
    if isinstance(roots, str):
        problems.append("roots must be a list of paths, not one string")
    if oauth is not None and kind == "stdio":
        problems.append("oauth applies to http and sse servers only")
    return ServerConfig(
        name=name,
        transport=kind,
        command=command,
        args=tuple(str(a) for a in args),
        env=dict(env or {}),
        cwd=str(cwd) if cwd is not None else None,
        url=url,
        headers=dict(headers or {}),
        timeout=timeout,
        connect_timeout=connect_timeout,
        approve=dict(approve) if isinstance(approve, Mapping) else approve,
        tools=tuple(tools) if tools is not None else None,
        elicitation=elicitation,
        sampling=sampling,
        roots=tuple(str(r) for r in roots) if roots is not None and not isinstance(roots, str) else None,
        log_level=log_level,
        oauth=oauth,
        problem=f"server {name!r}: " + "; ".join(problems) if problems else None,
        display=f"in-process {type(in_process).__name__}" if in_process is not None else "",
    )
