"""Error mapping at the HTTP boundary, bounded retries, broken and unparseable streams, and no key leaks."""

from __future__ import annotations

import logging

import httpx
import pytest

from synapse_nb.errors import (
    AuthenticationError,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailableError,
    RateLimitError,
    StreamError,
)
from synapse_nb.protocols import Completion, Provider, TextChunk
from synapse_nb.providers._http import RetryPolicy
from synapse_nb.types import Message
from tests.providers.provider_support import PLANTED_KEY, MakeProvider
from tests.support.llm_server import Gate, LlmServer, call, error, raw_body, raw_sse, stream_error, text, tool_calls
from tests.support.local_servers import refusing_port

pytestmark = pytest.mark.anyio


async def run(provider: Provider) -> Completion:
    chunks = [c async for c in provider.stream([Message.user("hi")])]
    assert isinstance(chunks[-1], Completion)
    return chunks[-1]


async def drain(provider: Provider, received: list[str]) -> None:
    """Stream to the end, keeping the text pieces that arrived before any error."""
    async for chunk in provider.stream([Message.user("hi")]):
        if isinstance(chunk, TextChunk):
            received.append(chunk.text)


async def fail(provider: Provider) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        await run(provider)
    return info.value


def assert_one_line(err: ProviderError, wire: str) -> None:
    assert err.provider == wire
    assert "\n" not in str(err)
    assert str(err).strip()


# ---- HTTP statuses -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
async def test_rejected_key_is_an_authentication_error(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str, status: int
) -> None:
    llm_server.queue(error(status, "invalid x-api-key"))
    async with make_provider(wire) as provider:
        err = await fail(provider)
    assert type(err) is AuthenticationError
    assert err.status == status
    assert_one_line(err, wire)
    assert "invalid x-api-key" in str(err)
    assert ("OPENAI_API_KEY" if wire == "openai" else "ANTHROPIC_API_KEY") in str(err)
    assert len(llm_server.requests) == 1, "a rejected key is not retried"


async def test_a_bad_request_is_a_provider_error_with_the_providers_message(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    llm_server.queue(error(400, "messages: field required"))
    async with make_provider(wire) as provider:
        err = await fail(provider)
    assert type(err) is ProviderError
    assert err.status == 400
    assert "messages: field required" in str(err)
    assert len(llm_server.requests) == 1


async def test_not_found_hints_at_model_and_base_url(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    llm_server.queue(error(404, "model 'gpt-test' not found"))
    async with make_provider(wire) as provider:
        err = await fail(provider)
    assert err.status == 404
    assert "model name and the base URL" in str(err)


async def test_429_is_retried_after_retry_after(llm_server: LlmServer, make_provider: MakeProvider, wire: str) -> None:
    llm_server.queue(error(429, "slow down", retry_after=0.2), text("ok"))
    async with make_provider(wire, retry=RetryPolicy(max_retries=3, base_delay=0.0)) as provider:
        done = await run(provider)
    assert done.message.content == "ok"
    first, second = llm_server.requests
    assert second.at - first.at >= 0.2, "the retry must wait at least the server's retry-after"
    assert second.body == first.body


async def test_429_gives_up_after_bounded_retries(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    llm_server.queue(*[error(429, "slow down", retry_after=0.01) for _ in range(4)], text("never"))
    async with make_provider(wire) as provider:
        err = await fail(provider)
    assert isinstance(err, RateLimitError)
    assert err.status == 429
    assert err.retry_after == 0.01
    assert "after 3 retries" in str(err)
    assert_one_line(err, wire)
    assert len(llm_server.requests) == 4
    assert llm_server.pending == 1


async def test_a_long_retry_after_is_not_waited_for(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    llm_server.queue(error(429, "daily quota", retry_after=3600), text("never"))
    async with make_provider(wire) as provider:
        err = await fail(provider)
    assert isinstance(err, RateLimitError)
    assert err.retry_after == 3600
    assert "3600" in str(err)
    assert len(llm_server.requests) == 1


@pytest.mark.parametrize("status", [500, 502, 503, 529])
async def test_server_errors_are_retried_then_succeed(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str, status: int
) -> None:
    llm_server.queue(error(status), error(status), text("recovered"))
    async with make_provider(wire) as provider:
        done = await run(provider)
    assert done.message.content == "recovered"
    assert len(llm_server.requests) == 3


async def test_server_errors_give_up_after_bounded_retries(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    llm_server.queue(*[error(529 if wire == "anthropic" else 503, "Overloaded") for _ in range(3)])
    async with make_provider(wire, retry=RetryPolicy(max_retries=2, base_delay=0.01)) as provider:
        err = await fail(provider)
    assert type(err) is ProviderUnavailableError
    assert err.status == (529 if wire == "anthropic" else 503)
    assert "after 2 retries" in str(err)
    if wire == "anthropic":
        assert "overloaded" in str(err)
    assert len(llm_server.requests) == 3


async def test_an_overloaded_event_before_any_chunk_is_retried(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    llm_server.queue(stream_error("overloaded_error", "Overloaded"), text("fine"))
    async with make_provider(wire) as provider:
        done = await run(provider)
    assert done.message.content == "fine"
    assert len(llm_server.requests) == 2


async def test_no_retry_once_a_chunk_was_yielded(llm_server: LlmServer, make_provider: MakeProvider, wire: str) -> None:
    llm_server.queue(stream_error("overloaded_error", "Overloaded", after_text="Partial answer"), text("never"))
    received: list[str] = []
    async with make_provider(wire) as provider:
        with pytest.raises(ProviderUnavailableError) as info:
            await drain(provider, received)
    assert "".join(received) == "Partial answer"
    assert "already started" in str(info.value)
    assert info.value.status == 529
    assert len(llm_server.requests) == 1


# ---- broken and unparseable streams --------------------------------------------------------------------------


async def test_a_stream_cut_half_way_is_a_stream_error(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    llm_server.queue(text(["one", "two", "three"]).cut(), text("never"))
    received: list[str] = []
    async with make_provider(wire) as provider:
        with pytest.raises(StreamError) as info:
            await drain(provider, received)
    assert received == ["one"]
    assert_one_line(info.value, wire)
    assert isinstance(info.value.__cause__, httpx.HTTPError), "raised from the httpx error"
    assert len(llm_server.requests) == 1


async def test_a_stream_that_ends_early_is_a_stream_error(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    if wire == "openai":
        frames = ['data: {"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": null}]}\n\n']
    else:
        frames = [
            'event: message_start\ndata: {"type": "message_start", "message": {"usage": {"input_tokens": 3}}}\n\n',
            'data: {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}\n\n',
        ]
    llm_server.queue(raw_sse(*frames))
    async with make_provider(wire) as provider:
        err = await fail(provider)
    assert isinstance(err, StreamError)
    assert "ended before the response was complete" in str(err)


async def test_garbage_in_the_stream_is_a_stream_error(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    llm_server.queue(raw_sse(": hello\n\n", "data: {this is not json\n\n"))
    async with make_provider(wire) as provider:
        err = await fail(provider)
    assert isinstance(err, StreamError)
    assert "not JSON" in str(err)
    assert "{this is not json" in str(err)
    assert_one_line(err, wire)


async def test_unparseable_tool_arguments_are_a_stream_error(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    llm_server.queue(tool_calls(call("echo", '{"text": "unterminated')))
    async with make_provider(wire) as provider:
        err = await fail(provider)
    assert isinstance(err, StreamError)
    assert "'echo'" in str(err)
    assert "not JSON" in str(err)


async def test_a_non_stream_body_is_a_stream_error(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    llm_server.queue(raw_body(200, "<html><body>Gateway login</body></html>", "text/html"))
    async with make_provider(wire) as provider:
        err = await fail(provider)
    assert isinstance(err, StreamError)
    assert "expected an event stream" in str(err)
    assert "Gateway login" in str(err)


async def test_a_json_error_body_with_status_200_is_classified(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str
) -> None:
    body = '{"error": {"type": "authentication_error", "message": "bad key"}}'
    llm_server.queue(raw_body(200, body, "application/json"))
    async with make_provider(wire) as provider:
        err = await fail(provider)
    assert isinstance(err, AuthenticationError)
    assert "bad key" in str(err)


# ---- timeouts and connections --------------------------------------------------------------------------------


async def test_a_slow_first_byte_is_a_timeout(llm_server: LlmServer, make_provider: MakeProvider, wire: str) -> None:
    llm_server.queue(text("late").held(Gate()))
    timeout = httpx.Timeout(connect=5.0, read=0.3, write=5.0, pool=5.0)
    async with make_provider(wire, timeout=timeout) as provider:
        err = await fail(provider)
    assert type(err) is ProviderTimeout
    assert err.status is None
    assert "read timeout of 0.3 s" in str(err)
    assert isinstance(err.__cause__, httpx.ReadTimeout)
    assert len(llm_server.requests) == 1, "timeouts are not retried"


async def test_a_stall_mid_stream_is_a_timeout(llm_server: LlmServer, make_provider: MakeProvider, wire: str) -> None:
    llm_server.queue(text(["a", "b"]).gated(Gate()))
    async with make_provider(wire, timeout=0.3) as provider:
        err = await fail(provider)
    assert type(err) is ProviderTimeout


async def test_nothing_listening_is_provider_unavailable(wire: str) -> None:
    from synapse_nb.providers.anthropic import AnthropicProvider
    from synapse_nb.providers.openai import OpenAIProvider

    cls = OpenAIProvider if wire == "openai" else AnthropicProvider
    with refusing_port() as port:
        url = f"http://127.0.0.1:{port}"
        async with cls("m", api_key=PLANTED_KEY, base_url=url) as provider:
            err = await fail(provider)
    assert type(err) is ProviderUnavailableError
    assert f"cannot reach {wire} at {url}" in str(err)
    assert isinstance(err.__cause__, httpx.ConnectError)


# ---- secrets -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(lambda: error(401, f"Incorrect API key provided: {PLANTED_KEY}"), id="401-echoing-key"),
        pytest.param(lambda: error(429, f"key {PLANTED_KEY} is over quota", retry_after=0.01), id="429"),
        pytest.param(lambda: error(500, f"internal error for {PLANTED_KEY}"), id="500"),
        pytest.param(lambda: raw_sse(f"data: {{{PLANTED_KEY}\n\n"), id="garbage-with-key"),
        pytest.param(lambda: raw_body(200, f"<html>{PLANTED_KEY}</html>", "text/html"), id="html-with-key"),
        pytest.param(lambda: text(["a", "b"]).cut(), id="cut"),
        pytest.param(lambda: text("x").held(Gate()), id="timeout"),
    ],
)
async def test_the_api_key_never_appears_in_errors_or_logs(
    llm_server: LlmServer, make_provider: MakeProvider, wire: str, reply: object, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, httpx and httpcore included
    assert callable(reply)
    llm_server.queue(*[reply() for _ in range(4)])
    async with make_provider(wire, timeout=httpx.Timeout(5.0, read=0.3)) as provider:
        assert PLANTED_KEY not in repr(provider)
        err = await fail(provider)
    assert (
        llm_server.requests[0]
        .headers.get("authorization" if wire == "openai" else "x-api-key", "")
        .endswith(PLANTED_KEY)
    ), "the key was really sent"
    texts = [str(err), repr(err), str(err.args), caplog.text]
    cause = err.__cause__
    while cause is not None:
        texts += [str(cause), repr(cause)]
        cause = cause.__cause__
    for t in texts:
        assert PLANTED_KEY not in t
        assert PLANTED_KEY[:16] not in t
