"""Cancelling a turn stops streaming, cancels tools in flight, reports TurnCancelled and keeps the transcript valid."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tools import ToolRegistry, tool
from synapse_nb.events import LlmCallFinished, MessageAdded, ToolCallFinished, TurnCancelled
from synapse_nb.protocols import Completion, ProviderChunk, TextChunk
from synapse_nb.providers.scripted import ScriptedProvider
from synapse_nb.types import Message, ToolSpec

TIMEOUT = 5.0


def assert_valid_transcript(messages: Sequence[Message]) -> None:
    """Every assistant tool call is answered by exactly one tool message right after it."""
    for i, message in enumerate(messages):
        if message.role == "assistant" and message.tool_calls:
            answers = messages[i + 1 : i + 1 + len(message.tool_calls)]
            assert [m.role for m in answers] == ["tool"] * len(message.tool_calls)
            assert {m.tool_call_id for m in answers} == {c.id for c in message.tool_calls}


@pytest.mark.anyio
async def test_cancelling_mid_tool_cancels_the_calls_in_flight(recorder: Any) -> None:
    running: list[str] = []
    cancelled: list[str] = []
    both_running = asyncio.Event()
    never = asyncio.Event()

    @tool
    async def wait_forever(label: str) -> str:
        running.append(label)
        if len(running) == 2:
            both_running.set()
        try:
            await never.wait()
        except asyncio.CancelledError:
            cancelled.append(label)
            raise
        return "unreachable"

    @tool
    def quick() -> str:
        return "quick result"

    registry = ToolRegistry()
    registry.register(wait_forever)
    registry.register(quick)
    script = [
        {"tool_calls": [
            {"name": "wait_forever", "arguments": {"label": "a"}},
            {"name": "quick", "arguments": {}},
            {"name": "wait_forever", "arguments": {"label": "b"}},
        ]},
        "after the interrupt",
    ]
    quick_done = asyncio.Event()

    def on_finished(event: Any) -> None:
        if isinstance(event, ToolCallFinished):
            quick_done.set()

    agent = Agent(ScriptedProvider(script), registry, sinks=[recorder, on_finished])
    turn = asyncio.create_task(agent.ask("wait"))
    await asyncio.wait_for(both_running.wait(), TIMEOUT)
    await asyncio.wait_for(quick_done.wait(), TIMEOUT)  # the quick call is done before the interrupt
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(turn, TIMEOUT)

    assert sorted(cancelled) == ["a", "b"]
    assert isinstance(recorder.events[-1], TurnCancelled)
    finished = {c.call.arguments.get("label", "quick"): c for c in recorder.of(ToolCallFinished)}
    assert finished["quick"].result is not None
    assert finished["quick"].result.text == "quick result"
    assert finished["a"].error == finished["b"].error == "cancelled"
    tool_messages = [m for m in agent.messages if m.role == "tool"]
    assert [(m.content, m.is_error) for m in tool_messages] == [
        ("cancelled", True), ("quick result", False), ("cancelled", True),
    ]
    assert [e.message.role for e in recorder.of(MessageAdded)][-3:] == ["tool"] * 3
    assert_valid_transcript(agent.messages)

    # The next turn starts from a valid transcript and works.
    result = await asyncio.wait_for(agent.ask("and now?"), TIMEOUT)
    assert (result.status, result.text) == ("finished", "after the interrupt")


class GatedProvider:
    """Streams one chunk, then waits for a gate that is never opened; records whether its stream was closed."""

    name, model = "gated", "g1"

    def __init__(self) -> None:
        self.first_chunk_sent = asyncio.Event()
        self.closed = False

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (), *, system: str | None = None
    ) -> AsyncIterator[ProviderChunk]:
        try:
            yield TextChunk("Thinking about ")
            self.first_chunk_sent.set()
            await asyncio.Event().wait()
            yield Completion(Message.assistant("never"))
        finally:
            self.closed = True

    async def aclose(self) -> None:
        pass


@pytest.mark.anyio
async def test_cancelling_mid_stream_closes_the_stream(recorder: Any) -> None:
    provider = GatedProvider()
    agent = Agent(provider, ToolRegistry(), sinks=[recorder])
    seen: list[Any] = []

    async def consume() -> None:
        async for event in agent.run("think"):
            seen.append(event)

    task = asyncio.create_task(consume())
    await asyncio.wait_for(provider.first_chunk_sent.wait(), TIMEOUT)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, TIMEOUT)
    assert provider.closed
    llm = recorder.of(LlmCallFinished)
    assert len(llm) == 1
    assert llm[0].error == "cancelled"
    assert recorder.kinds()[-1] == "TurnCancelled"
    assert not any(isinstance(e, TurnCancelled) for e in seen)  # to sinks only; the consumer was cancelled
    assert [m.role for m in agent.messages] == ["user"]


@pytest.mark.anyio
async def test_cancelling_while_waiting_for_approval(recorder: Any) -> None:
    asked = asyncio.Event()

    async def ask(spec: ToolSpec, arguments: Any) -> str:
        asked.set()
        await asyncio.Event().wait()
        return "yes"

    @tool(annotations={"destructiveHint": True})
    def delete_everything() -> str:
        return "deleted"

    registry = ToolRegistry()
    registry.register(delete_everything)
    script = [{"tool": "delete_everything"}, "done"]
    agent = Agent(ScriptedProvider(script), registry, ask=ask, sinks=[recorder])
    turn = asyncio.create_task(agent.ask("clean up"))
    await asyncio.wait_for(asked.wait(), TIMEOUT)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(turn, TIMEOUT)
    assert recorder.of(ToolCallFinished) == []  # it never started
    assert agent.messages[-1].content == "cancelled"
    assert agent.messages[-1].is_error
    assert_valid_transcript(agent.messages)
    assert recorder.kinds()[-1] == "TurnCancelled"
