"""The Agent over real transports: an OpenAI/Anthropic-format model over HTTP (tests/support/llm_server.py), and the
demo MCP server over stdio through a real McpHub."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tools import ToolRegistry, tool
from synapse_nb.events import ToolCallStarted
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.providers import anthropic, openai
from synapse_nb.providers.scripted import ScriptedProvider
from tests.support import (
    llm_server,
    tools_server,
)

TIMEOUT = 20.0


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.mark.anyio
@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_the_agent_runs_a_tool_round_trip_over_http(wire: str) -> None:
    with llm_server.LlmServer() as server:
        server.queue(
            llm_server.tool_calls(llm_server.call("add", {"a": 2, "b": 3}, id="call_add_1"), text="Let me add."),
            llm_server.text("The sum is 5.", usage=(40, 6)),
        )
        if wire == "openai":
            provider: Any = openai.OpenAIProvider("gpt-test", api_key="k-test", base_url=server.openai_base_url)
        else:
            provider = anthropic.AnthropicProvider("claude-test", api_key="k-test", base_url=server.anthropic_base_url)
        registry = ToolRegistry()
        registry.register(add)
        try:
            agent = Agent(provider, registry, system="You add numbers.")
            result = await asyncio.wait_for(agent.ask("What is 2 + 3?"), TIMEOUT)
        finally:
            await provider.aclose()
        requests = server.requests

    assert result.status == "finished", result.error
    assert result.text == "The sum is 5."
    assert result.iterations == 2
    call = result.tool_calls[0]
    assert (call.call.id, call.call.name, dict(call.call.arguments)) == ("call_add_1", "add", {"a": 2, "b": 3})
    assert call.result is not None
    assert call.result.text == "5"
    assert result.messages[1].content == "Let me add."
    assert result.usage.input_tokens >= 40
    assert len(requests) == 2
    first, second = requests[0].body, requests[1].body
    tool_names = [t.get("function", t).get("name") for t in first["tools"]]
    assert tool_names == ["add"]
    sent = json.dumps(second["messages"])
    assert "call_add_1" in sent  # the tool result answers the call by its id
    assert '"5"' in sent  # the tool result travels as the string "5"


def demo_server_args() -> list[str]:
    return list(tools_server.ARGS)


@pytest.fixture
async def demo_hub() -> AsyncIterator[McpHub]:
    async with McpHub() as hub:
        await hub.connect("demo", command=sys.executable, args=demo_server_args())
        yield hub


@pytest.mark.process
@pytest.mark.anyio
async def test_the_demo_script_answers_from_the_real_demo_server(demo_hub: McpHub) -> None:
    agent = Agent(ScriptedProvider("demo"), ToolRegistry(demo_hub))
    tables = await asyncio.wait_for(agent.ask("What tables are there?"), TIMEOUT)
    assert tables.status == "finished"
    assert [c.tool for c in tables.tool_calls] == ["list_tables", *["describe_table"] * 3]
    assert all(c.server == "demo" and not c.is_error for c in tables.tool_calls)
    assert "**3 tables**" in tables.text
    for row in ("| `customers` | 50 |", "| `orders` | 300 |", "| `products` | 20 |"):
        assert row in tables.text

    top = await asyncio.wait_for(agent.ask("Top products by revenue"), TIMEOUT)
    assert [c.call.name for c in top.tool_calls] == ["demo__query"]
    assert not top.tool_calls[0].is_error
    assert top.text.startswith("**Top products by revenue**")
    assert "| product | category | units | revenue |" in top.text
    assert top.text.count("\n| ") >= 5  # five product rows under the header


@pytest.mark.process
@pytest.mark.anyio
async def test_cancelling_a_real_tool_call_keeps_the_server_usable(demo_hub: McpHub) -> None:
    started = asyncio.Event()

    def on_event(event: Any) -> None:
        if isinstance(event, ToolCallStarted):
            started.set()

    script = [
        {"match": "sleep", "tool": "sleep", "arguments": {"seconds": 60}, "answer": "slept"},
        {"match": "echo", "tool": "echo", "arguments": {"text": "hi"}, "answer": "echo said {result}"},
    ]
    agent = Agent(ScriptedProvider(script), ToolRegistry(demo_hub), sinks=[on_event])
    turn = asyncio.create_task(agent.ask("sleep"))
    await asyncio.wait_for(started.wait(), TIMEOUT)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(turn, TIMEOUT)
    assert agent.messages[-1].role == "tool"
    assert agent.messages[-1].content == "cancelled"
    # The server stays connected: the session's next turn calls it again.
    follow_up = await asyncio.wait_for(agent.ask("echo"), TIMEOUT)
    assert follow_up.text == "echo said hi"
    assert [s.state for s in demo_hub.servers] == ["connected"]
