"""One MCP server: a long-lived owner task holds `async with mcp.Client(...)`; requests run in their callers' tasks.

The owner task enters and leaves every SDK context (client, transport, its task group, the connect
deadline) itself, so no anyio scope ever crosses tasks, whichever task (or nest_asyncio re-entry)
awaits a call. Each request runs the SDK call in the caller's task, inside a cancel scope of its own
that opens and closes there (inflight.py: cancelling the caller cancels the call, the request's
deadline cancels it at its timeout, and the owner cancels it when the server stops or crashes; in each
case the SDK sends `notifications/cancelled` to the server before the call returns). The owner waits on
a stop event; on stop or crash it ends the requests still running and waits for them to unwind before
it closes the client.

A tool call reads as one line: `call_tool` -> `_send` -> `Session.run` (under the request's
deadline) -> `features.call_tool` -> the SDK.

What is known about the server lives in `self.state` (connection_state.ConnectionState), whose
`move` is the one way its state changes; tool listing lives in tool_discovery.py. Stopping runs in
a task of its own that the caller awaits through `asyncio.shield`, so a caller cancelled with a
plain `task.cancel()` (which no anyio shield stops) still leaves the process ended and its requests
answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AsyncExitStack
from functools import partial
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio
import mcp.types as mt
from mcp import Client, MCPError
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from .._version import __version__
from ..config import ServerConfig
from ..errors import McpError, OAuthError
from ..events import utcnow
from ..request_trace import McpRequestTrace, RequestTracer
from ..skill_entry import SkillEntry
from ..types import ToolResult
from . import features, skills, task_calls
from .asyncwork import validation_ready
from .connection_state import MAX_RESTARTS, RESTART_WINDOW, ConnectionState, Emit
from .convert import RawTool
from .exit_status import describe_exit
from .failure import Scrubber, describe, is_connection_lost, quiet_sdk_parse_errors, request_error, start_reason
from .handlers import ClientHandlers, ServerHooks
from .inflight import Request, Session
from .oauth.failure import auth_error
from .oauth.provider import OAuthSession
from .process import StderrPipe, final_tail, find_child, kill_tree
from .skill_wire import skills_extension
from .task_extension import TasksExtension
from .task_run import TaskCall, TaskSink
from .task_watch import TaskWatch
from .tool_discovery import list_tools, listen, refresh_tools
from .transport import open_transport, preflight
from .ui import UiCache, ui_extension
from .wire import WireTap, traced

__all__ = ["MAX_RESTARTS", "RESTART_WINDOW", "STOP_TIMEOUT", "ServerConnection"]

logger = logging.getLogger("synapse_nb.mcp")

T = TypeVar("T")

STOP_TIMEOUT = 5.0
"""Seconds a server gets to close cleanly before its process tree is killed."""

SKILLS_LIST_TIMEOUT = 10.0
"""Seconds a server that declares skills gets to list them while it connects; past that it connects without."""
EOF_GRACE = 1.0
"""Seconds a stdio server gets to exit once its input is closed before it is sent SIGTERM (then SIGKILL):
the MCP spec's stdio shutdown, sooner than the SDK's own 2 s + 2 s."""


class ServerConnection:
    """Starts, serves, stops and restarts one server, and runs its requests; the hub owns one per configured name.

    `hooks` answer what the server asks of the client (handlers.py), `oauth` is the sign-in side of an
    HTTP server, `server` an in-process server object (transport "memory").
    """

    def __init__(
        self, config: ServerConfig, *, emit: Emit, on_tools: Callable[[ServerConnection], None],
        server: object | None = None, hooks: ServerHooks | None = None, oauth: OAuthSession | None = None,
        tracer: Callable[[], RequestTracer | None] | None = None, task_sink: TaskSink | None = None,
    ) -> None:
        self.config = config
        self._tracer = tracer  # the client spans of requests, while tracing is on (request_trace.py)
        self._tap = WireTap()
        self._protocol: str | None = None
        self.inproc = server
        self.hooks = hooks if hooks is not None else ServerHooks(config, ClientHandlers(), emit)
        self.oauth = oauth  # its failures become OAuthErrors
        self.state = ConnectionState(config, "memory" if server is not None else config.transport, emit)
        self._on_tools = on_tools  # the hub rebuilds its tool registry
        self._scrub = Scrubber(config)
        self._generation = 0
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self._session: Session | None = None
        self._life: anyio.CancelScope | None = None  # the connect deadline, while connecting
        self._pipe: StderrPipe | None = None  # the stderr pipe of the latest stdio process (its exit status)
        self._tools_dirty: asyncio.Event | None = None
        self._stopper: asyncio.Task[None] | None = None
        self.ui_cache = UiCache()  # the Views read on this connection; cleared when it (re)starts
        self.tasks = TasksExtension(config.name, task_sink or _no_sink)  # MCP tasks (task_extension.py)
        self.serves_tasks = False  # the server runs tool calls as tasks (known once connected)
        self.offers_skills = False  # the server declared the skills extension (known once connected)
        self.skills: tuple[SkillEntry, ...] = ()  # its skill entries as listed when it connected (skills.py)
        self._emit = emit

    @property
    def name(self) -> str:
        return self.config.name

    # --- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the server and list its tools; raises ServerStartError (state "failed") when it cannot."""
        self._generation += 1
        gen = self._generation
        self._stopping = False
        self.ui_cache.clear()
        self.offers_skills, self.skills = False, ()
        self.state.connecting()
        problem = preflight(self.config)
        if problem is not None:
            raise self.state.failed(problem)
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        pipe = None
        if self.state.transport == "stdio":
            quiet_sdk_parse_errors()
            pipe = StderrPipe(self.state.ring, self.name, on_eof=partial(self._eof_threadsafe, loop, gen))
        self._pipe = pipe
        spawned_after = time.time()
        self._task = loop.create_task(self._own(gen, ready, pipe, spawned_after), name=f"synapse-mcp-{self.name}")
        try:
            await ready
        except asyncio.CancelledError:
            self._stopping = True
            # stopped by the user, not a failure to start: no last_error, so it reads "disconnected" (info.status)
            if pipe is not None and self.state.process is None:
                # known from now on, so that disconnect, aclose and the exit hook can end it while it closes
                self.state.process = find_child(pipe.inode, spawned_after)
            self.state.move("stopped", {"reason": "connecting was cancelled"})
            self._stopper = loop.create_task(self._halt_now(STOP_TIMEOUT), name=f"synapse-mcp-stop-{self.name}")
            raise

    async def stop(self, timeout: float | None = None, *, reason: str = "disconnected") -> None:
        """Close the session and end the process: politely, then by force after `timeout` (STOP_TIMEOUT) s.

        The work runs in a task of its own: cancelling the caller (even with a plain `task.cancel()`)
        does not cut it short, so the process still ends and the requests in flight still get an answer.
        """
        await self._halt(timeout)
        self.state.move("stopped", {"reason": reason})

    async def _halt(self, timeout: float | None = None) -> None:
        """Stop the session and the process, whatever the caller's fate; leaves the state to the caller."""
        self._stopping = True
        if self._stopper is None or self._stopper.done():
            self._stopper = asyncio.get_running_loop().create_task(
                self._halt_now(STOP_TIMEOUT if timeout is None else timeout), name=f"synapse-mcp-stop-{self.name}")
        await asyncio.shield(self._stopper)

    async def _halt_now(self, timeout: float) -> None:
        """Close the session (the SDK closes the server's input), give a stdio server EOF_GRACE s to exit,
        then SIGTERM and SIGKILL its process tree; the owner task gets `timeout` s in all."""
        self.state.closing = True
        try:
            await self._end_owner(timeout)
            process = self.state.process
            if process is not None and process.alive():
                await asyncio.to_thread(kill_tree, process)
        finally:
            self.state.closing = False

    async def _end_owner(self, timeout: float) -> None:
        task = self._task
        if task is None or task.done():
            return
        if self._session is not None:
            self._session.stop.set()
        elif self._life is not None:  # still connecting
            self._life.cancel()
        started = time.monotonic()
        done, _ = await asyncio.wait({task}, timeout=min(EOF_GRACE, timeout))
        process = self.state.process
        if not done and process is not None and process.alive():
            logger.info("MCP server %r did not exit when its input closed; terminating it", self.name)
            await asyncio.to_thread(kill_tree, process)
        done, _ = await asyncio.wait({task}, timeout=max(timeout - (time.monotonic() - started), 0.0))
        if not done:
            logger.warning("MCP server %r did not stop within %g s; killing it", self.name, timeout)
            if self.state.process is not None:
                await asyncio.to_thread(kill_tree, self.state.process)
            if self._life is not None:
                self._life.cancel()
            done, _ = await asyncio.wait({task}, timeout=2.0)
            if not done:
                task.cancel()

    async def restart(self, *, automatic: bool) -> None:
        """Stop (if running) and start again; an automatic restart counts against the restart budget.

        An automatic restart that fails leaves the server "crashed" (or "down" once the budget is spent).
        """
        self.state.count_restart(automatic)
        await self._halt()
        self.state.restarts += 1
        self.state.restart = "automatic" if automatic else "manual"
        try:
            await self.start()
        finally:
            self.state.restart = None

    # --- requests --------------------------------------------------------------------------------

    async def call_tool(
        self, tool: str, arguments: Mapping[str, Any], *, timeout: float, max_total: float,
        on_progress: features.OnProgress | None = None, watch: TaskWatch | None = None,
        task_support: str | None = None,
    ) -> ToolResult:
        """Call a tool by its name on the server; ToolCallTimeout after `timeout` s without progress
        (at most `max_total` s in all), and the call is cancelled on the server.

        On a server that serves MCP tasks, a tool whose `task_support` is required or optional (2025-11-25), or
        any tool the server decides to run as a task (2026-07-28), is followed to its result as a task, seen and
        steered through `watch`; from the task's creation on, each answer of the server is a sign of life, and
        `max_total` no longer bounds the whole."""
        if self.state.validates(tool):
            await validation_ready()
        req = Request(f"tool {tool!r}", self.name, timeout, max_total)
        call = self._task_call(req, tool, arguments, watch)

        async def run(client: Client) -> ToolResult:
            if task_support in ("required", "optional") and task_calls.form_of(client) == "2025-11-25" \
                    and task_calls.serves_tasks(client):
                return await task_calls.run_as_task(client, self.tasks, call)
            return await task_calls.with_task_call(call, features.call_tool(
                client, tool, dict(arguments), alive=req.alive, on_progress=on_progress,
                on_url_required=self.hooks.url_required))

        return await self._send(req, run, method=("tools/call", tool))

    async def task_request(
        self, run: Callable[[Client, TaskCall], Awaitable[T]], label: str, timeout: float | None, *,
        tool: str = "", watch: TaskWatch | None = None,
    ) -> T:
        """Run `run(client, call)` about a task known by its id: `timeout` s per answer of the server, no cap."""
        req = Request(label, self.name, timeout, math.inf)
        call = self._task_call(req, tool, {}, watch)
        return await self._send(req, lambda client: run(client, call))

    def _task_call(self, req: Request, tool: str, arguments: Mapping[str, Any], watch: TaskWatch | None) -> TaskCall:
        return TaskCall(server=self.name, tool=tool, arguments=dict(arguments),
                        watch=watch if watch is not None else TaskWatch(), alive=req.alive, uncap=req.uncap,
                        hold=req.hold,
                        sink=self.tasks.sink, ending=lambda: req.ended is not None)

    async def request(
        self, fn: Callable[[Client], Awaitable[T]], label: str, timeout: float | None, *,
        max_total: float | None = None,
    ) -> T:
        """Run `fn(client)` bounded by `timeout` seconds (a question to the user holds that, up to
        `max_total`); ToolCallTimeout when it runs out. Cancelling the caller cancels it on the server."""
        return await self._send(Request(label, self.name, timeout, max_total), fn)

    async def _send(
        self, req: Request, fn: Callable[[Client], Awaitable[T]], method: tuple[str, str | None] | None = None,
    ) -> T:
        session = self._session
        if self.state.current != "connected" or session is None:
            raise self.state.not_running_error(req.label)
        tracer = self._tracer() if self._tracer is not None else None
        if tracer is None:
            return await session.run(req, fn)
        return await traced(tracer, self._trace(*(method or (req.label.split(" ", 1)[0], None))), session.run(req, fn))

    def _trace(self, method: str, target: str | None) -> McpRequestTrace:
        """The record of one request for its client span (its method and id come off the wire)."""
        url = urlsplit(self.config.url) if self.config.url else None
        return McpRequestTrace(
            server=self.name, transport=self.state.transport, method_hint=method, target_hint=target,
            protocol_version=self._protocol, session_id=self._tap.session_id,
            server_address=url.hostname if url else None, server_port=url.port if url else None,
        )

    # --- the owner task --------------------------------------------------------------------------

    async def _own(self, gen: int, ready: asyncio.Future[None], pipe: StderrPipe | None, spawned_after: float) -> None:
        cfg = self.config
        t0 = time.perf_counter()
        # exists before the handshake: a server may announce new tools while we are still listing them
        dirty = self._tools_dirty = asyncio.Event()
        self._tap = WireTap()  # a new connection: no session id yet
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + cfg.connect_timeout_s) as life:
                self._life = life
                if ready.cancelled():
                    life.cancel()
                async with AsyncExitStack() as stack:
                    auth = None
                    if self.oauth is not None:
                        self.oauth.pause = self._paused_deadline
                        stack.push_async_callback(self.oauth.aclose)
                        auth = await self.oauth.auth()
                    client = await stack.enter_async_context(
                        Client(
                            await open_transport(cfg, stack, pipe, self.inproc, auth, self._tap),
                            mode=_client_mode(cfg.protocol),
                            cache=None,
                            client_info=mt.Implementation(name="synapse_nb", version=__version__),
                            extensions=[ui_extension(), self.tasks, skills_extension()],
                            **self.hooks.client_kwargs(partial(self._on_message, gen)),
                        )
                    )
                    if pipe is not None:
                        pipe.close_writer()
                        self.state.process = find_child(pipe.inode, spawned_after)
                    connect_ms = (time.perf_counter() - t0) * 1000

                    def connected(tools: tuple[RawTool, ...], discovery_ms: float) -> Session:
                        life.deadline = math.inf
                        self._session = Session(client, gen, self.hooks.deadlines, self._request_error)
                        self._connected(client, tools, connect_ms, discovery_ms)
                        if not ready.done():
                            ready.set_result(None)
                        return self._session

                    await self._serve(client, gen, dirty, connected)
            if not ready.done():
                reason = f"no answer to the handshake within {cfg.connect_timeout_s:g} s"
                ready.set_exception(self.state.failed(reason, await final_tail(pipe, self.state.ring)))
        except Exception as exc:  # the owner task is the boundary for every start-up and transport failure
            logger.debug("MCP server %r: owner task ended with %r", self.name, exc, exc_info=True)
            if not ready.done():
                failure = self.oauth.failure if self.oauth is not None else None
                if failure is None and isinstance(exc, OAuthError):
                    failure = exc
                discovered = self.oauth.discovered if self.oauth is not None else True
                error = auth_error(self.name, failure, discovered=discovered) if failure is not None else None
                ready.set_exception(self.state.failed(
                    error.reason if error else start_reason(exc, cfg, self._scrub, _exit_code(pipe)),
                    await final_tail(pipe, self.state.ring), error))
            elif not self._stopping:
                self._mark_dead(gen, f"connection failed: {self._scrub(describe(exc))}")
        finally:
            self._life = None
            session = self._session if self._session is not None and self._session.gen == gen else None
            if session is not None:
                self._session = None
            if pipe is not None:
                pipe.close_writer()
            if session is not None:
                await session.end_all(self.state.interrupted_error)

    async def _serve(
        self, client: Client, gen: int, dirty: asyncio.Event,
        connected: Callable[[tuple[RawTool, ...], float], Session],
    ) -> None:
        """Subscribe to tool changes, list the tools, then keep the client open until stop() or a crash."""
        async with anyio.create_task_group() as tg:
            caps = client.server_capabilities
            tools_change = caps.tools is not None and bool(caps.tools.list_changed)
            resources_change = caps.resources is not None and bool(caps.resources.list_changed)
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS and (tools_change or resources_change):
                # before listing: no change can slip between
                await tg.start(partial(listen, client, dirty, self.name, tools=tools_change,
                                       on_resources=self._resources_changed if resources_change else None))
            t0 = time.perf_counter()
            tools = await list_tools(client)
            await self._list_skills(client)
            session = connected(tools, (time.perf_counter() - t0) * 1000)
            tg.start_soon(refresh_tools, client, dirty, self.name, partial(self._tools_refreshed, gen))
            await session.stop.wait()
            self.hooks.closing = True  # the SDK now cancels the server's open requests: not the server's doing
            await session.end_all(self.state.interrupted_error)  # before the client closes under them
            tg.cancel_scope.cancel()

    async def _list_skills(self, client: Client) -> None:
        """The server's skill entries, when it declares the extension: entries only, no file is read (the
        extension forbids reading a skill's files before it is loaded). A server whose listing fails still
        connects, with no skills (logged)."""
        self.offers_skills = skills.offers_skills(client)
        if not self.offers_skills:
            return
        try:
            with anyio.fail_after(SKILLS_LIST_TIMEOUT):
                self.skills = await skills.list_skills(client, self.name)
        except (MCPError, ValidationError, TimeoutError) as exc:
            logger.warning("MCP server %r declares skills but listing them failed: %s", self.name,
                           str(exc) or f"no answer within {SKILLS_LIST_TIMEOUT:g} s")

    def _connected(self, client: Client, tools: tuple[RawTool, ...], connect_ms: float, discovery_ms: float) -> None:
        info = client.server_info
        self._protocol = client.protocol_version
        self.serves_tasks = task_calls.serves_tasks(client)
        # The registry lists the tools before the "connected" event goes out: a listener (the inspector's
        # header) that reads the hub on that event counts them.
        self.state.tools = tools
        self._on_tools(self)
        self.state.connected({
            "server_name": info.name if info is not None else None,
            "server_version": info.version if info is not None else None,
            "server_title": info.title if info is not None else None,
            "instructions": client.instructions,
            "protocol_version": client.protocol_version,
            "stateless": client.protocol_version in MODERN_PROTOCOL_VERSIONS,
            "connected_at": utcnow(),
            "connect_ms": round(connect_ms, 3),
            "discovery_ms": round(discovery_ms, 3),
        }, tools)

    # --- notifications and tool refresh ----------------------------------------------------------

    async def _on_message(self, gen: int, message: Any) -> None:
        if isinstance(message, Exception):
            # e.g. a line on the server's stdout that is not JSON-RPC: skipped, the session goes on
            self.state.skipped_messages += 1
            logger.debug("MCP server %r: skipped a message that did not parse: %s", self.name, message)
        elif (
            isinstance(message, mt.ToolListChangedNotification)
            and gen == self._generation
            and self._tools_dirty is not None
        ):
            self._tools_dirty.set()
        elif isinstance(message, mt.ResourceListChangedNotification) and gen == self._generation:
            self._resources_changed()
        await anyio.lowlevel.checkpoint()

    def _resources_changed(self) -> None:
        """The server's resources changed: Views are read afresh on their next use (reported when any was kept)."""
        dropped = len(self.ui_cache)
        self.ui_cache.clear()
        if dropped:
            self._emit("resources_changed", {"views_dropped": dropped})

    def _tools_refreshed(self, gen: int, tools: tuple[RawTool, ...]) -> bool:
        """A re-listing after a change notification; False once a newer generation has taken over."""
        if gen != self._generation:
            return False
        self.state.relisted(tools)
        self._on_tools(self)
        return True

    # --- OAuth sign-in -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _paused_deadline(self) -> Iterator[None]:
        """The connect deadline, and the deadlines of tool calls in flight (a step-up sign-in during a call),
        stop while a person signs in; the sign-in has its own timeout."""
        life = self._life
        with self.hooks.deadlines.asking():
            if life is None:
                yield
                return
            left = life.deadline - anyio.current_time()
            life.deadline = math.inf
            try:
                yield
            finally:
                if self._life is life and self.state.current == "connecting":
                    life.deadline = anyio.current_time() + max(left, 0.0)

    # --- failures ----------------------------------------------------------------------------------

    def _request_error(self, exc: Exception, gen: int, label: str) -> McpError:
        if not is_connection_lost(exc):
            return request_error(exc, self.name, label, self._scrub)
        if self._stopping:
            return self.state.interrupted_error(label)
        self._mark_dead(gen, f"connection lost during {label}: {self._scrub(describe(exc))}")
        return self.state.crashed_error(label)

    def _eof_threadsafe(self, loop: asyncio.AbstractEventLoop, gen: int) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is left to tell
            loop.call_soon_threadsafe(self._on_stderr_eof, gen)

    def _on_stderr_eof(self, gen: int, checks: int = 0) -> None:
        # A dying process closes its files before it turns into a zombie: look again for up to a second
        # before concluding that it only closed its stderr.
        process = self.state.process
        if process is not None and process.alive():
            if checks < 20 and gen == self._generation:
                asyncio.get_running_loop().call_later(0.05, self._on_stderr_eof, gen, checks + 1)
            elif checks >= 20:
                logger.debug("MCP server %r closed its stderr but is still running", self.name)
            return
        code = _exit_code(self._pipe)
        if code is None and self._pipe is not None and self._pipe.spawned() and checks < 20 and gen == self._generation:
            # gone, but not reaped yet: its status comes with the event loop's reaping, a moment later
            asyncio.get_running_loop().call_later(0.05, self._on_stderr_eof, gen, checks + 1)
            return
        self._mark_dead(gen, f"the server process {describe_exit(code)}" if code is not None
                        else "the server process exited")

    def _mark_dead(self, gen: int, reason: str) -> None:
        """The connection of generation `gen` is gone: record it, tell the hub, end the owner task."""
        if gen != self._generation or self._stopping or self.state.current != "connected":
            return
        self.state.died(reason)
        if self._session is not None and self._session.gen == gen:
            self._session.stop.set()


def _no_sink(event: object) -> None:
    """Task events of a connection nobody records."""


def _client_mode(protocol: str | None) -> str:
    """The SDK Client's `mode` for a server's protocol pin: `auto` (server/discover, falling back to the 2025
    initialize handshake), `legacy` for 2025-11-25 (the handshake only: the SDK offers its newest handshake
    revision), or the 2026-era revision itself."""
    if protocol is None or protocol == "auto":
        return "auto"
    return "legacy" if protocol not in MODERN_PROTOCOL_VERSIONS else protocol


def _exit_code(pipe: StderrPipe | None) -> int | None:
    """How the stdio process on `pipe` ended, when the event loop has reaped it (exit_status.py)."""
    return pipe.exit_code() if pipe is not None else None
