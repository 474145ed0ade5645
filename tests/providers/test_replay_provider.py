"""Recording a real HTTP provider against the local wire server, then replaying it with the server stopped."""

from __future__ import annotations

from pathlib import Path

import pytest

from synapse_nb.cassette import CassetteWriter
from synapse_nb.cassette_reader import Cassette
from synapse_nb.errors import ReplayMismatchError
from synapse_nb.masking import SecretMask
from synapse_nb.protocols import Completion, Provider, ProviderChunk
from synapse_nb.providers.replay import RecordingProvider, ReplayProvider, replay_provider
from synapse_nb.types import Message, ToolSpec
from tests.providers.provider_support import PLANTED_KEY, MakeProvider
from tests.support.llm_server import LlmServer, call, text, tool_calls

pytestmark = pytest.mark.anyio

SPECS = (ToolSpec("demo__query", "Run SQL", {"type": "object", "properties": {"sql": {"type": "string"}}}),)


async def collect(provider: Provider, messages: list[Message]) -> list[ProviderChunk]:
    return [chunk async for chunk in provider.stream(messages, SPECS, system="be brief")]


def without_ttft(chunks: list[ProviderChunk]) -> list[ProviderChunk]:
    return [Completion(c.message, c.usage, c.stop_reason) if isinstance(c, Completion) else c for c in chunks]


async def test_a_recorded_exchange_replays_identically_without_the_server(
    wire: str, llm_server: LlmServer, make_provider: MakeProvider, tmp_path: Path
) -> None:
    path = tmp_path / "c.jsonl"
    mask = SecretMask([PLANTED_KEY], environ={})
    writer = CassetteWriter(path, mask)
    live = make_provider(wire)
    recording = RecordingProvider(live, writer)
    llm_server.queue(tool_calls(call("demo__query", {"sql": "select 1"})), text(f"One row; key {PLANTED_KEY}."))
    first = [Message.user("How many rows?")]
    asked = await collect(recording, first)
    reply = asked[-1]
    assert isinstance(reply, Completion)
    call_id = reply.message.tool_calls[0].id
    second = [*first, reply.message, Message.tool(call_id, "1")]
    answered = await collect(recording, second)
    writer.close()
    await live.aclose()
    llm_server.stop()  # nothing below may reach it

    assert PLANTED_KEY not in path.read_text()
    cassette = Cassette.load(path, mask)
    assert len(cassette.exchanges) == 2
    model = "openai:gpt-test" if wire == "openai" else "anthropic:claude-test"
    replaying = replay_provider(model, cassette, env={})
    assert isinstance(replaying, ReplayProvider)
    assert replaying.params == recording.params  # Anthropic's max_tokens is part of the request
    assert without_ttft(await collect(replaying, first)) == without_ttft(asked)
    # A provider's tool call ids differ run to run; the fingerprint does not see them.
    renamed = [*first, Message.assistant("", tuple(
        type(c)(f"other-{c.id}", c.name, c.arguments) for c in reply.message.tool_calls)),
        Message.tool(f"other-{call_id}", "1")]
    again = await collect(replaying, renamed)
    assert isinstance(again[-1], Completion)
    assert again[-1].message.content == "One row; key [REDACTED]."  # secrets in answers are not kept either
    assert [type(c) for c in again] == [type(c) for c in answered]
    with pytest.raises(ReplayMismatchError, match=r"message #3 \(tool\) differs"):
        await collect(replaying, [*first, reply.message, Message.tool(call_id, "2")])
