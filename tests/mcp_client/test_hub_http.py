"""McpHub over streamable HTTP and SSE, against the demo server listening on 127.0.0.1."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from synapse_nb.errors import ServerCrashedError, ToolCallTimeout
from synapse_nb.mcp_client.hub import McpHub
from tests.mcp_client.mcp_helpers import Events, WebServer, wait_until

pytestmark = pytest.mark.anyio

SECRET = "Bearer hdr-secret-91c2"


async def test_streamable_http_calls_changes_and_cancellation(demo_http: WebServer, events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        info = await hub.connect("web", url=demo_http.url, headers={"Authorization": SECRET})
        assert (info.transport, info.state, info.url, info.pid) == ("http", "connected", demo_http.url, None)
        assert info.server_name == "synapse-demo"
        assert (await hub.call("web__echo", {"text": "over http"})).text == "over http"
        assert "orders (300 rows)" in (await hub.call("web__list_tables", {})).text

        await hub.call("web__add_tool", {"name": "greet"})
        await events.wait_for("tools_changed", "web")
        assert (await hub.call("web__greet", {"text": "hi"})).text == "hi"

        with pytest.raises(ToolCallTimeout):
            await hub.call("web__sleep", {"seconds": 30}, timeout=0.3)
        await wait_until(lambda: "sleep cancelled" in demo_http.stderr(), what="the server saw the cancel")
        assert (await hub.call("web__cancellations", {})).structured_content == {"result": 1}

        large = await hub.call("web__large", {"kb": 10 * 1024})
        assert len(large.text) == 10 * 1024 * 1024

        texts = [repr(hub.server("web")), repr(hub.server_config("web")), *(repr(e) for e in events.items)]
        assert all("hdr-secret" not in t for t in texts)


async def test_http_server_dying_mid_call_is_a_crash(demo_http: WebServer, events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        await hub.connect("web", url=demo_http.url)
        call = asyncio.ensure_future(hub.call("web__sleep", {"seconds": 30}))
        await wait_until(lambda: "sleep started" in demo_http.stderr(), what="the call to reach the server")
        demo_http.process.kill()
        with pytest.raises(ServerCrashedError, match=r"the next call reconnects$"):  # a remote server is not ours
            await asyncio.wait_for(call, 5)
        assert hub.server("web").state == "crashed"
        assert hub.server("web").status.startswith("unreachable — the next tool call reconnects (")  # went away
        await events.wait_for("crashed", "web")
        with pytest.raises(ServerCrashedError, match="did not reconnect"):  # nobody listens any more
            await hub.call("web__echo", {"text": "x"})


async def test_mcp_url_connects_the_default_server(
    demo_http: WebServer, clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_URL", demo_http.url)
    async with McpHub() as hub:
        results = await hub.connect_config()
        assert list(results) == ["default"]
        assert hub.server("default").state == "connected"
        assert hub.server_config("default").connect_timeout_s == 5.0
        assert (await hub.call("default__echo", {"text": "via MCP_URL"})).text == "via MCP_URL"


async def test_sse_transport(demo_sse: WebServer) -> None:
    async with McpHub() as hub:
        info = await hub.connect("legacy", url=demo_sse.url, transport="sse")
        assert (info.transport, info.state) == ("sse", "connected")
        assert (await hub.call("legacy__echo", {"text": "over sse"})).text == "over sse"
        assert (await hub.call("legacy__image", {})).images[0].mime_type == "image/png"
