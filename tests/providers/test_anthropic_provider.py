"""What the Anthropic Messages adapter sends: headers, system, tools, merged tool_result turns, images."""

from __future__ import annotations

import json

import pytest

from synapse_nb.protocols import Completion
from synapse_nb.providers.anthropic import AnthropicProvider, to_anthropic_messages
from synapse_nb.types import ContentBlock, Message, ToolCall, ToolSpec, Usage
from tests.providers.provider_support import PLANTED_KEY, MakeProvider
from tests.support.llm_server import LlmServer, raw_sse, text

pytestmark = pytest.mark.anyio


def sse(obj: object, event: str | None = None) -> str:
    return (f"event: {event}\n" if event else "") + f"data: {json.dumps(obj)}\n\n"


PNG = ContentBlock("image", data="iVBORw0KGgo=", mime_type="image/png")
IMAGE_BLOCK = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
TOOLS = [ToolSpec("demo__query", "Run SQL.", {"type": "object", "properties": {"sql": {"type": "string"}}})]
CONVERSATION = [
    Message.system("Data is in DuckDB."),
    Message.user("Top products?"),
    Message.assistant(
        "Let me check.", (ToolCall("t1", "demo__query", {"sql": "select 1"}), ToolCall("t2", "chart", {}))
    ),
    Message.tool("t1", "no such table: sales", name="demo__query", is_error=True),
    Message.tool("t2", "[image image/png]", name="chart", images=(PNG,)),
    Message.user("And now?"),
]


async def test_request_shape(llm_server: LlmServer, make_provider: MakeProvider) -> None:
    """The wire shape of a request (prompt caching off here: test_prompt_cache.py covers its marks)."""
    llm_server.queue(text("Done."))
    async with make_provider("anthropic", max_tokens=1234, prompt_cache=False) as provider:
        [c async for c in provider.stream(CONVERSATION, TOOLS, system="You are terse.")]
    (request,) = llm_server.requests
    assert request.path == "/v1/messages"
    assert request.method == "POST"
    assert request.headers["x-api-key"] == PLANTED_KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    body = request.body
    assert body["model"] == "claude-test"
    assert body["max_tokens"] == 1234
    assert body["stream"] is True
    assert body["system"] == "You are terse.\n\nData is in DuckDB."
    assert body["tools"] == [
        {
            "name": "demo__query",
            "description": "Run SQL.",
            "input_schema": {"type": "object", "properties": {"sql": {"type": "string"}}},
        }
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Top products?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "t1", "name": "demo__query", "input": {"sql": "select 1"}},
                {"type": "tool_use", "id": "t2", "name": "chart", "input": {}},
            ],
        },
        # Both tool results and the next user text form ONE user turn, results first.
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "is_error": True,
                    "content": [{"type": "text", "text": "no such table: sales"}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "is_error": False,
                    "content": [{"type": "text", "text": "[image image/png]"}, IMAGE_BLOCK],
                },
                {"type": "text", "text": "And now?"},
            ],
        },
    ]


def test_default_max_tokens_and_no_system_or_tools_keys_when_absent() -> None:
    body = AnthropicProvider("m", api_key="k").request_body([Message.user("hi")])
    assert body["max_tokens"] == 4096
    assert "system" not in body
    assert "tools" not in body


def test_empty_texts_are_left_out_because_the_api_rejects_them() -> None:
    system, turns = to_anthropic_messages(
        [Message.user("hi"), Message.assistant("", (ToolCall("t", "x", {}),)), Message.tool("t", "")]
    )
    assert system is None
    assert turns[1]["content"] == [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]
    assert turns[2]["content"][0]["content"] == [{"type": "text", "text": "(no output)"}]


def test_user_images_are_base64_image_blocks() -> None:
    _, turns = to_anthropic_messages([Message("user", "look", images=(PNG,))])
    assert turns == [{"role": "user", "content": [{"type": "text", "text": "look"}, IMAGE_BLOCK]}]


async def test_cached_input_tokens_count_as_input_and_unknown_events_are_ignored(
    llm_server: LlmServer, make_provider: MakeProvider
) -> None:
    usage = {"input_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20, "output_tokens": 1}
    llm_server.queue(
        raw_sse(
            sse({"type": "message_start", "message": {"usage": usage}}, "message_start"),
            sse({"type": "future_thing"}, "future_thing"),
            sse({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            sse({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}}),
            sse({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
            sse({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}}),
            sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
            sse({"type": "message_stop"}),
        )
    )
    async with make_provider("anthropic") as provider:
        chunks = [c async for c in provider.stream([Message.user("hi")])]
    done = chunks[-1]
    assert isinstance(done, Completion)
    assert done.message == Message.assistant("Hi")
    assert done.usage == Usage(125, 9, cached_input_tokens=100, cache_write_tokens=20)


async def test_tool_input_given_whole_at_block_start(llm_server: LlmServer, make_provider: MakeProvider) -> None:
    block = '{"type": "tool_use", "id": "t9", "name": "echo", "input": {"text": "hi"}}'
    llm_server.queue(
        raw_sse(
            'data: {"type": "message_start", "message": {"usage": {"input_tokens": 1}}}\n\n',
            f'data: {{"type": "content_block_start", "index": 0, "content_block": {block}}}\n\n',
            'data: {"type": "content_block_stop", "index": 0}\n\n',
            'data: {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}}\n\n',
            'data: {"type": "message_stop"}\n\n',
        )
    )
    async with make_provider("anthropic") as provider:
        chunks = [c async for c in provider.stream([Message.user("hi")])]
    done = chunks[-1]
    assert isinstance(done, Completion)
    assert done.message.tool_calls == (ToolCall("t9", "echo", {"text": "hi"}),)
