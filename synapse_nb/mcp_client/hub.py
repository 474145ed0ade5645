"""McpHub: the connected MCP servers, their tools under qualified names, and routing of calls to them.

    async with McpHub(on_event=store.record) as hub:
        await hub.connect("demo", command=sys.executable, args=["-m", "synapse_nb.mcp_client.demo_server"])
        result = await hub.call("demo__list_tables", {})

Servers that crash are restarted on their next tool call (at most 3 times a minute, then they stay
"down" until `restart()`); listing or reading resources and prompts never restarts one. Every state
change is reported as a `ServerEvent` to `on_event` (info.TRANSITIONS lists them), which is how
panels keep up. One lock per server name orders connect, restart and disconnect of that name. A hub
belongs to the event loop that connected its servers: a request from another loop raises McpError.

The hub owns its table of connections (table.py) and hands each job to a collaborator it holds:
the loop and the per-name locks (loop_owner.py), OAuth tokens and sign-in (oauth/accounts.py), the
exit hook (exit_guard.py); each server is a ServerConnection (connection.py), which runs every
request under one deadline mechanism (inflight.py, deadline.py) and answers what the server asks
of the client through its ServerHooks (handlers.py). A tool call: `McpHub.call` ->
`ServerConnection.call_tool` -> `features.call_tool` -> the SDK.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from mcp import Client

from ..config import ApprovePolicy, ServerConfig, Transport, load_mcp_config
from ..errors import McpError, ServerCrashedError, ServerStartError
from ..events import ServerEvent, TaskCreated, TaskStatusChanged
from ..oauth_settings import OAuthSettings
from ..protocols import EventSink, ProgressCallback
from ..request_trace import RequestTracer
from ..server_config import parse_server
from ..task_state import TASK_ORIGIN, TaskState
from ..types import ContentBlock, ToolResult, ToolSpec, UiResource
from . import features, task_calls, ui
from .connection import ServerConnection
from .exit_guard import ExitGuard
from .handlers import ClientHandlers, ServerHooks
from .info import PromptInfo, PromptResult, ResourceInfo, ResourceTemplateInfo, ServerInfo
from .logs import LogEntry, check_level
from .loop_owner import LoopOwner
from .oauth.accounts import OAuthAccounts
from .oauth.redirect import SignIn
from .oauth.storage import TokenStore
from .skill_shelf import SkillShelf
from .table import ConnectionTable
from .task_watch import TaskWatch

__all__ = ["McpHub", "PromptInfo", "PromptResult", "ResourceInfo", "ServerInfo"]

logger = logging.getLogger("synapse_nb.mcp")

T = TypeVar("T")

_SIGN_IN_TURN = "\0sign-in"
"""The name of the lock that makes sign-ins wait for each other (no server can be named so)."""


class McpHub:
    """Connects MCP servers and offers their tools; satisfies `protocols.ToolSource`."""

    def __init__(
        self, *, on_event: EventSink | None = None, default_timeout: float = 120.0,
        handlers: ClientHandlers | None = None, max_total_timeout: float = 600.0,
        token_store: TokenStore | None = None, sign_in: SignIn | None = None,
        tracer: Callable[[], RequestTracer | None] | None = None,
    ) -> None:
        """`handlers` answer servers' elicitation and sampling requests (see handlers.py); a call that
        reports progress may run past its timeout, each report pushing the deadline back, up to
        `max_total_timeout` seconds. HTTP servers that ask for OAuth keep their tokens in `token_store`
        (default: TokenStore(), the keyring or a 0600 file under the data directory) and are signed in
        to through `sign_in` (default: log the link, wait for the browser at the loopback listener).
        `tracer()` gives the maker of client spans for MCP requests while tracing is on (None: off)."""
        self.default_timeout = default_timeout
        self.max_total_timeout = max_total_timeout
        self.handlers = handlers if handlers is not None else ClientHandlers()
        self._on_event = on_event
        self.tracer = tracer
        self._table = ConnectionTable()
        self._loop = LoopOwner()
        self._accounts = OAuthAccounts(token_store, sign_in)
        self._exit = ExitGuard(self._table)
        self._closing: set[asyncio.Task[None]] = set()  # stops that outlive a cancelled caller
        self.skills = SkillShelf(self._table, self._request)
        """The servers' skills (SEP-2640): listed as they connect, loaded on demand (skill_shelf.py)."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        states = ", ".join(f"{c.name}={c.state.current}" for c in self._table)
        return f"<McpHub servers=[{states}] tools={len(self._table.specs)}>"

    @property
    def token_store(self) -> TokenStore | None:
        """Where OAuth tokens are kept (None until an HTTP server needs one, unless given)."""
        return self._accounts.token_store

    @token_store.setter
    def token_store(self, store: TokenStore | None) -> None:
        self._accounts.token_store = store

    @property
    def sign_in(self) -> SignIn | None:
        """The default sign-in step for servers that ask for OAuth (None: log the link, wait at the loopback)."""
        return self._accounts.sign_in

    @sign_in.setter
    def sign_in(self, sign_in: SignIn | None) -> None:
        self._accounts.sign_in = sign_in

    # --- what is connected -----------------------------------------------------------------------

    @property
    def servers(self) -> list[ServerInfo]:
        """Every server added to the hub (connected or not), in the order they were added."""
        return [c.state.info() for c in self._table]

    def server(self, name: str) -> ServerInfo:
        return self._conn(name).state.info()

    def server_config(self, name: str) -> ServerConfig:
        """The server's configuration (its repr masks env and header values)."""
        return self._conn(name).config

    @property
    def tools(self) -> list[ToolSpec]:
        """The tools offered to the model, named `SERVER__TOOL` (see naming.py), allow-lists applied.

        Left out: MCP Apps tools whose `_meta.ui.visibility` lacks "model" (only their View may call them), and
        tools that only run as MCP tasks on a server that serves none; `all_tools` has them.
        """
        return [t for t in self._table.specs if t.for_model and (not t.needs_task or self._serves_tasks(t.server))]

    @property
    def all_tools(self) -> list[ToolSpec]:
        """Every listed tool, including those marked `needs_task` and app-only ones (for `%mcp tools` and the
        inspector)."""
        return self._table.specs

    def serves_tasks(self, name: str) -> bool:
        """The server runs tool calls as MCP tasks (2025-11-25 `tasks` capability or the 2026-07-28 extension)."""
        return self._conn(name).serves_tasks

    def _serves_tasks(self, name: str | None) -> bool:
        conn = self._table.find(name) if name is not None else None
        return conn is not None and conn.serves_tasks

    def tool(self, qualified_name: str) -> ToolSpec:
        """Any listed tool by qualified name, app-only ones included (a View or a hand call may use them)."""
        return self._table.tool(qualified_name)

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
        protocol: str | None = None,
        oauth: OAuthSettings | Mapping[str, Any] | None = None,
        sign_in: SignIn | None = None,
        defer_tools: bool | None = None,
    ) -> ServerInfo:
        """Start one server (stdio `command`, or `url` for streamable HTTP / SSE) and list its tools.

        An HTTP server that answers 401 with OAuth metadata is signed in to (the SDK's flow): `oauth`
        configures it (OAuthSettings, or the config file's `oauth` object), `sign_in` is the user's step
        (default: the hub's). Stored tokens are used first and refreshed when they expire.
        A server already connected under `name` is replaced unless its configuration is the same.
        `protocol` pins the MCP revision (server_config.PROTOCOLS; None: auto). `defer_tools`: its tools are
        found by the model's tool search (True) or offered up front even over the tool budget (False).
        Raises ServerStartError (the server stays listed as "failed", with its stderr tail), OAuthError
        when signing in did not work.
        """
        given = {"command": command, "args": args, "env": env, "cwd": cwd, "url": url, "headers": headers,
                 "transport": transport, "timeout": timeout, "approve": approve, "tools": tools,
                 "connect_timeout": connect_timeout, "elicitation": elicitation, "sampling": sampling,
                 "roots": roots, "log_level": log_level, "protocol": protocol, "defer_tools": defer_tools,
                 "oauth": OAuthSettings.from_mapping(oauth) if isinstance(oauth, Mapping) else oauth}
        config = parse_server(name, given)
        return await self._start(config, sign_in=sign_in)

    async def connect_server(self, config: ServerConfig, *, sign_in: SignIn | None = None) -> ServerInfo:
        """Start one server from its ServerConfig (server_config.parse_server's, or a config file's entry).

        What `connect` does with its keywords once they are a ServerConfig; `%mcp connect` builds one.
        """
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
        given = {"timeout": timeout, "approve": approve, "tools": tools, "connect_timeout": connect_timeout}
        config = parse_server(name, given, in_process=server)
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
            logger.info("%s", exc)  # the result holds it (and a caller shows it): a warning would say it again
            return exc

    # --- calling ---------------------------------------------------------------------------------

    async def call(
        self, qualified_name: str, arguments: Mapping[str, Any], timeout: float | None = None,
        *, on_progress: ProgressCallback | None = None, task: TaskWatch | None = None,
    ) -> ToolResult:
        """Call a tool by qualified name. `is_error` results are returned; failures raise McpError subclasses.

        `on_progress(progress, total, message)` sees the server's progress reports; each report also
        pushes the timeout back (at most to `max_total_timeout` seconds in all).
        A call the server runs as an MCP task (a 2025-11-25 tool whose `taskSupport` is required or optional, or
        any call a 2026-07-28 server with the tasks extension decides to) is followed to its result: `task` (a
        TaskWatch) sees its status changes and questions and can cancel it or detach from it; `timeout` then
        bounds the wait for each answer of the server, not the task's life.
        Raises UnknownToolError, ToolCallTimeout (the call is cancelled on the server),
        ServerCrashedError (the server died; the next call restarts it, or reconnects to an HTTP one),
        ServerDownError, TaskError (the task failed or was cancelled), TaskLostError (the server forgot it),
        TaskDetachedError (the watch detached: the task runs on), and McpError for a tool that needs MCP tasks
        on a server that serves none.
        """
        spec = self._table.tool(qualified_name)
        assert spec.server is not None
        assert spec.original_name is not None
        self._loop.check()
        conn = await self._running(self._conn(spec.server))
        if spec.needs_task and not conn.serves_tasks:
            raise McpError(f"tool {qualified_name!r} runs only as an MCP task, and server {spec.server!r} serves no "
                           "tasks", server=spec.server)
        limit = timeout if timeout is not None else (conn.config.timeout or self.default_timeout)
        origin = TASK_ORIGIN.get() if task is None else None
        if origin is not None:  # an agent's call: a task it becomes is the turn's, its status the call's progress
            task = TaskWatch.for_origin(origin, on_progress)
        return await conn.call_tool(spec.original_name, arguments, timeout=limit, max_total=self.max_total_timeout,
                                    on_progress=on_progress, watch=task, task_support=spec.task_support)

    # --- MCP tasks known by their id (started by an earlier call, maybe before a kernel restart) -------

    async def follow_task(self, server: str, task_id: str, *, tool: str = "",
                          task: TaskWatch | None = None) -> ToolResult:
        """Wait for a task to end and return its result (its duration is the task's, by the server's clock).

        Raises TaskError (failed or cancelled), TaskLostError (the server no longer knows it), TaskDetachedError."""
        conn = await self._running(self._conn(server))
        return await conn.task_request(partial(task_calls.follow, tasks=conn.tasks, task_id=task_id),
                                       f"task {task_id}", conn.config.timeout or self.default_timeout,
                                       tool=tool, watch=task)

    async def task_state(self, server: str, task_id: str, *, tool: str = "") -> TaskState:
        """The task's state now (`tasks/get`); TaskLostError when the server no longer knows it."""
        conn = self._conn(server)
        return await conn.task_request(partial(task_calls.look, tasks=conn.tasks, task_id=task_id),
                                       f"task {task_id}", conn.config.timeout or self.default_timeout, tool=tool)

    async def cancel_task(self, server: str, task_id: str) -> None:
        """Ask the server to cancel the task (`tasks/cancel`); a task already ended stays as it ended."""
        conn = self._conn(server)
        await conn.task_request(partial(task_calls.cancel, tasks=conn.tasks, task_id=task_id),
                                f"task {task_id}", conn.config.timeout or self.default_timeout)

    async def list_tasks(self, server: str) -> list[TaskState]:
        """The server's own list of its tasks (2025-11-25 `tasks/list`; the 2026-07-28 extension has none: [])."""
        return await self._request(server, partial(task_calls.list_tasks, server=server), "tasks/list")

    async def _running(self, conn: ServerConnection) -> ServerConnection:
        """A crashed server is restarted here, on its next tool call; a down one raises ServerDownError."""
        if conn.state.current == "connected":
            return conn
        async with self._loop.lock(conn.name):
            conn = self._table.find(conn.name) or conn  # replaced meanwhile: the current one
            if conn.state.current == "down":
                raise conn.state.down_error()
            if conn.state.current != "crashed":
                return conn  # connected by now, or stopped or failed: the request itself says so
            try:
                await conn.restart(automatic=True)
            except ServerStartError as exc:
                if conn.state.info().state == "down":  # the failed restart spent the budget
                    raise conn.state.down_error() from exc
                again = "restart" if conn.state.transport == "stdio" else "reconnect"  # a remote one is not ours
                raise ServerCrashedError(
                    f"MCP server {conn.name!r} crashed and did not {again}: {exc.reason}", server=conn.name
                ) from exc
            finally:
                self._table.rebuild()
            return conn

    # --- resources, prompts and client features (never restart a server) ---------------------------

    async def list_resources(self, name: str) -> list[ResourceInfo]:
        return await self._request(name, features.list_resources, "resources/list")

    async def list_resource_templates(self, name: str) -> list[ResourceTemplateInfo]:
        return await self._request(name, features.list_resource_templates, "resources/templates/list")

    async def read_resource(self, name: str, uri: str) -> tuple[ContentBlock, ...]:
        return await self._request(name, partial(features.read_resource, uri=uri), f"resources/read {uri!r}")

    async def read_ui(self, server: str, uri: str) -> UiResource:
        """The MCP Apps View at `uri` (a `ui://` resource of `server`), read once per connection.

        Read again after the server says its resources changed, or after it reconnects or restarts.
        Raises UiResourceError when `uri` is not a `ui://` URI or is not served as `text/html;profile=mcp-app`.
        """
        conn = self._conn(server)
        cached = conn.ui_cache.get(uri)
        if cached is not None:
            return cached
        ui.check_ui_uri(server, uri)
        version = conn.ui_cache.version
        fetched = await self._request(server, partial(ui.fetch, uri=uri), f"resources/read {uri!r}")
        view = ui.view(server, uri, fetched)
        conn.ui_cache.put(view, version)
        return view

    async def list_prompts(self, name: str) -> list[PromptInfo]:
        return await self._request(name, features.list_prompts, "prompts/list")

    async def get_prompt(self, name: str, prompt: str, arguments: Mapping[str, str] | None = None) -> PromptResult:
        args = {k: str(v) for k, v in (arguments or {}).items()}
        return await self._request(name, partial(features.get_prompt, prompt=prompt, arguments=args),
                                   f"prompt {prompt!r}")

    def logs(self, name: str, n: int | None = None, *, level: str = "debug") -> list[LogEntry]:
        """The server's last `n` log messages (all kept when None) at `level` or above, oldest first."""
        return self._conn(name).hooks.log_ring.tail(n, level)

    def asked_log_level(self, name: str) -> str | None:
        """The level the server was asked to send log messages at (and above): on a 2026-07-28 connection the
        level its requests carry (its `log_level`, else server_config.DEFAULT_LOG_LEVEL); on a 2025-era one the
        level `logging/setLevel` asked, None when it was never asked (it then sends what it chooses)."""
        conn = self._conn(name)
        if conn.state.info().stateless:
            return conn.hooks.asked_level
        return conn.hooks.log_level

    def add_log(self, name: str, entry: LogEntry) -> None:
        """Add a log message the server's MCP Apps View sent (`notifications/message`) to the server's ring."""
        self._conn(name).hooks.log_ring.add(entry)

    def stderr(self, name: str, n: int | None = None) -> list[str]:
        """The last `n` lines (all kept when None: the last 200) the server's process wrote to stderr since it
        started, oldest first; its env and header values are masked. Empty for HTTP and in-process servers."""
        return self._conn(name).state.ring.lines(n)

    async def set_log_level(self, name: str, level: str) -> None:
        """Ask the server for log messages at `level` and above (they land in `logs(name)`).

        On a 2026-07-28 connection the level travels in each request's _meta, fixed when the client
        connects: there it applies from the next (re)connection."""
        checked = check_level(level)
        self._conn(name).hooks.log_level = checked
        await self._request(name, partial(features.set_log_level, level=checked), "logging/setLevel")

    def roots(self, name: str) -> tuple[Path, ...]:
        """The directories this client offers the server as roots; () when it offers none (the server then
        uses its own folders, e.g. those of its command line): only a server given `roots` is offered any."""
        return self._conn(name).hooks.roots

    async def set_roots(self, name: str, paths: Sequence[str | Path]) -> tuple[Path, ...]:
        """Replace the server's roots and tell it (notifications/roots/list_changed); returns them resolved.

        A server that was offered no roots learns of them only at the handshake: it is reconnected with
        `roots` set (as if its entry had them)."""
        conn = self._conn(name)
        if not conn.hooks.offers_roots:
            roots = conn.hooks.resolve(paths)
            config = conn.config.model_copy(update={"roots": tuple(str(p) for p in roots)})
            await self._start(config, conn.inproc)
        else:
            roots = conn.hooks.set_roots(paths)
            await self._request(name, features.notify_roots_changed, "roots/list_changed")
        self._emit(name, "roots_changed", {"roots": [str(p) for p in roots]})
        return roots

    async def subscribe(self, name: str, uri: str) -> None:
        """Subscribe to a resource; its updates reach `handlers.on_resource_updated(server, uri)`."""
        await self._request(name, partial(features.subscribe, uri=uri), f"resources/subscribe {uri!r}")

    async def unsubscribe(self, name: str, uri: str) -> None:
        await self._request(name, partial(features.unsubscribe, uri=uri), f"resources/unsubscribe {uri!r}")

    async def _request(self, name: str, run: Callable[[Client], Awaitable[T]], label: str) -> T:
        """A request other than a tool call: a server that is not connected says so; it is not restarted for
        this (opening an inspector must not restart a crashed server; a tool call or `restart()` does)."""
        self._loop.check()
        conn = self._conn(name)
        return await conn.request(run, label, conn.config.timeout or self.default_timeout,
                                  max_total=self.max_total_timeout)

    # --- OAuth (oauth/ holds the flow; each HTTP connection gets its OAuthSession in _start) --------

    def has_tokens(self, name: str) -> bool:
        """Whether OAuth tokens are stored for the server's URL (a reconnect needs no sign-in)."""
        return self._accounts.has_tokens(self._conn(name).config.url)

    async def logout(self, name: str) -> bool:
        """Forget the server's stored OAuth tokens and registered client, and disconnect it.

        Returns whether anything was stored. The next connect signs in afresh."""
        url = self._http_url(name)
        await self.disconnect(name)
        return await self._accounts.forget(url)

    async def authenticate(self, name: str, *, sign_in: SignIn | None = None) -> ServerInfo:
        """Sign in to the server again (its stored tokens are dropped, its registered client kept) and reconnect.

        Raises OAuthError when the sign-in does not work (the server is then "failed")."""
        url = self._http_url(name)
        config = self._conn(name).config
        await self._accounts.forget_tokens(url)
        async with self._loop.lock(name):
            old = self._table.find(name)
            if old is not None:
                await old.stop(reason="signing in again")
        return await self._start(config, sign_in=sign_in)

    def _http_url(self, name: str) -> str:
        url = self._conn(name).config.url
        if url is None:
            raise McpError(f"MCP server {name!r} is a stdio server; it has no OAuth sign-in", server=name)
        return url

    # --- starting and stopping ---------------------------------------------------------------------

    async def _start(self, config: ServerConfig, server: object | None = None, *,
                     sign_in: SignIn | None = None) -> ServerInfo:
        self._loop.adopt(idle=not len(self._table) and not self._closing)
        # The name's lock: a second connect of the same name waits, then finds the first one's server
        # (same config: kept) or replaces it; it never starts a process the registry then forgets.
        async with self._loop.lock(config.name):
            old = self._table.find(config.name)
            if old is not None:
                if old.config == config and old.inproc is server and old.state.current == "connected":
                    return old.state.info()
                await old.stop(reason="replaced")
            emit = partial(self._emit, config.name)
            conn = ServerConnection(
                config, emit=emit, on_tools=self._table.tools_changed, server=server,
                hooks=ServerHooks(config, self.handlers, emit),
                oauth=self._accounts.session(config, sign_in, turn=self._loop.lock(_SIGN_IN_TURN)),
                tracer=self._request_tracer, task_sink=self._task_event,
            )
            self._table.put(conn)
            self._exit.arm()
            try:
                await conn.start()
            finally:
                self._table.rebuild()
        if config.log_level is not None:
            await self._apply_log_level(conn, config.log_level)
        return conn.state.info()

    async def _apply_log_level(self, conn: ServerConnection, level: str) -> None:
        """The configured log level, asked of a 2025-era server right after connecting (2026-07-28 sets it in
        every request's _meta instead); a server without logging only costs a warning."""
        try:
            await self._request(conn.name, partial(features.set_log_level, level=check_level(level)),
                                "logging/setLevel")
        except McpError as exc:
            logger.warning("MCP server %r: could not set its log level to %s: %s", conn.name, level, exc)

    async def restart(self, name: str) -> ServerInfo:
        """Stop and start a server again (also one that failed or is down); resets its restart budget."""
        self._loop.check()
        async with self._loop.lock(name):
            conn = self._conn(name)
            try:
                await conn.restart(automatic=False)
            finally:
                self._table.rebuild()
            return conn.state.info()

    async def disconnect(self, name: str) -> None:
        """Close the session and end the server's process; its tools disappear.

        A caller cancelled meanwhile does not cut this short: the process still ends (see `aclose`).
        """
        self._loop.check()
        async with self._loop.lock(name):
            conn = self._conn(name)
            await self._outlasting(self._drop([conn]))

    async def aclose(self) -> None:
        """Disconnect every server (each bounded: close, then kill after 5 s).

        Runs in a task of its own that the caller awaits through `asyncio.shield`: cancelling the caller,
        even with a plain `task.cancel()`, still ends every process and answers the requests in flight.
        """
        if len(self._table):
            self._loop.check()
        await self._outlasting(self._drop(list(self._table)))
        if not len(self._table):
            self._exit.disarm()

    async def _drop(self, conns: list[ServerConnection]) -> None:
        await asyncio.gather(*(c.stop() for c in conns), return_exceptions=True)
        self._table.drop(conns)

    async def _outlasting(self, coro: Awaitable[None]) -> None:
        """Await `coro` in a task of its own that goes on if the caller is cancelled."""
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        await asyncio.shield(task)

    # --- the table and events ------------------------------------------------------------------------

    def _request_tracer(self) -> RequestTracer | None:
        return self.tracer() if self.tracer is not None else None

    def _conn(self, name: str) -> ServerConnection:
        return self._table.get(name)

    def _task_event(self, event: TaskCreated | TaskStatusChanged) -> None:
        logger.info("MCP server %r: task %s %s", event.task.server, event.task.task_id, event.task.status)
        if self._on_event is not None:
            self._on_event(event)

    def _emit(self, server: str, event: str, detail: Mapping[str, Any]) -> None:
        logger.info("MCP server %r: %s %s", server, event, {k: v for k, v in detail.items() if k != "stderr_tail"})
        if self._on_event is None:
            return
        try:
            self._on_event(ServerEvent(server=server, event=event, detail=dict(detail)))
        except Exception:  # a sink must not raise (protocols.EventSink); if one does, the hub goes on
            logger.exception("event sink failed on a server event")
