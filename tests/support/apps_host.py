"""A test AppHost over one `mcp.Client` session to an MCP Apps server, and `open_view` that shows a UI tool's
View as the hub will: list the tool, read its `ui://` resource, call the tool, build the AppView.

The real host (the hub's, with approval and recording) comes later; this one keeps the spec's rules that
matter to a View's requests (its own server only; only tools whose visibility includes "app") and records
every request in `events`, so tests can assert what the View asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from synapse_nb.mcp_client import ui
from synapse_nb.mcp_client.convert import tool_ui
from synapse_nb.notebook.apps.host import DisplayMode
from synapse_nb.notebook.apps.view import AppView

APPS_SERVER = Path(__file__).resolve().with_name("apps_server.py")
UI_EXTENSION = ui.ui_extension()  # what every hub connection advertises
OPEN_TIMEOUT = 60.0


def wire(model: Any) -> dict[str, Any]:
    """A pydantic MCP object as the wire dict a View expects."""
    return dict(model.model_dump(by_alias=True, exclude_none=True, mode="json"))


def callable_from_a_view(tool: Mapping[str, Any] | None) -> bool:
    """The tool's `_meta.ui.visibility` includes "app" (parsed as the hub parses it)."""
    parsed = tool_ui(tool.get("_meta")) if tool is not None else None
    return parsed is not None and parsed.for_app


class ClientAppHost:
    """AppHost answering from one client session; `events` lists (method, params) in arrival order and
    `changed` is set on every new event."""

    def __init__(self, client: Client, tools: Mapping[str, Mapping[str, Any]]) -> None:
        self.client = client
        self.tools = dict(tools)
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.context: dict[str, Any] = {}
        self.changed = asyncio.Event()

    def _record(self, method: str, params: Mapping[str, Any]) -> None:
        self.events.append((method, dict(params)))
        self.changed.set()

    async def wait_for(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        """The first event of `method` (waiting for it under `timeout`)."""
        async with asyncio.timeout(timeout):
            while True:
                for name, params in self.events:
                    if name == method:
                        return params
                self.changed.clear()
                await self.changed.wait()

    async def call_tool(self, name: str, arguments: Mapping[str, Any], /) -> dict[str, Any]:
        self._record("tools/call", {"name": name, "arguments": dict(arguments)})
        if not callable_from_a_view(self.tools.get(name)):
            return {"isError": True, "content": [{"type": "text", "text": f"{name} is not callable from a View"}]}
        return wire(await self.client.call_tool(name, dict(arguments)))

    async def read_resource(self, uri: str, /) -> dict[str, Any]:
        self._record("resources/read", {"uri": uri})
        return wire(await self.client.read_resource(uri))

    async def message(self, params: Mapping[str, Any], /) -> dict[str, Any]:
        self._record("ui/message", params)
        return {}

    async def update_model_context(self, params: Mapping[str, Any], /) -> dict[str, Any]:
        self._record("ui/update-model-context", params)
        self.context = dict(params)
        return {}

    async def request_display_mode(self, mode: DisplayMode, /) -> DisplayMode:
        self._record("ui/request-display-mode", {"mode": mode})
        return "inline"

    def notify(self, method: str, params: Mapping[str, Any], /) -> None:
        self._record(method, params)


class AppsConnection:
    """The apps server over stdio, held open by an owner task (so cells and comm handlers on the same loop
    can share it) until `aclose()`."""

    def __init__(self, server: StdioServerParameters | None = None) -> None:
        self.server = server or StdioServerParameters(command=sys.executable, args=[str(APPS_SERVER)])
        self._ready: asyncio.Future[ClientAppHost] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._own())

    @classmethod
    async def open(cls, server: StdioServerParameters | None = None) -> ClientAppHost:
        """A connected host (kept as `host.connection`) for `server` (default: tests/support/apps_server.py)."""
        connection = cls(server)
        async with asyncio.timeout(OPEN_TIMEOUT):
            host = await asyncio.shield(connection._ready)
        host.connection = connection  # type: ignore[attr-defined]
        return host

    async def _own(self) -> None:
        server = self.server
        # the server's stderr to the process's own (a kernel's sys.stderr has no file descriptor to hand on)
        errlog = sys.__stderr__ or sys.stderr
        try:
            async with Client(stdio_client(server, errlog=errlog), extensions=[UI_EXTENSION]) as client:
                tools = {t.name: wire(t) for t in (await client.list_tools()).tools}
                self._ready.set_result(ClientAppHost(client, tools))
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    async def aclose(self) -> None:
        self._stop.set()
        with contextlib.suppress(Exception):
            await self._task


async def open_view(host: ClientAppHost, tool_name: str, arguments: Mapping[str, Any], **kwargs: Any) -> AppView:
    """Call a UI tool and show its View: the tool's `_meta.ui.resourceUri`, read and checked as the hub's
    `read_ui` does (mcp_client/ui.py: the content item's `_meta.ui` wins over the listing's), then the call's
    result."""
    tool = host.tools[tool_name]
    parsed = tool_ui(tool.get("_meta"))
    uri = parsed.resource_uri if parsed is not None else ""
    if not uri:
        raise ValueError(f"{tool_name} has no View")
    view = ui.view("apps", uri, await ui.fetch(host.client, uri))
    meta: dict[str, Any] = {"csp": dict(view.csp), "permissions": dict(view.permissions)}
    if view.prefers_border is not None:
        meta["prefersBorder"] = view.prefers_border
    result = wire(await host.client.call_tool(tool_name, dict(arguments)))
    return AppView(host, server="apps", tool=tool, resource_uri=uri, html=view.html, resource_meta=meta,
                   tool_input=arguments, tool_result=result, **kwargs)
