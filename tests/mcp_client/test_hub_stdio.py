"""McpHub against the demo server as a real stdio subprocess: tools, results, resources, prompts, stderr, env."""

from __future__ import annotations

import io
import os
import sys

import pytest
from mcp_helpers import Events, demo_stdio, wait_until

import synapse_nb
from synapse_nb.errors import McpError, ToolCallTimeout, UnknownServerError, UnknownToolError
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.protocols import ToolSource

pytestmark = pytest.mark.anyio


async def test_connect_lists_qualified_tools_with_annotations(events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        info = await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        assert isinstance(hub, ToolSource)
        assert (info.name, info.transport, info.state, info.server_name) == ("demo", "stdio", "connected",
                                                                             "synapse-demo")
        assert info.pid is not None
        assert info.tool_count == len(hub.tools) >= 13
        assert info.command is not None
        assert info.command.endswith("-m synapse_nb.mcp_client.demo_server")
        assert info.discovery_ms is not None
        spec = hub.tool("demo__drop_table")
        assert (spec.server, spec.original_name, spec.destructive) == ("demo", "drop_table", True)
        assert hub.tool("demo__query").annotations["readOnlyHint"] is True
        assert not hub.tool("demo__query").destructive
        assert hub.tool("demo__describe_table").input_schema["required"] == ["table"]
        assert [s.name for s in hub.servers] == ["demo"]
    assert events.names() == ["connecting", "connected", "disconnected"]
    assert events.items[1].detail["pid"] == info.pid  # type: ignore[index]


def test_hub_is_the_top_level_export() -> None:
    assert synapse_nb.McpHub is McpHub


async def test_call_results_text_structured_image_and_error() -> None:
    async with McpHub() as hub:
        await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
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
        with pytest.raises(UnknownServerError):
            hub.server("other")


async def test_resources_and_prompts() -> None:
    async with McpHub() as hub:
        await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        resources = await hub.list_resources("demo")
        assert [(r.uri, r.mime_type) for r in resources] == [("demo://schema", "text/markdown")]
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


async def test_garbage_on_stdout_does_not_break_the_session() -> None:
    async with McpHub() as hub:
        await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        result = await hub.call("demo__garbage", {"lines": 5})
        assert result.text == "wrote 5 non-JSON lines to stdout"
        assert (await hub.call("demo__echo", {"text": "still here"})).text == "still here"
        assert hub.server("demo").state == "connected"


async def test_large_result_is_returned_whole() -> None:
    async with McpHub() as hub:
        await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        result = await hub.call("demo__large", {"kb": 10 * 1024})
        assert len(result.text) == 10 * 1024 * 1024
        assert result.text.startswith("0123456789")


async def test_timeout_cancels_the_call_on_the_server() -> None:
    async with McpHub() as hub:
        await hub.connect("demo", **demo_stdio(), timeout=30)  # type: ignore[arg-type]
        with pytest.raises(ToolCallTimeout) as info:
            await hub.call("demo__sleep", {"seconds": 30}, timeout=0.3)
        assert info.value.timeout == 0.3
        assert info.value.server == "demo"
        await wait_until(lambda: "sleep cancelled" in hub.server("demo").stderr_tail, what="the server saw the cancel")
        assert (await hub.call("demo__cancellations", {})).structured_content == {"result": 1}
        assert (await hub.call("demo__echo", {"text": "ok"})).text == "ok"


async def test_per_server_timeout_applies() -> None:
    async with McpHub(default_timeout=60) as hub:
        await hub.connect("demo", **demo_stdio(), timeout=0.3)  # type: ignore[arg-type]
        with pytest.raises(ToolCallTimeout) as info:
            await hub.call("demo__sleep", {"seconds": 30})
        assert info.value.timeout == 0.3


async def test_cancelling_the_caller_cancels_the_call_on_the_server() -> None:
    import asyncio

    async with McpHub() as hub:
        await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        task = asyncio.ensure_future(hub.call("demo__sleep", {"seconds": 30}))
        await wait_until(lambda: "sleep started" in hub.server("demo").stderr_tail, what="the sleep to start")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await wait_until(lambda: "sleep cancelled" in hub.server("demo").stderr_tail, what="the server saw the cancel")
        assert (await hub.call("demo__cancellations", {})).structured_content == {"result": 1}
        assert hub.server("demo").state == "connected"


async def test_calls_to_one_server_run_concurrently() -> None:
    import asyncio

    async with McpHub() as hub:
        await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        calls = [asyncio.ensure_future(hub.call("demo__sleep", {"seconds": 30 + i})) for i in range(3)]
        # all three are running on the server at the same time
        await wait_until(lambda: hub.server("demo").stderr_tail.count("sleep started") == 3, what="three sleeps")
        for call in calls:
            call.cancel()
        results = await asyncio.gather(*calls, return_exceptions=True)
        assert all(isinstance(r, asyncio.CancelledError) for r in results)
        await wait_until(lambda: hub.server("demo").stderr_tail.count("sleep cancelled") == 3, what="three cancels")
        assert (await hub.call("demo__echo", {"text": "free"})).text == "free"


async def test_tool_list_changed_refreshes_the_registry(events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        assert "demo__greet" not in {t.name for t in hub.tools}
        await hub.call("demo__add_tool", {"name": "greet"})
        await events.wait_for("tools_changed", "demo")
        assert events.items[-1].detail["added"] == ["greet"]  # type: ignore[index]
        assert hub.server("demo").tool_count == len(hub.tools)
        assert (await hub.call("demo__greet", {"text": "hello"})).text == "hello"


async def test_stderr_is_captured_even_when_sys_stderr_has_no_fileno(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = io.StringIO()  # like ipykernel's OutStream: fileno() raises
    monkeypatch.setattr(sys, "stderr", fake)
    with pytest.raises(io.UnsupportedOperation):
        sys.stderr.fileno()
    async with McpHub() as hub:
        info = await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        await wait_until(lambda: "serving stdio" in hub.server("demo").stderr_tail, what="stderr to arrive")
        await hub.call("demo__sleep", {"seconds": 0})
        await wait_until(lambda: "sleep started" in hub.server("demo").stderr_tail, what="more stderr")
        tail = hub.server("demo").stderr_tail
    assert f"synapse-demo: serving stdio (pid {info.pid})" in tail
    assert fake.getvalue() == ""


async def test_stdio_servers_get_only_a_safe_environment(no_secrets: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYNAPSE_UNRELATED_SETTING", "1")
    async with McpHub() as hub:
        await hub.connect("demo", **demo_stdio(), env={"DEMO_GIVEN": "yes"})  # type: ignore[arg-type]
        seen = {name: (await hub.call("demo__env", {"name": name})).structured_content["set"]  # type: ignore[index]
                for name in ("OPENAI_API_KEY", "SYNAPSE_UNRELATED_SETTING", "DEMO_GIVEN", "PATH")}
    assert seen == {"OPENAI_API_KEY": False, "SYNAPSE_UNRELATED_SETTING": False, "DEMO_GIVEN": True, "PATH": True}
    assert os.environ["OPENAI_API_KEY"] == no_secrets


async def test_secrets_stay_out_of_info_config_events_and_errors(events: Events) -> None:
    secret = "env-secret-7f3a9c"
    async with McpHub(on_event=events) as hub:
        await hub.connect("demo", **demo_stdio(), env={"DEMO_TOKEN": secret})  # type: ignore[arg-type]
        texts = [repr(hub.server("demo")), repr(hub.server_config("demo")), str(hub.server_config("demo")),
                 repr(hub), repr(hub.servers)]
        assert hub.server_config("demo").env == {"DEMO_TOKEN": secret}
    texts += [repr(e) for e in events.items]
    assert all(secret not in t for t in texts)
    assert "'DEMO_TOKEN': '***'" in texts[1]


async def test_allow_list_filters_the_offered_tools() -> None:
    async with McpHub() as hub:
        await hub.connect("demo", **demo_stdio(), tools=["list_*", "demo__query"])  # type: ignore[arg-type]
        assert sorted(t.name for t in hub.tools) == ["demo__list_tables", "demo__query"]
        assert hub.server("demo").tool_count == 2
        assert hub.server_config("demo").tools == ("list_*", "demo__query")
        with pytest.raises(UnknownToolError):
            await hub.call("demo__crash", {})


async def test_collisions_between_servers_are_visible(events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        await hub.connect("a.b", **demo_stdio(), tools=["echo"])  # type: ignore[arg-type]
        await hub.connect("a_b", **demo_stdio(), tools=["echo"])  # type: ignore[arg-type]
        specs = {t.name: (t.server, t.original_name) for t in hub.tools}
        assert specs == {"a_b__echo": ("a_b", "echo"), "a_b__echo_2": ("a.b", "echo")}
        assert (await hub.call("a_b__echo_2", {"text": "via a.b"})).text == "via a.b"


async def test_connect_again_replaces_or_keeps_a_server(events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        first = await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        same = await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        assert same.pid == first.pid
        other = await hub.connect("demo", **demo_stdio(), timeout=5)  # type: ignore[arg-type]
        assert other.pid != first.pid
        assert hub.server_config("demo").timeout == 5
        assert [s.name for s in hub.servers] == ["demo"]
        await hub.disconnect("demo")
        assert hub.servers == []
        assert hub.tools == []
        with pytest.raises(UnknownServerError):
            await hub.disconnect("demo")
    assert events.names().count("connected") == 2
