"""Server-sent events as httpx-sse decodes them over real HTTP, each event bounded; the retry-after parser."""

from __future__ import annotations

import email.utils
import time
from collections.abc import AsyncIterator

import pytest

from synapse_nb.errors import StreamError
from synapse_nb.protocols import Completion, ToolCallChunk
from synapse_nb.providers._http import MAX_EVENT_BYTES, HttpStreamer, RetryPolicy, parse_retry_after
from synapse_nb.types import Message
from tests.providers.provider_support import MakeProvider
from tests.support.llm_server import Gate, LlmServer, call, raw_sse, tool_calls

pytestmark = pytest.mark.anyio


@pytest.fixture
async def streamer(llm_server: LlmServer) -> AsyncIterator[HttpStreamer]:
    http = HttpStreamer(provider="openai", base_url=llm_server.openai_base_url, max_event_bytes=64 * 1024)
    yield http
    await http.aclose()


async def events(http: HttpStreamer, server: LlmServer, *frames: str) -> list[tuple[str, str, str]]:
    """The (event, data, id) of each event the streamer yields for a response of exactly these frames."""
    server.queue(raw_sse(*frames))
    return [(e.event, e.data, e.id) async for e in http.post_sse("/chat/completions", {}, {})]


async def test_event_and_data_fields(streamer: HttpStreamer, llm_server: LlmServer) -> None:
    got = await events(streamer, llm_server, "event: ping\ndata: {}\n\ndata: x\n\n")
    assert got == [("ping", "{}", ""), ("message", "x", "")]
    assert llm_server.requests[0].headers["accept-encoding"] == "identity", "an uncompressed stream is asked for"


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
async def test_every_line_ending(streamer: HttpStreamer, llm_server: LlmServer, eol: str) -> None:
    got = await events(streamer, llm_server, f"event: a{eol}data: 1{eol}{eol}data: 2{eol}{eol}")
    assert got == [("a", "1", ""), ("message", "2", "")]


async def test_crlf_split_across_writes_is_one_line_end(streamer: HttpStreamer, llm_server: LlmServer) -> None:
    # A CR at the end of one write and its LF at the start of the next must not count as an empty line.
    assert await events(streamer, llm_server, "data: a\r", "\ndata: b\r\n\r\n") == [("message", "a\nb", "")]


async def test_an_event_split_across_many_writes(streamer: HttpStreamer, llm_server: LlmServer) -> None:
    stream = 'event: message_start\ndata: {"type": "message_start"}\n\n'
    assert await events(streamer, llm_server, *stream) == [("message_start", '{"type": "message_start"}', "")]


async def test_multi_line_data_comments_and_unknown_fields(streamer: HttpStreamer, llm_server: LlmServer) -> None:
    got = await events(streamer, llm_server, ": keep-alive\nfoo: bar\ndata: first\ndata: second\n: more\n\n")
    assert got == [("message", "first\nsecond", "")]


async def test_events_without_data_are_skipped(streamer: HttpStreamer, llm_server: LlmServer) -> None:
    got = await events(streamer, llm_server, "event: ping\n\nid: 7\ndata: y\n\nretry: 100\n\n")
    assert got == [("message", "y", "7")]


async def test_a_leading_bom_is_dropped(streamer: HttpStreamer, llm_server: LlmServer) -> None:
    assert await events(streamer, llm_server, "\ufeffdata: x\n\n") == [("message", "x", "")]


async def test_the_end_of_the_body_ends_a_last_event(streamer: HttpStreamer, llm_server: LlmServer) -> None:
    got = await events(streamer, llm_server, "data: a\n\n", "data: [DONE]")
    assert got == [("message", "a", ""), ("message", "[DONE]", "")]


async def test_events_arrive_as_soon_as_they_are_complete(streamer: HttpStreamer, llm_server: LlmServer) -> None:
    gate = Gate()
    llm_server.queue(raw_sse("data: a\n\n", "data: b\n\n").gated(gate))
    stream = streamer.post_sse("/chat/completions", {}, {})
    first = await anext(stream)
    assert first.data == "a"
    # The server writes "a", then stops at the gate: "a" must arrive without the rest (a decoder that
    # waited for more bytes would see the gate time out first).
    assert gate.wait_reached(), "the server never reached its gate"
    assert gate.holding, "the first event should come while the server still holds the rest back"
    gate.open()
    assert [e.data async for e in stream] == ["b"]


# ---- bounded events -----------------------------------------------------------------------------------------


async def test_a_line_that_never_ends_is_a_stream_error(streamer: HttpStreamer, llm_server: LlmServer) -> None:
    # The server sends 1 MiB of one line, then holds the connection open: the stream never ends, so
    # the error can only come from the bound (64 KiB here), not from reading to the end.
    gate = Gate()
    llm_server.queue(raw_sse("data: " + "x" * (1 << 20), "\n\n").gated(gate))
    with pytest.raises(StreamError) as caught:
        async for _ in streamer.post_sse("/chat/completions", {}, {}):
            pass
    assert gate.wait_reached()
    assert gate.holding, "the error came while the server was still sending (holding the stream open)"
    gate.open()
    message = str(caught.value)
    assert message.startswith("openai: the stream sent an event (or a line) longer than 65,536 bytes")
    assert "\n" not in message
    assert "xxxx" not in message


async def test_an_event_of_many_lines_is_bounded_too(streamer: HttpStreamer, llm_server: LlmServer) -> None:
    gate = Gate()
    llm_server.queue(raw_sse(*["data: " + "y" * 1000 + "\n"] * 100, "\n").gated(gate, after=99))
    with pytest.raises(StreamError, match="longer than 65,536 bytes"):
        async for _ in streamer.post_sse("/chat/completions", {}, {}):
            pass
    gate.open()


async def test_many_events_add_up_to_more_than_the_bound(streamer: HttpStreamer, llm_server: LlmServer) -> None:
    got = await events(streamer, llm_server, *[f"data: {'z' * 1000}\n\n" for _ in range(200)])
    assert len(got) == 200, "the bound is per event, not per stream"


async def test_the_default_bound_takes_a_large_tool_call_in_one_event(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    # Sent whole in one event, as Ollama sends tool calls (pieces=1).
    big = "w" * (MAX_EVENT_BYTES // 2)
    llm_server.queue(tool_calls(call("save", {"content": big}), pieces=1))
    async with make_provider(wire) as provider:
        chunks = [c async for c in provider.stream([Message.user("save it")])]
    assert isinstance(chunks[-1], Completion)
    assert chunks[-1].message.tool_calls[0].arguments == {"content": big}
    assert any(isinstance(c, ToolCallChunk) for c in chunks)


# ---- retry-after --------------------------------------------------------------------------------------------


def test_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "0.2"}) == 0.2
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "-3"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    later = email.utils.formatdate(time.time() + 60, usegmt=True)
    seconds = parse_retry_after({"retry-after": later})
    assert seconds is not None
    assert 50 < seconds <= 60


def test_backoff_grows_and_is_capped() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=4.0)
    for retry, (low, high) in enumerate([(0.5, 1.0), (1.0, 2.0), (2.0, 4.0), (2.0, 4.0), (2.0, 4.0)]):
        assert low <= policy.backoff(retry) <= high
