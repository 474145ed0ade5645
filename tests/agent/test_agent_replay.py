"""An Agent recorded through RecordingProvider and a tool-result sink, replayed with ReplayProvider and the
cassette's tool answers: the same transcript, failing tools included, and the tools never run again."""

from __future__ import annotations

from pathlib import Path

import pytest

from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tools import ToolRegistry, tool
from synapse_nb.cassette import CassetteWriter
from synapse_nb.cassette_reader import Cassette
from synapse_nb.events import Event, LlmCallFinished, ToolCallFinished, TurnStarted
from synapse_nb.masking import SecretMask
from synapse_nb.providers.replay import RecordingProvider, ReplayProvider
from synapse_nb.providers.scripted import ScriptedProvider
from synapse_nb.types import ToolCall, ToolResult

pytestmark = pytest.mark.anyio

SCRIPT = [{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}, {"name": "boom", "arguments": {}}]},
          "2 + 3 = {result}"]


def registry(ran: list[str]) -> ToolRegistry:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        ran.append("add")
        return a + b

    @tool
    def boom() -> str:
        """Fail."""
        ran.append("boom")
        raise RuntimeError("it broke")

    tools = ToolRegistry()
    tools.register(add)
    tools.register(boom)
    return tools


async def test_a_recorded_turn_replays_with_the_same_transcript_and_no_tool_runs(tmp_path: Path) -> None:
    path, mask, ran = tmp_path / "c.jsonl", SecretMask(environ={}), []
    writer = CassetteWriter(path, mask)

    def tape(event: Event) -> None:
        if isinstance(event, ToolCallFinished):
            writer.tool(event.call.name, event.call.arguments, event.result, event.error, event.duration_ms)

    live = Agent(RecordingProvider(ScriptedProvider(SCRIPT), writer), registry(ran), sinks=[tape])
    recorded = await live.ask("add 2 and 3, then break")
    writer.close()
    assert ran == ["add", "boom"]

    cassette = Cassette.load(path, mask)

    async def answer(call: ToolCall) -> tuple[ToolResult | None, str | None, float] | None:
        found = cassette.tool(call.name, call.arguments)
        return None if found is None else (found.result, found.error, found.duration_ms)

    events: list[Event] = []
    again = Agent(ReplayProvider("scripted", ScriptedProvider(SCRIPT).model, cassette), registry(ran),
                  sinks=[events.append], tool_answer=answer)
    replayed = await again.ask("add 2 and 3, then break")
    assert ran == ["add", "boom"]  # nothing ran again
    assert replayed.text == recorded.text
    assert [m.to_dict() for m in again.messages] == [m.to_dict() for m in live.messages]
    assert [m.content for m in again.messages if m.role == "tool"][1].endswith("it broke")
    assert all(e.replayed for e in events if isinstance(e, TurnStarted | LlmCallFinished))
    assert {e.approval for e in events if isinstance(e, ToolCallFinished)} == {"replayed"}
