"""What the OpenAI Chat Completions adapter sends: auth, tools, tool results, errors, images, system."""

from __future__ import annotations

import pytest

from synapse_nb.protocols import Completion, ToolCallChunk
from synapse_nb.providers.openai import OpenAIProvider, to_openai_messages
from synapse_nb.types import ContentBlock, Message, ToolCall, ToolSpec
from tests.providers.provider_support import PLANTED_KEY, MakeProvider
from tests.support.llm_server import LlmServer, raw_sse, text

pytestmark = pytest.mark.anyio

PNG = ContentBlock("image", data="iVBORw0KGgo=", mime_type="image/png")
TOOLS = [
    ToolSpec(
        "demo__query", "Run a read-only SQL query.", {"type": "object", "properties": {"sql": {"type": "string"}}}
    ),
    ToolSpec("chart", "Draw a chart.", {"type": "object", "properties": {}}),
]
CONVERSATION = [
    Message.user("Top products?"),
    Message.assistant(
        "Let me check.", (ToolCall("c1", "demo__query", {"sql": "select 1"}), ToolCall("c2", "chart", {}))
    ),
    Message.tool("c1", "no such table: sales", name="demo__query", is_error=True),
    Message.tool("c2", "[image image/png]", name="chart", images=(PNG,)),
    Message.user("And now?"),
]


async def test_request_shape(llm_server: LlmServer, make_provider: MakeProvider) -> None:
    llm_server.queue(text("Done."))
    async with make_provider("openai") as provider:
        [c async for c in provider.stream(CONVERSATION, TOOLS, system="You are terse.")]
    (request,) = llm_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.method == "POST"
    assert request.headers["authorization"] == f"Bearer {PLANTED_KEY}"
    assert request.headers["content-type"] == "application/json"
    body = request.body
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "demo__query",
                "description": "Run a read-only SQL query.",
                "parameters": {"type": "object", "properties": {"sql": {"type": "string"}}},
            },
        },
        {
            "type": "function",
            "function": {
                "name": "chart",
                "description": "Draw a chart.",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Top products?"},
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "demo__query", "arguments": '{"sql": "select 1"}'},
                },
                {"id": "c2", "type": "function", "function": {"name": "chart", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Error: no such table: sales"},
        {"role": "tool", "tool_call_id": "c2", "content": "[image image/png]"},
        # Images cannot ride in tool messages: they follow the run of tool results as one user message.
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Image(s) returned by tool call c2:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
        },
        {"role": "user", "content": "And now?"},
    ]


def test_no_tools_key_without_tools_and_system_messages_in_place() -> None:
    provider = OpenAIProvider("m", api_key="k")
    body = provider.request_body([Message.system("Be brief."), Message.user("hi")])
    assert "tools" not in body
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]


def test_an_assistant_message_with_only_tool_calls_has_null_content() -> None:
    (m,) = to_openai_messages([Message.assistant("", (ToolCall("c", "t", {"a": 1}),))])
    assert m["content"] is None
    assert m["tool_calls"][0]["function"]["arguments"] == '{"a": 1}'


def test_user_images_become_content_parts() -> None:
    (m,) = to_openai_messages([Message("user", "look", images=(PNG,))])
    assert m["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


async def test_no_key_sends_no_authorization_header(llm_server: LlmServer, make_provider: MakeProvider) -> None:
    llm_server.queue(text("hi"))
    async with make_provider("openai", api_key=None, name="ollama", key_variable=None) as provider:
        assert provider.name == "ollama"
        [c async for c in provider.stream([Message.user("hi")])]
    assert "authorization" not in llm_server.requests[0].headers


async def test_servers_that_omit_index_and_send_whole_calls(llm_server: LlmServer, make_provider: MakeProvider) -> None:
    # Ollama-style: each call complete in one delta, no `index`, arguments possibly already an object.
    def frame(tc: dict[str, object], finish: str | None = None) -> str:
        import json

        return "data: " + json.dumps({"choices": [{"delta": {"tool_calls": [tc]}, "finish_reason": finish}]}) + "\n\n"

    llm_server.queue(
        raw_sse(
            frame({"id": "a", "function": {"name": "one", "arguments": '{"x": 1}'}}),
            frame({"id": "b", "function": {"name": "two", "arguments": {"y": 2}}}, "tool_calls"),
            "data: [DONE]\n\n",
        )
    )
    async with make_provider("openai") as provider:
        chunks = [c async for c in provider.stream([Message.user("hi")])]
    assert [c.index for c in chunks if isinstance(c, ToolCallChunk)] == [0, 1]
    done = chunks[-1]
    assert isinstance(done, Completion)
    assert done.message.tool_calls == (ToolCall("a", "one", {"x": 1}), ToolCall("b", "two", {"y": 2}))
    assert done.usage.total_tokens == 0, "no usage chunk: zero, not an error"
