"""McpHub against the demo server as a real stdio subprocess: what a process shows (stdio framing, a large
result, garbage on stdout, a timeout cancelled over the wire, stderr, env, secrets). The hub's logic above
the transport is tested in process in test_hub_memory.py."""

from __future__ import annotations

import asyncio
import io
import os
import sys
from pathlib import Path

import pytest

import synapse_nb
from synapse_nb.errors import ToolCallTimeout
from synapse_nb.mcp_client.elicitation import ElicitationAnswer, ElicitationForm, UrlElicitation
from synapse_nb.mcp_client.handlers import ClientHandlers
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.protocols import ToolSource
from tests.mcp_client.mcp_helpers import Events, demo_stdio, wait_until
from tests.support import tools_server

pytestmark = pytest.mark.anyio


@pytest.mark.process
async def test_connect_lists_qualified_tools_with_annotations(events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        info = await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        assert isinstance(hub, ToolSource)
        assert (info.name, info.transport, info.state, info.server_name) == ("demo", "stdio", "connected",
                                                                             "synapse-demo")
        assert info.pid is not None
        assert info.tool_count == len(hub.tools) >= 13
        assert info.command is not None
        assert info.command.endswith(" ".join(tools_server.ARGS))
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




@pytest.mark.process
async def test_garbage_on_stdout_does_not_break_the_session() -> None:
    async with McpHub() as hub:
        await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        result = await hub.call("demo__garbage", {"lines": 5})
        assert result.text == "wrote 5 non-JSON lines to stdout"
        assert (await hub.call("demo__echo", {"text": "still here"})).text == "still here"
        assert hub.server("demo").state == "connected"


@pytest.mark.process
async def test_large_result_is_returned_whole() -> None:
    async with McpHub() as hub:
        await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        result = await hub.call("demo__large", {"kb": 10 * 1024})
        assert len(result.text) == 10 * 1024 * 1024
        assert result.text.startswith("0123456789")


@pytest.mark.process
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






@pytest.mark.process
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


@pytest.mark.process
async def test_stdio_servers_get_only_a_safe_environment(no_secrets: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYNAPSE_UNRELATED_SETTING", "1")
    async with McpHub() as hub:
        await hub.connect("demo", **demo_stdio(), env={"DEMO_GIVEN": "yes"})  # type: ignore[arg-type]
        seen = {name: (await hub.call("demo__env", {"name": name})).structured_content["set"]  # type: ignore[index]
                for name in ("OPENAI_API_KEY", "SYNAPSE_UNRELATED_SETTING", "DEMO_GIVEN", "PATH")}
    assert seen == {"OPENAI_API_KEY": False, "SYNAPSE_UNRELATED_SETTING": False, "DEMO_GIVEN": True, "PATH": True}
    assert os.environ["OPENAI_API_KEY"] == no_secrets


@pytest.mark.process
async def test_secrets_stay_out_of_info_config_events_and_errors(events: Events) -> None:
    secret = "env-secret-7f3a9c"
    async with McpHub(on_event=events) as hub:
        await hub.connect("demo", **demo_stdio(), env={"DEMO_TOKEN": secret})  # type: ignore[arg-type]
        texts = [repr(hub.server("demo")), repr(hub.server_config("demo")), str(hub.server_config("demo")),
                 repr(hub), repr(hub.servers)]
        assert hub.server_config("demo").env == {"DEMO_TOKEN": secret}
    texts += [repr(e) for e in events.items]
    assert all(secret not in t for t in texts)
    assert "'DEMO_TOKEN': '[REDACTED]'" in texts[1]




ASKER = Path(__file__).with_name("asking_server.py")


@pytest.mark.process
async def test_a_request_other_than_a_tool_call_times_out_the_same_way() -> None:
    async with McpHub() as hub:
        await hub.connect("asker", command=sys.executable, args=[str(ASKER)], timeout=0.5)
        with pytest.raises(ToolCallTimeout, match=r"prompt 'hang' on MCP server 'asker' did not finish within 0.5 s"):
            await hub.get_prompt("asker", "hang")
        assert hub.server("asker").state == "connected"
        assert (await hub.list_prompts("asker"))[0].name == "greet"


@pytest.mark.process
async def test_a_question_to_the_user_holds_the_deadline_of_any_request() -> None:
    # one timeout mechanism for every request: a prompt whose server asks the user is held like a tool call
    async def slow_user(request: ElicitationForm | UrlElicitation) -> ElicitationAnswer:
        assert isinstance(request, ElicitationForm)
        await asyncio.sleep(1.5)  # the user reads and types for three times the request's timeout
        return request.answer({"name": "Ada"})

    async with McpHub(handlers=ClientHandlers(elicit=slow_user), max_total_timeout=60.0) as hub:
        await hub.connect("asker", command=sys.executable, args=[str(ASKER)], timeout=0.5)
        rendered = await hub.get_prompt("asker", "greet")
    assert rendered.messages[0].content == "hello Ada"
