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
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp import Client

from ..config import ApprovePolicy, ServerConfig, Transport, load_mcp_config
from ..errors import McpError, ServerStartError, ToolCallTimeout
from ..oauth_settings import OAuthSettings
from ..protocols import ProgressCallback
from ..server_config import parse_server
from ..types import ToolResult
from . import features
from .convert import tool_result
from .hub_oauth import HubOAuth
from .hub_requests import HubRequests
from .info import PromptInfo, PromptResult, ResourceInfo, ServerInfo
from .oauth.redirect import SignIn
from .tasks import validation_ready

__all__ = ["McpHub", "PromptInfo", "PromptResult", "ResourceInfo", "ServerInfo"]

logger = logging.getLogger("synapse_nb.mcp")


class McpHub(HubOAuth, HubRequests):
    """Connects MCP servers and offers their tools; satisfies `protocols.ToolSource`.

    Connecting and tool calls live here; the registry, locks and lifecycle in hub_core.HubCore, the
    OAuth methods in hub_oauth.HubOAuth, resources, prompts and client features in hub_requests.HubRequests.
    """

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
        given = {"command": command, "args": args, "env": env, "cwd": cwd, "url": url, "headers": headers,
                 "transport": transport, "timeout": timeout, "approve": approve, "tools": tools,
                 "connect_timeout": connect_timeout, "elicitation": elicitation, "sampling": sampling,
                 "roots": roots, "log_level": log_level,
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
            logger.warning("%s", exc)
            return exc

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
