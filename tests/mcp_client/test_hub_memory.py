"""McpHub above the transport, against real SDK servers in this process (`connect_in_process`): results,
resources, prompts, timeouts, cancellation, concurrency, tool list changes, allow-lists, naming, replacing.

The SDK pairs the client with the server object in memory, so these tests spawn no interpreter; what
only a process shows (stdio framing, stderr, env, crashes, kills) is tested over stdio elsewhere.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from synapse_nb.errors import McpError, ToolCallTimeout, UnknownServerError, UnknownToolError
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.protocols import ToolSource
from tests.mcp_client.mcp_helpers import Events, Gate, wait_until
from tests.support.tools_server import build_server

pytestmark = pytest.mark.anyio


async def test_connect_in_process_lists_qualified_tools(events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        info = await hub.connect_in_process("demo", build_server())
        assert isinstance(hub, ToolSource)
        assert (info.name, info.transport, info.state, info.server_name) == ("demo", "memory", "connected",
                                                                             "synapse-demo")
        assert (info.pid, info.command, info.url) == (None, None, None)
        assert info.tool_count == len(hub.tools) >= 13
        spec = hub.tool("demo__drop_table")
        assert (spec.server, spec.original_name, spec.destructive) == ("demo", "drop_table", True)
        assert hub.tool("demo__query").annotations["readOnlyHint"] is True
        assert hub.tool("demo__describe_table").input_schema["required"] == ["table"]
    assert events.names() == ["connecting", "connected", "disconnected"]


async def test_call_results_text_structured_image_and_error() -> None:
    async with McpHub() as hub:
        await hub.connect_in_process("demo", build_server())
        tables = await hub.call("demo__list_tables", {})
        assert not tables.is_error
        assert "orders (300 rows)" in tables.text
        assert tables.structured_content is not None
        assert [t["name"] for t in tables.structured_content["tables"]] == ["customers", "orders", "products"]
        assert tables.duration_ms > 0
        image = await hub.call("demo__image", {})
        assert [b.kind for b in image.content] == ["image"]
        assert image.images[0].mime_type == "image/png"
        failed = await hub.call("demo__fail", {"message": "the reason"})
        assert failed.is_error
        assert failed.text == "the reason"
        bad_sql = await hub.call("demo__query", {"sql": "DELETE FROM orders"})
        assert bad_sql.is_error
        with pytest.raises(UnknownToolError) as info:
            await hub.call("demo__nope", {})
        assert info.value.tool == "demo__nope"
        bad_args = await hub.call("demo__describe_table", {"wrong": 1})
        assert bad_args.is_error
        assert (await hub.call("demo__cancellations", {})).structured_content == {"result": 0}  # validated
        with pytest.raises(UnknownServerError):
            hub.server("other")


async def test_resources_and_prompts() -> None:
    async with McpHub() as hub:
        await hub.connect_in_process("demo", build_server())
        resources = await hub.list_resources("demo")
        assert ("demo://schema", "text/markdown") in [(r.uri, r.mime_type) for r in resources]
        assert {r.uri for r in resources} - {"demo://schema"} == {  # the files of its skill (SEP-2640)
            "skill://shop-revenue/SKILL.md", "skill://shop-revenue/references/margin.md"}
        blocks = await hub.read_resource("demo", "demo://schema")
        assert blocks[0].kind == "resource"
        assert blocks[0].text is not None
        assert "## products" in blocks[0].text
        prompts = await hub.list_prompts("demo")
        assert prompts[0].name == "explore_table"
        assert [(a.name, a.required) for a in prompts[0].arguments] == [("table", True)]
        rendered = await hub.get_prompt("demo", "explore_table", {"table": "orders"})
        assert rendered.messages[0].role == "user"
        assert "table orders" in rendered.messages[0].content
        with pytest.raises(McpError, match="answered resources/read 'demo://nope' with error") as info:
            await hub.read_resource("demo", "demo://nope")
        assert info.value.server == "demo"
        assert hub.server("demo").state == "connected"


async def test_timeout_cancels_the_call_on_the_server() -> None:
    gate = Gate()
    async with McpHub() as hub:
        await hub.connect_in_process("gate", gate.server, timeout=30)
        with pytest.raises(ToolCallTimeout) as info:
            await hub.call("gate__wait", {"seconds": 30}, timeout=0.3)
        assert (info.value.timeout, info.value.server) == (0.3, "gate")
        await wait_until(lambda: gate.cancelled == 1, what="the server saw the cancel")
        assert (await hub.call("gate__wait", {"seconds": 0})).text == "waited 0 s"


async def test_per_server_timeout_applies() -> None:
    gate = Gate()
    async with McpHub(default_timeout=60) as hub:
        await hub.connect_in_process("gate", gate.server, timeout=0.3)
        with pytest.raises(ToolCallTimeout) as info:
            await hub.call("gate__wait", {"seconds": 30})
        assert info.value.timeout == 0.3


async def test_cancelling_the_caller_cancels_the_call_on_the_server() -> None:
    gate = Gate()
    async with McpHub() as hub:
        await hub.connect_in_process("gate", gate.server)
        task = asyncio.ensure_future(hub.call("gate__wait", {"seconds": 30}))
        await wait_until(lambda: gate.started == 1, what="the call to start")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await wait_until(lambda: gate.cancelled == 1, what="the server saw the cancel")
        assert hub.server("gate").state == "connected"


async def test_calls_to_one_server_run_concurrently() -> None:
    gate = Gate()
    async with McpHub() as hub:
        await hub.connect_in_process("gate", gate.server)
        calls = [asyncio.ensure_future(hub.call("gate__wait", {"seconds": 30 + i})) for i in range(3)]
        await wait_until(lambda: gate.started == 3, what="three calls running on the server at once")
        for call in calls:
            call.cancel()
        results = await asyncio.gather(*calls, return_exceptions=True)
        assert all(isinstance(r, asyncio.CancelledError) for r in results)
        await wait_until(lambda: gate.cancelled == 3, what="three cancels")
        assert (await hub.call("gate__wait", {"seconds": 0})).text == "waited 0 s"


async def test_a_call_in_flight_when_the_server_is_disconnected() -> None:
    gate = Gate()
    async with McpHub() as hub:
        await hub.connect_in_process("gate", gate.server)
        call = asyncio.ensure_future(hub.call("gate__wait", {"seconds": 30}))
        await wait_until(lambda: gate.started == 1, what="the call to start")
        await hub.disconnect("gate")
        with pytest.raises(McpError, match="was disconnected during tool 'wait'"):
            await call


async def test_tool_list_changed_refreshes_the_registry(events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        await hub.connect_in_process("demo", build_server())
        assert "demo__greet" not in {t.name for t in hub.tools}
        await hub.call("demo__add_tool", {"name": "greet"})
        await events.wait_for("tools_changed", "demo")
        assert events.items[-1].detail["added"] == ["greet"]  # type: ignore[index]
        assert hub.server("demo").tool_count == len(hub.tools)
        assert (await hub.call("demo__greet", {"text": "hello"})).text == "hello"


async def test_allow_list_filters_the_offered_tools() -> None:
    async with McpHub() as hub:
        await hub.connect_in_process("demo", build_server(), tools=["list_*", "demo__query"])
        assert sorted(t.name for t in hub.tools) == ["demo__list_tables", "demo__query"]
        assert hub.server("demo").tool_count == 2
        assert hub.server_config("demo").tools == ("list_*", "demo__query")
        with pytest.raises(UnknownToolError):
            await hub.call("demo__crash", {})


async def test_collisions_between_servers_are_visible() -> None:
    async with McpHub() as hub:
        await hub.connect_in_process("a.b", build_server(), tools=["echo"])
        await hub.connect_in_process("a_b", build_server(), tools=["echo"])
        specs = {t.name: (t.server, t.original_name) for t in hub.tools}
        assert specs == {"a_b__echo": ("a_b", "echo"), "a_b__echo_2": ("a.b", "echo")}
        assert (await hub.call("a_b__echo_2", {"text": "via a.b"})).text == "via a.b"


async def test_two_concurrent_connects_of_one_config_share_one_server(events: Events) -> None:
    server = build_server()
    async with McpHub(on_event=events) as hub:
        first, second = await asyncio.gather(hub.connect_in_process("x", server), hub.connect_in_process("x", server))
        assert first.connected_at == second.connected_at  # the second waited for the first and kept it
    assert events.names() == ["connecting", "connected", "disconnected"]


async def test_connect_again_replaces_or_keeps_a_server(events: Events) -> None:
    server = build_server()
    async with McpHub(on_event=events) as hub:
        first = await hub.connect_in_process("demo", server)
        same = await hub.connect_in_process("demo", server)
        assert same.connected_at == first.connected_at  # kept: the same object and settings
        other = await hub.connect_in_process("demo", server, timeout=5)
        assert other.connected_at != first.connected_at
        assert hub.server_config("demo").timeout == 5
        assert [s.name for s in hub.servers] == ["demo"]
        await hub.disconnect("demo")
        assert hub.servers == []
        assert hub.tools == []
        with pytest.raises(UnknownServerError):
            await hub.disconnect("demo")
    assert events.names() == ["connecting", "connected", "disconnected", "connecting", "connected", "disconnected"]
    replaced = next(e.detail for e in events.items if e.event == "disconnected")
    assert replaced["reason"] == "replaced"  # type: ignore[index]


async def test_a_request_from_another_loop_is_refused_with_one_clear_error() -> None:
    gate = Gate()
    async with McpHub() as hub:
        await hub.connect_in_process("gate", gate.server)
        outcome: list[BaseException | str] = []

        def other_thread() -> None:
            try:
                outcome.append(asyncio.run(hub.call("gate__wait", {"seconds": 0})).text)
            except BaseException as exc:  # the test inspects whatever came out
                outcome.append(exc)

        thread = threading.Thread(target=other_thread)
        thread.start()
        await asyncio.to_thread(thread.join, 30)
        assert len(outcome) == 1
        assert isinstance(outcome[0], McpError)
        assert "belongs to the event loop that connected its servers" in str(outcome[0])
        assert gate.started == 0  # refused before anything reached the server
        assert hub.server("gate").state == "connected"
        assert (await hub.call("gate__wait", {"seconds": 0})).text == "waited 0 s"
