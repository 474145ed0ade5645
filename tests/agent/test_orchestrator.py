"""The Agent loop: answers, tool round trips, concurrency, errors back to the model, limits, events and sessions."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

import pytest

from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tools import ToolRegistry, tool
from synapse_nb.errors import AgentError, ProviderUnavailableError
from synapse_nb.events import (
    LlmCallFinished,
    MessageAdded,
    SessionStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFailed,
    TurnFinished,
    TurnStarted,
)
from synapse_nb.protocols import Completion, ProviderChunk, TextChunk
from synapse_nb.providers.scripted import ScriptedProvider
from synapse_nb.types import ContentBlock, Message, ToolResult, ToolSpec, Usage

TIMEOUT = 5.0


def calls(*names_args: tuple[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": n, "arguments": dict(a)} for n, a in names_args]}


class Spy:
    """Wraps a provider and records what each request offered."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name, self.model = inner.name, inner.model
        self.requests: list[tuple[list[Message], list[ToolSpec], str | None]] = []

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (), *, system: str | None = None
    ) -> AsyncIterator[ProviderChunk]:
        self.requests.append((list(messages), list(tools), system))
        async for chunk in self.inner.stream(messages, tools, system=system):
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.anyio
async def test_a_plain_answer_streams_and_emits_events_in_order(recorder: Any) -> None:
    answer = "Hello there, this is a longer answer in pieces."
    agent = Agent(ScriptedProvider([answer]), ToolRegistry(), sinks=[recorder])
    yielded = [event async for event in agent.run("Hi")]
    assert yielded == recorder.events
    kinds = [type(e).__name__ for e in yielded]
    deltas = kinds.count("TextDelta")
    assert deltas >= 3
    assert kinds == [
        "SessionStarted", "TurnStarted", "MessageAdded", *["TextDelta"] * deltas,
        "LlmCallFinished", "MessageAdded", "TurnFinished",
    ]
    assert "".join(e.text for e in recorder.of(TextDelta)) == answer
    llm = recorder.of(LlmCallFinished)[0]
    assert (llm.provider, llm.model, llm.stop_reason, llm.error) == ("scripted", "demo", "end_turn", None)
    assert llm.usage.input_tokens > 0
    assert llm.usage.output_tokens > 0
    assert llm.ttft_ms is not None
    added = recorder.of(MessageAdded)
    assert [m.seq for m in added] == [0, 1]
    assert [m.message.role for m in added] == ["user", "assistant"]
    assert added[1].model == "scripted:demo"
    assert len({m.message_id for m in added}) == 2
    assert all(len(m.message_id) == 32 for m in added)
    assert [m.role for m in agent.messages] == ["user", "assistant"]


@pytest.mark.anyio
async def test_a_tool_round_trip(recorder: Any) -> None:
    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    registry = ToolRegistry()
    registry.register(add)
    provider = Spy(ScriptedProvider([calls(("add", {"a": 2, "b": 3})), "The sum is {result}."]))
    agent = Agent(provider, registry, sinks=[recorder])
    result = await agent.ask("What is 2 + 3?")
    assert result.status == "finished"
    assert result.text == "The sum is 5."
    assert result.iterations == 2
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.usage == recorder.of(LlmCallFinished)[0].usage + recorder.of(LlmCallFinished)[1].usage
    finished = result.tool_calls[0]
    assert (finished.tool, finished.server, finished.approval, finished.error) == ("add", None, "auto", None)
    assert finished.result is not None
    assert finished.result.text == "5"
    assistant_added = next(e for e in recorder.of(MessageAdded) if e.message.tool_calls)
    assert finished.message_id == recorder.of(ToolCallStarted)[0].message_id == assistant_added.message_id
    tool_message = result.messages[2]
    assert (tool_message.tool_call_id, tool_message.content) == (finished.call.id, "5")
    assert [t.name for t in provider.requests[0][1]] == ["add"]


@pytest.mark.anyio
async def test_all_calls_of_one_reply_run_concurrently(recorder: Any) -> None:
    started: list[int] = []
    all_started = asyncio.Event()

    @tool
    async def wait_for_all(i: int) -> str:
        started.append(i)
        if len(started) == 8:
            all_started.set()
        # Each call waits until all eight are running: only possible if they run at the same time.
        await asyncio.wait_for(all_started.wait(), TIMEOUT)
        return f"done {i}"

    registry = ToolRegistry()
    registry.register(wait_for_all)
    script = [calls(*[("wait_for_all", {"i": i}) for i in range(8)]), "All {result}"]
    result = await asyncio.wait_for(Agent(ScriptedProvider(script), registry, sinks=[recorder]).ask("go"), TIMEOUT)
    assert result.status == "finished"
    assert sorted(started) == list(range(8))
    assert [c.result.text for c in result.tool_calls if c.result] == [f"done {i}" for i in range(8)]
    tool_messages = [m for m in result.messages if m.role == "tool"]
    assert [m.content for m in tool_messages] == [f"done {i}" for i in range(8)]  # in call order
    kinds = recorder.kinds()
    assert kinds.index("ToolCallFinished") > max(i for i, k in enumerate(kinds) if k == "ToolCallStarted")


@pytest.mark.anyio
async def test_tool_failures_go_back_to_the_model_and_the_loop_goes_on(source: Any) -> None:
    never = asyncio.Event()

    async def hang(args: Mapping[str, Any]) -> ToolResult:
        await never.wait()
        raise AssertionError("unreachable")

    def crash(args: Mapping[str, Any]) -> ToolResult:
        raise RuntimeError("socket closed")

    source.add("demo", "fail", lambda args: ToolResult.error("boom from the server"))
    source.add("demo", "crash", crash)
    source.add("demo", "hang", hang)

    @tool
    def broken() -> str:
        raise KeyError("missing")

    registry = ToolRegistry(source)
    registry.register(broken)
    script = [
        calls(("fail", {}), ("crash", {}), ("hang", {}), ("broken", {}), ("nope", {"x": 1})),
        "Recovered:\n{result}",
    ]
    # the hang waits out the timeout; 1 s, as the plain Python tool runs in a worker thread, which a busy machine
    # can start late (a 0.05 s limit timed it out under load)
    agent = Agent(ScriptedProvider(script), registry, tool_timeout=1.0)
    result = await asyncio.wait_for(agent.ask("try everything"), TIMEOUT)
    assert result.status == "finished"
    assert result.text.startswith("Recovered:")
    tool_messages = [m for m in result.messages if m.role == "tool"]
    assert all(m.is_error for m in tool_messages)
    texts = [m.content for m in tool_messages]
    assert texts[0] == "boom from the server"
    assert texts[1] == "RuntimeError: socket closed"
    assert texts[2] == "ToolCallTimeout: demo__hang timed out after 1 s"
    assert texts[3] == "KeyError: 'missing'"
    assert texts[4].startswith("UnknownToolError: no tool named 'nope'")
    assert "demo__fail" in texts[4]
    assert source.calls[2] == ("demo__hang", {}, 1.0)  # the per-call timeout reaches the source
    by_tool = {c.tool: c for c in result.tool_calls}
    assert by_tool["fail"].result is not None
    assert by_tool["fail"].is_error
    assert by_tool["fail"].error is None
    assert by_tool["crash"].error == "RuntimeError: socket closed"
    assert by_tool["nope"].error is not None
    assert by_tool["nope"].server is None


@pytest.mark.anyio
async def test_a_native_tool_timeout_is_an_error_result() -> None:
    never = asyncio.Event()

    @tool
    async def slow() -> str:
        await never.wait()
        return "never"

    registry = ToolRegistry()
    registry.register(slow)
    agent = Agent(ScriptedProvider([calls(("slow", {})), "{result}"]), registry, tool_timeout=0.05)
    result = await asyncio.wait_for(agent.ask("go"), TIMEOUT)
    assert result.text == "ToolCallTimeout: tool 'slow' did not finish within 0.05 s"
    assert result.tool_calls[0].error == result.text


@pytest.mark.anyio
async def test_max_iterations_fails_the_turn_and_keeps_a_valid_transcript(recorder: Any) -> None:
    @tool
    def again() -> str:
        return "more"

    registry = ToolRegistry()
    registry.register(again)
    agent = Agent(ScriptedProvider([calls(("again", {}))]), registry, max_iterations=3, sinks=[recorder])
    result = await agent.ask("loop forever")
    assert result.status == "failed"
    assert result.error_type == "MaxIterationsError"
    assert result.error is not None
    assert "after 3 iterations" in result.error
    assert result.iterations == 3
    assert len(recorder.of(LlmCallFinished)) == 3
    assert len(recorder.of(ToolCallFinished)) == 2  # the third reply's call is not run
    assert isinstance(recorder.events[-1], TurnFailed)
    roles = [m.role for m in agent.messages]
    assert roles == ["user", *["assistant", "tool"] * 3]
    last = agent.messages[-1]
    assert last.is_error
    assert last.content.startswith("not run:")
    assert last.tool_call_id == agent.messages[-2].tool_calls[0].id


class FailingProvider:
    name, model = "flaky", "f1"

    def __init__(self) -> None:
        self.fail = True

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (), *, system: str | None = None
    ) -> AsyncIterator[ProviderChunk]:
        yield TextChunk("partial ")
        if self.fail:
            raise ProviderUnavailableError(
                "flaky is overloaded (HTTP 529); try again later", provider="flaky", status=529
            )
        yield Completion(Message.assistant("recovered"), Usage(3, 1), "end_turn")

    async def aclose(self) -> None:
        pass


@pytest.mark.anyio
async def test_a_provider_error_fails_the_turn_and_the_session_goes_on(recorder: Any) -> None:
    provider = FailingProvider()
    agent = Agent(provider, ToolRegistry(), sinks=[recorder])
    result = await agent.ask("first")
    assert result.status == "failed"
    assert result.error_type == "ProviderUnavailableError"
    assert result.error == "flaky is overloaded (HTTP 529); try again later"
    llm = recorder.of(LlmCallFinished)[0]
    assert llm.error == "ProviderUnavailableError: flaky is overloaded (HTTP 529); try again later"
    assert [m.role for m in agent.messages] == ["user"]
    provider.fail = False
    second = await agent.ask("second")
    assert (second.status, second.text) == ("finished", "recovered")
    assert [m.content for m in agent.messages] == ["first", "second", "recovered"]


@pytest.mark.anyio
async def test_long_results_are_bounded_for_the_model_and_kept_in_full(recorder: Any) -> None:
    big = "x" * 5000

    @tool
    def dump() -> str:
        return big

    registry = ToolRegistry()
    registry.register(dump)
    agent = Agent(ScriptedProvider([calls(("dump", {})), "ok"]), registry, max_result_chars=100, sinks=[recorder])
    result = await agent.ask("dump it")
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert tool_message.content.startswith("x" * 100 + "\n\n[truncated:")
    assert "5,000 characters" in tool_message.content
    assert "full result is recorded" in tool_message.content
    assert "x" * 101 not in tool_message.content
    added = next(e for e in recorder.of(MessageAdded) if e.message.role == "tool")
    assert added.result is not None
    assert added.result.text == big
    assert result.tool_calls[0].result is not None
    assert result.tool_calls[0].result.text == big


@pytest.mark.anyio
async def test_images_travel_with_the_tool_message() -> None:
    @tool
    def picture() -> ContentBlock:
        return ContentBlock("image", data="aGk=", mime_type="image/png")

    registry = ToolRegistry()
    registry.register(picture)
    result = await Agent(ScriptedProvider([calls(("picture", {})), "nice"]), registry).ask("draw")
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert tool_message.images[0].mime_type == "image/png"


@pytest.mark.anyio
async def test_sessions_continue_across_turns(recorder: Any) -> None:
    provider = Spy(ScriptedProvider(["first answer", "second answer"]))
    agent = Agent(provider, None, session_name="analysis", system="Be brief.", sinks=[recorder])
    first = await agent.ask("one")
    second = await agent.ask("two")
    assert (first.text, second.text) == ("first answer", "second answer")
    assert first.session_id == second.session_id == agent.session_id
    assert len(agent.session_id) == 32
    assert first.turn_id != second.turn_id
    sessions = recorder.of(SessionStarted)
    assert len(sessions) == 1
    assert sessions[0].name == "analysis"
    assert sessions[0].model == "scripted:demo"
    assert len(recorder.of(TurnStarted)) == 2
    added = recorder.of(MessageAdded)
    assert [e.seq for e in added] == list(range(5))
    assert [e.message.role for e in added] == ["system", "user", "assistant", "user", "assistant"]
    second_request, tools_offered, system = provider.requests[1]
    assert [m.content for m in second_request] == ["one", "first answer", "two"]
    assert tools_offered == []
    assert system == "Be brief."
    agent.reset()
    assert agent.messages == []
    assert agent.session_id != first.session_id
    await agent.ask("three")
    assert len(recorder.of(SessionStarted)) == 2


@pytest.mark.anyio
async def test_tool_patterns_filter_and_no_tools_mean_none_offered(source: Any) -> None:
    source.add("demo", "query")
    source.add("files", "read")
    provider = Spy(ScriptedProvider([calls(("files__read", {})), "{result}"]))
    agent = Agent(provider, ToolRegistry(source), tool_patterns=["demo__*"])
    result = await agent.ask("read a file")
    assert [t.name for t in provider.requests[0][1]] == ["demo__query"]
    # A tool the model was not offered does not run, even if the registry has it.
    assert result.text.startswith("UnknownToolError: no tool named 'files__read' is available")
    assert source.calls == []

    no_tools = Spy(ScriptedProvider([calls(("demo__query", {})), "{result}"]))
    result = await Agent(no_tools, ToolRegistry(source), tool_patterns=[]).ask("query")
    assert no_tools.requests[0][1] == []
    assert "no tools are available" in result.text


@pytest.mark.anyio
async def test_a_failing_sink_cannot_break_the_loop(recorder: Any, caplog: pytest.LogCaptureFixture) -> None:
    def bad_sink(event: Any) -> None:
        raise RuntimeError("display is gone")

    agent = Agent(ScriptedProvider(["fine"]), ToolRegistry(), sinks=[bad_sink, recorder])
    with caplog.at_level(logging.ERROR, logger="synapse_nb.agent"):
        result = await agent.ask("hello")
    assert result.text == "fine"
    assert isinstance(recorder.events[-1], TurnFinished)
    assert sum("display is gone" in (r.exc_text or "") or "failed" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.anyio
async def test_run_accepts_messages_and_rejects_a_second_concurrent_turn() -> None:
    gate = asyncio.Event()
    waiting = asyncio.Event()

    @tool
    async def wait() -> str:
        waiting.set()
        await gate.wait()
        return "ok"

    registry = ToolRegistry()
    registry.register(wait)
    agent = Agent(ScriptedProvider([calls(("wait", {})), "done"]), registry)
    first = asyncio.create_task(agent.ask([Message.user("part one"), Message.user("part two")]))
    await asyncio.wait_for(waiting.wait(), TIMEOUT)
    with pytest.raises(AgentError, match="already answering"):
        await agent.ask("interrupting")
    gate.set()
    result = await asyncio.wait_for(first, TIMEOUT)
    assert result.text == "done"
    assert [m.content for m in result.messages[:2]] == ["part one", "part two"]


@pytest.mark.anyio
async def test_closing_run_early_cancels_the_turn(recorder: Any) -> None:
    agent = Agent(ScriptedProvider(["one two three four five six seven eight nine"]), None, sinks=[recorder])
    async with aclosing(agent.run("count")) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                break
    assert recorder.kinds()[-1] == "TurnCancelled"
    assert (await agent.ask("again")).status == "finished"


class BrokenProvider:
    """A provider whose stream ends without a Completion, or blows up with a non-Synapse error."""

    name, model = "broken", "b1"

    def __init__(self, crash: bool) -> None:
        self.crash = crash

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (), *, system: str | None = None
    ) -> AsyncIterator[ProviderChunk]:
        yield TextChunk("half an answer")
        if self.crash:
            raise ValueError("adapter bug")

    async def aclose(self) -> None:
        pass


@pytest.mark.anyio
async def test_a_stream_without_completion_or_an_adapter_bug_fails_the_turn(
    recorder: Any, caplog: pytest.LogCaptureFixture
) -> None:
    cut = await Agent(BrokenProvider(crash=False), None, sinks=[recorder]).ask("q")
    assert (cut.status, cut.error_type) == ("failed", "StreamError")
    assert cut.error == "the model's stream ended without completing the reply"
    assert recorder.of(LlmCallFinished)[-1].error is not None
    with caplog.at_level(logging.ERROR, logger="synapse_nb.agent"):
        bug = await Agent(BrokenProvider(crash=True), None).ask("q")
    assert (bug.status, bug.error_type, bug.error) == ("failed", "ValueError", "adapter bug")
    assert any(r.exc_info for r in caplog.records)  # unexpected errors are logged with their traceback


@pytest.mark.anyio
async def test_streamed_tool_call_arguments_become_events(recorder: Any, llm_server: Any) -> None:
    """The provider's ToolCallChunks (OpenAI wire, real HTTP) are emitted as ToolCallArgumentsDelta in order."""
    from synapse_nb.events import ToolCallArgumentsDelta
    from synapse_nb.providers.openai import OpenAIProvider
    from tests.support import llm_server as wire

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    registry = ToolRegistry()
    registry.register(add)
    llm_server.queue(
        wire.tool_calls(wire.call("add", {"a": 2, "b": 3}, id="call_1"), pieces=4), wire.text("5."),
    )
    provider = OpenAIProvider("gpt-test", api_key="k-test", base_url=llm_server.openai_base_url)
    try:
        result = await Agent(provider, registry, sinks=[recorder]).ask("2 + 3?")
    finally:
        await provider.aclose()
    assert result.status == "finished"
    deltas = recorder.of(ToolCallArgumentsDelta)
    assert len(deltas) >= 2
    assert (deltas[0].call_id, deltas[0].name, deltas[0].index) == ("call_1", "add", 0)
    assert all(d.call_id is None for d in deltas[1:])
    assert "".join(d.arguments_delta for d in deltas).replace(" ", "") == '{"a":2,"b":3}'
    kinds = recorder.kinds()
    assert kinds.index("ToolCallArgumentsDelta") < kinds.index("LlmCallFinished") < kinds.index("ToolCallStarted")


@pytest.mark.anyio
async def test_tool_progress_becomes_events_of_that_call(recorder: Any, source: Any) -> None:
    from synapse_nb.events import ToolCallProgress

    source.add("srv", "slow")
    source.progress["srv__slow"] = [(1.0, 3.0, "one"), (2.0, 3.0, None), (5.0, None, "more")]
    agent = Agent(ScriptedProvider([calls(("srv__slow", {})), "done"]), ToolRegistry(source), sinks=[recorder])
    result = await agent.ask("go")
    assert result.status == "finished"
    progress = recorder.of(ToolCallProgress)
    call_id = recorder.of(ToolCallStarted)[0].call.id
    assert [(p.call_id, p.progress, p.total, p.message) for p in progress] == [
        (call_id, 1.0, 3.0, "one"), (call_id, 2.0, 3.0, None), (call_id, 5.0, None, "more"),
    ]
    kinds = recorder.kinds()
    assert kinds.index("ToolCallStarted") < kinds.index("ToolCallProgress") < kinds.index("ToolCallFinished")


@pytest.mark.anyio
async def test_a_resumed_session_left_waiting_on_tool_calls_gets_them_closed_by_a_new_prompt() -> None:
    """A kernel that stopped during a turn's tool calls leaves them without tool messages; a new prompt (not
    --resume) gives each an error result first, so the request is one every provider takes."""
    from synapse_nb.agent.orchestrator import NOT_RESUMED
    from synapse_nb.types import ToolCall

    spy = Spy(ScriptedProvider(["Fine."]))
    agent = Agent(spy, ToolRegistry())
    asked = Message.assistant("", (ToolCall("c1", "fm__slow", {"seconds": 20}),))
    agent.resume("s-1", [Message.user("run it"), asked], next_seq=2)
    await asyncio.wait_for(agent.ask("what now?"), TIMEOUT)
    sent = spy.requests[0][0]
    assert [m.role for m in sent] == ["user", "assistant", "tool", "user"]
    assert (sent[2].tool_call_id, sent[2].content, sent[2].is_error) == ("c1", NOT_RESUMED, True)
