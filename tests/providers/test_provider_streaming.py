"""Both HTTP adapters over real HTTP: incremental text, fragmented tool calls, usage, stop reason, TTFT."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import pytest

from synapse_nb.protocols import Completion, Provider, ProviderChunk, TextChunk, ToolCallChunk
from synapse_nb.types import Message, ToolCall, ToolSpec, Usage
from tests.providers.provider_support import MakeProvider
from tests.support.llm_server import Gate, LlmServer, call, text, tool_calls

pytestmark = pytest.mark.anyio

ECHO = ToolSpec("echo", "Echo the text back.", {"type": "object", "properties": {"text": {"type": "string"}}})


async def collect(
    provider: Provider, messages: Sequence[Message] = (Message.user("hi"),), tools: Sequence[ToolSpec] = ()
) -> tuple[list[ProviderChunk], Completion]:
    chunks = [c async for c in provider.stream(messages, tools)]
    assert sum(isinstance(c, Completion) for c in chunks) == 1
    assert isinstance(chunks[-1], Completion), "the Completion comes last"
    assert all(isinstance(c, TextChunk | ToolCallChunk | Completion) for c in chunks)
    return chunks[:-1], chunks[-1]


async def test_text_streams_in_pieces_and_completes(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    llm_server.queue(text(["Hel", "lo, ", "world"], usage=(21, 4)))
    async with make_provider(wire) as provider:
        assert isinstance(provider, Provider)
        pieces, done = await collect(provider)
    assert pieces == [TextChunk("Hel"), TextChunk("lo, "), TextChunk("world")]
    assert done.message == Message.assistant("Hello, world")
    assert done.usage == Usage(21, 4)
    assert done.stop_reason == ("stop" if wire == "openai" else "end_turn")
    assert done.ttft_ms is not None
    assert done.ttft_ms >= 0


async def test_first_chunk_arrives_before_the_server_sends_the_rest(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    gate = Gate()
    llm_server.queue(text(["first", " second", " third"]).gated(gate))
    seen: list[ProviderChunk] = []
    async with make_provider(wire) as provider, contextlib.aclosing(provider.stream([Message.user("hi")])) as stream:
        async for chunk in stream:
            if not seen:
                assert chunk == TextChunk("first")
                # The server is still holding the rest of the response: the chunk was not buffered.
                assert gate.wait_reached(5)
                assert gate.holding
                gate.open()
            seen.append(chunk)
    assert "".join(c.text for c in seen if isinstance(c, TextChunk)) == "first second third"


async def test_fragmented_tool_calls_by_index(llm_server: LlmServer, make_provider: MakeProvider, wire: str) -> None:
    calls = (
        call("echo", {"text": "hello there, general"}, id="c1"),
        call("demo__query", {"sql": "select count(*) from orders", "limit": 5}, id="c2"),
        call("demo__list_tables", id="c3"),
    )
    llm_server.queue(tool_calls(*calls, text="Let me look.", pieces=4, interleave=True, usage=(40, 12)))
    async with make_provider(wire) as provider:
        pieces, done = await collect(provider, tools=[ECHO])
    tool_pieces = [c for c in pieces if isinstance(c, ToolCallChunk)]
    firsts = {}
    for c in tool_pieces:
        if c.index not in firsts:
            firsts[c.index] = c
            assert c.id is not None, "the first piece of a call has its id"
            assert c.name is not None, "the first piece of a call has its name"
    assert {i: (c.id, c.name) for i, c in firsts.items()} == {
        0: ("c1", "echo"),
        1: ("c2", "demo__query"),
        2: ("c3", "demo__list_tables"),
    }
    # Arguments arrive in several pieces, interleaved across calls, and reassemble by index.
    assert sum(1 for c in tool_pieces if c.index == 1 and c.arguments_delta) >= 3
    assert [c.index for c in tool_pieces if c.arguments_delta][:3] == [0, 1, 2]
    assert done.message == Message.assistant(
        "Let me look.",
        (
            ToolCall("c1", "echo", {"text": "hello there, general"}),
            ToolCall("c2", "demo__query", {"sql": "select count(*) from orders", "limit": 5}),
            ToolCall("c3", "demo__list_tables", {}),
        ),
    )
    assert done.usage == Usage(40, 12)
    assert done.stop_reason == ("tool_calls" if wire == "openai" else "tool_use")


async def test_a_stop_reason_is_passed_through(llm_server: LlmServer, make_provider: MakeProvider, wire: str) -> None:
    llm_server.queue(text("truncat", stop_reason="length" if wire == "openai" else "max_tokens"))
    async with make_provider(wire) as provider:
        _, done = await collect(provider)
    assert done.stop_reason == ("length" if wire == "openai" else "max_tokens")


async def test_one_client_serves_several_calls(llm_server: LlmServer, make_provider: MakeProvider, wire: str) -> None:
    llm_server.queue(text("one"), text("two"))
    async with make_provider(wire) as provider:
        first = await collect(provider)
        second = await collect(provider)
    assert (first[1].message.content, second[1].message.content) == ("one", "two")


async def test_consecutive_calls_reuse_one_connection(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    # An agent makes one model call per iteration: each must not cost a new TCP (and TLS) handshake.
    llm_server.queue(text("one"), tool_calls(call("f", {"x": 1})), text("three"))
    async with make_provider(wire) as provider:
        for _ in range(3):
            await collect(provider)
    assert len({r.client for r in llm_server.requests}) == 1


async def test_the_reply_ends_for_the_caller_before_the_server_closes_the_stream(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    """The turn goes on as soon as the last event arrives (its end shows and the cell goes idle); the tail of the
    body is read in the background, and the next call waits for it, so it still reuses the connection."""
    gate = Gate()
    llm_server.queue(text("done").lingering(gate), text("next"))
    async with make_provider(wire) as provider:
        _, first = await collect(provider)
        assert gate.wait_reached()  # the server holds the end of the first response until the gate opens
        gate.open()
        _, second = await collect(provider)
    assert (first.message.content, second.message.content) == ("done", "next")
    assert len({r.client for r in llm_server.requests}) == 1

async def test_stopping_early_closes_the_response(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    gate = Gate()
    llm_server.queue(text(["a", "b", "c"]).gated(gate), text("next"))
    async with make_provider(wire) as provider:
        async with contextlib.aclosing(provider.stream([Message.user("hi")])) as stream:
            async for _ in stream:
                break
        gate.open()
        _, done = await collect(provider)
    assert done.message.content == "next"


async def test_aclose_closes_the_client(make_provider: MakeProvider, wire: str) -> None:
    provider = make_provider(wire)
    await provider.aclose()
    assert provider._http._client.is_closed
