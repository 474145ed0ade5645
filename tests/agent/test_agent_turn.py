"""An Agent is told each turn's options (TurnOptions) and keeps only its session: turns and sessions don't leak."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import pytest

from synapse_nb.agent.approval import ApprovalPolicy
from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tools import ToolRegistry
from synapse_nb.agent.turn import TurnOptions
from synapse_nb.errors import AgentError
from synapse_nb.events import MessageAdded, SessionStarted, ToolCallFinished, TurnStarted
from synapse_nb.protocols import ProviderChunk
from synapse_nb.providers.scripted import ScriptedProvider
from synapse_nb.types import ContentBlock, Message, ToolResult, ToolSpec
from tests.agent.agent_fakes import Recorder

pytestmark = pytest.mark.anyio
TIMEOUT = 5.0
SESSION_FIELDS = {"session_id", "messages", "usage", "last_result", "_spend", "_seq", "_session_started",
                  "_system_recorded", "_running", "_broken_sinks"}
"""What a turn may change on its Agent: the session (id, transcript, usage, last result, spend, order) and its
bookkeeping."""


def text_result(text: str) -> ToolResult:
    return ToolResult(content=(ContentBlock("text", text=text),))


class Spy:
    """A provider that records what each request was sent: (messages, names of the tools offered, system)."""

    def __init__(self, script: list[Any], model: str) -> None:
        self.inner = ScriptedProvider(script, model=model)
        self.name, self.model = self.inner.name, model
        self.requests: list[tuple[list[Message], list[str], str | None]] = []

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (), *, system: str | None = None
    ) -> AsyncIterator[ProviderChunk]:
        self.requests.append((list(messages), [t.name for t in tools], system))
        async for chunk in self.inner.stream(messages, tools, system=system):
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


def calls(name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": dict(arguments)}]}


def not_session(agent: Agent) -> dict[str, Any]:
    return {k: v for k, v in vars(agent).items() if k not in SESSION_FIELDS}


def asker(answer: str) -> tuple[Any, list[tuple[str, dict[str, Any]]]]:
    asked: list[tuple[str, dict[str, Any]]] = []

    async def ask(spec: ToolSpec, arguments: Mapping[str, Any]) -> str:
        asked.append((spec.name, dict(arguments)))
        return answer

    return ask, asked


async def test_two_turns_told_differently_on_one_agent_leave_nothing_on_it(source: Any) -> None:
    source.add("demo", "add", lambda args: text_result("0123456789" * 5))
    source.add("demo", "other")
    default_sink = Recorder()
    default_provider = Spy(["from the defaults"], "default")
    agent = Agent(default_provider, ToolRegistry(source), system="default system", sinks=[default_sink])
    defaults, before = agent.defaults, not_session(agent)

    first_sink, second_sink = Recorder(), Recorder()
    first_ask, first_asked = asker("yes")
    first_provider = Spy([{"match": "^one$", "steps": [calls("demo__add", {"a": 1}), "done one"]}], "first")
    first = agent.defaults.replace(
        provider=first_provider, system="system one", tool_patterns=("demo__add",), max_result_chars=10,
        approval=ApprovalPolicy("ask"), ask=first_ask, sinks=(first_sink,), tool_timeout=3.0,
    )
    second_provider = Spy([{"match": "^two$", "steps": [calls("demo__add", {"a": 2}), "done two"]}], "second")
    second = TurnOptions(second_provider, system="system two", tool_patterns=("demo__*",), sinks=(second_sink,))

    one = await asyncio.wait_for(agent.ask("one", first), TIMEOUT)
    assert not_session(agent) == before  # nothing of the turn was written on the agent
    two = await asyncio.wait_for(agent.ask("two", second), TIMEOUT)
    assert not_session(agent) == before
    assert agent.defaults is defaults

    assert (one.status, one.text, two.status, two.text) == ("finished", "done one", "finished", "done two")
    # each turn's provider, system and tools, and nothing of the other's
    assert [(tools, system) for _, tools, system in first_provider.requests] == [(["demo__add"], "system one")] * 2
    assert [(tools, system) for _, tools, system in second_provider.requests] == [
        (["demo__add", "demo__other"], "system two")] * 2
    assert default_provider.requests == []
    # the first turn's approval and timeout; the second asked no one (its policy: auto) and had no timeout
    assert first_asked == [("demo__add", {"a": 1})]
    assert [timeout for _, _, timeout in source.calls] == [3.0, None]
    assert [(c.approval, c.tool) for c in one.tool_calls] == [("approved", "add")]
    assert [(c.approval, c.tool) for c in two.tool_calls] == [("auto", "add")]
    # the first turn's max_result_chars truncated what its model saw; the second's (the default) did not
    first_seen = first_provider.requests[1][0][-1].content
    second_seen = second_provider.requests[1][0][-1].content
    assert first_seen.startswith("0123456789\n\n[truncated: the tool returned 50 characters")
    assert second_seen == "0123456789" * 5
    # one session: the second turn's model saw the first turn's transcript
    assert [m.content for m in second_provider.requests[0][0] if m.role == "user"] == ["one", "two"]
    # each turn's sinks saw that turn only; the constructor's sink saw neither
    assert [e.prompt for e in first_sink.of(TurnStarted)] == ["one"]
    assert [e.prompt for e in second_sink.of(TurnStarted)] == ["two"]
    assert [e.model for e in first_sink.of(TurnStarted)] == ["scripted:first"]
    assert {e.model for e in second_sink.of(MessageAdded) if e.message.role == "assistant"} == {"scripted:second"}
    assert len(first_sink.of(SessionStarted)) == 1
    assert not second_sink.of(SessionStarted)  # the session started with the first turn
    assert default_sink.events == []

    # a turn told nothing runs with the constructor's options
    three = await asyncio.wait_for(agent.ask("three"), TIMEOUT)
    assert three.text == "from the defaults"
    assert [e.prompt for e in default_sink.of(TurnStarted)] == ["three"]
    assert default_provider.requests[0][1:] == (["demo__add", "demo__other"], "default system")
    assert len(first_sink.of(TurnStarted)) == len(second_sink.of(TurnStarted)) == 1
    assert not_session(agent) == before


async def test_concurrent_sessions_each_see_only_their_own_options(source: Any) -> None:
    both_in = asyncio.Event()
    inside: list[str] = []

    async def meet(args: Mapping[str, Any]) -> Any:
        inside.append(str(args["who"]))
        if len(inside) == 2:
            both_in.set()
        await asyncio.wait_for(both_in.wait(), TIMEOUT)  # both turns are in a tool call at once
        return text_result(f"met {args['who']}")

    source.add("demo", "meet", meet)
    registry, policy = ToolRegistry(source), ApprovalPolicy("ask")  # shared, as in a kernel
    runs = {}
    for who in ("a", "b"):
        sink, (ask, asked) = Recorder(), asker("yes")
        provider = Spy([calls("demo__meet", {"who": who}), f"done {who}"], who)
        agent = Agent(ScriptedProvider(["unused"]), registry, approval=policy)
        told = TurnOptions(provider, system=f"system {who}", approval=policy, ask=ask, sinks=(sink,))
        runs[who] = (agent, told, sink, asked, provider)

    results = await asyncio.wait_for(
        asyncio.gather(*(agent.ask(f"meet {who}", told) for who, (agent, told, *_) in runs.items())), TIMEOUT)

    assert [r.text for r in results] == ["done a", "done b"]
    assert sorted(inside) == ["a", "b"]
    for who, (agent, _, sink, asked, provider) in runs.items():
        assert asked == [("demo__meet", {"who": who})]
        assert {e.session_id for e in sink.events if hasattr(e, "session_id")} == {agent.session_id}
        assert [e.result.text for e in sink.of(ToolCallFinished) if e.result] == [f"met {who}"]
        assert {system for _, _, system in provider.requests} == {f"system {who}"}
        assert agent.model_id == "scripted:demo"  # the constructor's provider stays its default


async def test_options_are_a_checked_value() -> None:
    provider = ScriptedProvider(["hi"])
    options = TurnOptions(provider, tool_patterns=["a*"], sinks=[print])  # type: ignore[arg-type]
    assert options.tool_patterns == ("a*",)
    assert options.sinks == (print,)
    assert options.model_id == "scripted:demo"
    with pytest.raises(AttributeError):
        options.system = "changed"  # type: ignore[misc]
    with pytest.raises(AgentError, match="max_iterations must be at least 1, got 0"):
        TurnOptions(provider, max_iterations=0)
    with pytest.raises(AgentError, match="max_iterations must be at least 1, got 0"):
        Agent(provider, max_iterations=0)


async def test_setting_what_a_turn_is_told_on_the_agent_says_where_it_goes_now() -> None:
    agent = Agent(ScriptedProvider(["hi"]))
    with pytest.raises(AgentError, match=r"Agent.tool_scope is told per turn: .*defaults.replace\(tool_scope=...\)"):
        agent.tool_scope = None  # type: ignore[misc]
    with pytest.raises(AgentError, match=r"Agent\.sinks is told per turn"):
        agent.sinks = []  # type: ignore[misc]
    agent.session_name = "renamed"  # the session's own fields stay settable
    assert agent.session_name == "renamed"


async def test_an_agent_takes_its_defaults_as_one_turn_options_value(source: Any) -> None:
    source.add("demo", "add", lambda args: text_result("3"))
    sink = Recorder()
    told = TurnOptions(Spy([calls("demo__add", {"a": 1}), "it is 3"], "own"), system="Add.", sinks=(sink,))
    agent = Agent(told, ToolRegistry(source), session_name="sums")
    assert agent.defaults is told  # taken as it is, not rebuilt from its fields
    result = await asyncio.wait_for(agent.ask("1 + 2?"), TIMEOUT)
    assert (result.status, result.text, result.model) == ("finished", "it is 3", "scripted:own")
    assert [e.prompt for e in sink.of(TurnStarted)] == ["1 + 2?"]
    # keyword arguments change a value's fields; with a provider they make the defaults from TurnOptions' own
    assert Agent(told, max_iterations=3).defaults == told.replace(max_iterations=3)
    made = Agent(told.provider, system="Add.", tool_patterns=["demo__*"]).defaults
    assert (made.provider, made.system, made.tool_patterns, made.max_iterations) == (
        told.provider, "Add.", ("demo__*",), 10)
    # the keywords are TurnOptions' fields, every one of them but the provider
    from dataclasses import fields

    from synapse_nb.agent.turn import TurnChanges

    assert set(TurnChanges.__annotations__) == {f.name for f in fields(TurnOptions)} - {"provider"}


async def test_ask_returns_the_turn_record_and_a_cancelled_turn_leaves_its_result_on_the_agent(source: Any) -> None:
    started, never = asyncio.Event(), asyncio.Event()

    async def hang(args: Mapping[str, Any]) -> ToolResult:
        started.set()
        await never.wait()
        raise AssertionError("unreachable")

    source.add("demo", "add", lambda args: text_result("3"))
    source.add("demo", "hang", hang)
    agent = Agent(ScriptedProvider([{"match": "^add$", "steps": [calls("demo__add", {}), "three"]},
                                    {"match": "^hang$", "steps": [calls("demo__hang", {}), "never"]}]),
                  ToolRegistry(source))
    done = await asyncio.wait_for(agent.ask("add"), TIMEOUT)
    assert agent.last_result is done
    assert ([m.role for m in done.messages], [c.tool for c in done.tool_calls]) == (
        ["user", "assistant", "tool", "assistant"], ["add"])

    task = asyncio.create_task(agent.ask("hang"))
    await asyncio.wait_for(started.wait(), TIMEOUT)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, TIMEOUT)
    cancelled = agent.last_result
    assert cancelled is not None
    assert cancelled is not done
    assert (cancelled.status, cancelled.session_id, cancelled.model) == ("cancelled", done.session_id, "scripted:demo")
    assert [(c.tool, c.error) for c in cancelled.tool_calls] == [("hang", "cancelled")]
    assert [m.role for m in cancelled.messages] == ["user", "assistant", "tool"]
