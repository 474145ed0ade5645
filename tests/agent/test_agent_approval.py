"""Approval inside the loop: ask yes/no/always, deny, destructive tools asking by default, no one to ask."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from synapse_nb.agent.approval import ApprovalPolicy
from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tools import ToolRegistry
from synapse_nb.events import ToolCallStarted
from synapse_nb.providers.scripted import ScriptedProvider
from synapse_nb.types import ToolSpec


class Asker:
    """An ApprovalCallback answering from a list and recording what it was asked."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> str:
        self.asked.append((spec.name, dict(arguments)))
        return self.answers.pop(0)


def script(calls_per_turn: int = 1) -> list[Any]:
    call = {"name": "query", "arguments": {"sql": "select 1"}}
    return [{"tool_calls": [call] * calls_per_turn}, "{result}"]


def registry(source: Any, **annotations: Any) -> ToolRegistry:
    source.add("demo", "query", annotations=annotations)
    return ToolRegistry(source)


@pytest.mark.anyio
async def test_ask_yes_runs_the_tool(source: Any, recorder: Any) -> None:
    asker = Asker("yes")
    agent = Agent(ScriptedProvider(script()), registry(source), approval=ApprovalPolicy("ask"), ask=asker,
                  sinks=[recorder])
    result = await agent.ask("q")
    assert asker.asked == [("demo__query", {"sql": "select 1"})]
    assert result.text == "query ok"
    assert result.tool_calls[0].approval == "approved"
    assert recorder.of(ToolCallStarted)[0].approval == "approved"


@pytest.mark.anyio
async def test_ask_no_sends_denied_by_user_to_the_model(source: Any) -> None:
    agent = Agent(ScriptedProvider(script()), registry(source), approval=ApprovalPolicy("ask"), ask=Asker("no"))
    result = await agent.ask("q")
    assert source.calls == []
    assert result.text == "denied by user"
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert tool_message.is_error
    assert tool_message.content == "denied by user"
    finished = result.tool_calls[0]
    assert finished.approval == "denied"
    assert finished.is_error


@pytest.mark.anyio
async def test_always_is_asked_once_and_remembered(source: Any) -> None:
    asker = Asker("always")
    policy = ApprovalPolicy("ask")
    agent = Agent(ScriptedProvider(script(calls_per_turn=1)), registry(source), approval=policy, ask=asker)
    first = await agent.ask("q")
    assert first.tool_calls[0].approval == "always"
    second_agent = Agent(ScriptedProvider(script()), agent.tools, approval=policy, ask=asker)
    second = await second_agent.ask("q again")
    assert len(asker.asked) == 1
    assert second.tool_calls[0].approval == "auto"
    assert len(source.calls) == 2


@pytest.mark.anyio
async def test_deny_never_asks(source: Any) -> None:
    asker = Asker()
    agent = Agent(ScriptedProvider(script()), registry(source), approval=ApprovalPolicy(servers={"demo": "deny"}),
                  ask=asker)
    result = await agent.ask("q")
    assert asker.asked == []
    assert source.calls == []
    assert result.text.startswith("denied by policy")
    assert result.tool_calls[0].approval == "denied"


@pytest.mark.anyio
async def test_destructive_tools_ask_by_default(source: Any) -> None:
    asker = Asker("no")
    agent = Agent(ScriptedProvider(script()), registry(source, destructiveHint=True), ask=asker)
    result = await agent.ask("q")
    assert len(asker.asked) == 1
    assert result.tool_calls[0].approval == "denied"


@pytest.mark.anyio
async def test_asking_with_no_one_to_ask_denies(source: Any) -> None:
    agent = Agent(ScriptedProvider(script()), registry(source, destructiveHint=True))
    result = await agent.ask("q")
    assert source.calls == []
    assert "no one to ask" in result.text


@pytest.mark.anyio
async def test_each_call_of_a_reply_is_asked_about(source: Any) -> None:
    asker = Asker("yes", "no")
    agent = Agent(ScriptedProvider(script(calls_per_turn=2)), registry(source), approval=ApprovalPolicy("ask"),
                  ask=asker)
    result = await agent.ask("q")
    assert [c.approval for c in result.tool_calls] == ["approved", "denied"]
    assert len(source.calls) == 1
