"""Turns traced in process: a real Agent, the scripted model and notebook tools; spans through the real batching
processor into the SDK's in-memory exporter. Nesting, GenAI attributes, content opt-in and masking, errors."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from synapse_nb.agent.approval import ApprovalPolicy
from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tools import ToolRegistry, tool
from synapse_nb.errors import ProviderUnavailableError
from synapse_nb.events import Event, LlmCallFinished, ToolCallFinished, ToolCallStarted, utcnow
from synapse_nb.masking import MASK
from synapse_nb.protocols import ProviderChunk
from synapse_nb.providers.scripted import ScriptedProvider
from synapse_nb.types import ContentBlock, Message, ToolCall, ToolResult, ToolSpec, Usage
from tests.telemetry.trace_helpers import Traced

SECRET = "planted-secret-value-42"
API_KEY = "sk-ant-" + "a1B2c3D4e5F6g7H8i9J0k1L2"


def calls(*names_args: tuple[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": n, "arguments": dict(a)} for n, a in names_args]}


def registry() -> ToolRegistry:
    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    def shout(text: str) -> str:
        """Say it louder."""
        return text.upper()

    @tool
    def echo(text: str) -> str:
        """Say it again."""
        return text

    @tool
    def broken(reason: str) -> str:
        """Always fails."""
        raise ValueError(f"cannot do it: {reason}")

    tools = ToolRegistry()
    for fn in (add, shout, echo, broken):
        tools.register(fn)
    return tools


def traced_agent(traced: Traced, script: list[Any], **kwargs: Any) -> tuple[Agent, list[Event]]:
    events: list[Event] = []
    agent = Agent(ScriptedProvider(script), registry(), sinks=[events.append, traced.tracing.sink],
                  tool_scope=traced.tracing.sink.tool_scope, **kwargs)
    return agent, events


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def values(spans: Sequence[ReadableSpan]) -> str:
    """Every attribute value and status description of the spans, as one text to search."""
    return json.dumps([[attrs(s), s.status.description] for s in spans], default=str)


@pytest.mark.anyio
async def test_a_turn_with_two_tool_calls_is_one_trace_nested_as_it_happened(traced: Traced) -> None:
    agent, events = traced_agent(traced, [calls(("add", {"a": 2, "b": 3}), ("shout", {"text": "hi"})), "Done."])
    result = await agent.ask("Add and shout, please")
    assert result.status == "finished"
    spans = traced.spans()
    assert [s.name for s in spans].count("invoke_agent synapse_nb") == 1
    turn = traced.named("invoke_agent")[0]
    chats, tools = traced.named("chat "), traced.named("execute_tool ")
    assert [s.name for s in chats] == ["chat demo", "chat demo"]
    assert sorted(s.name for s in tools) == ["execute_tool add", "execute_tool shout"]
    assert len(spans) == 5
    assert turn.parent is None
    assert {s.context.trace_id for s in spans} == {turn.context.trace_id}
    for child in (*chats, *tools):
        assert child.parent is not None
        assert child.parent.span_id == turn.context.span_id
    # as it happened: first model call, then both tools, then the second model call, all inside the turn
    assert turn.start_time <= chats[0].start_time
    assert chats[0].end_time <= min(t.start_time for t in tools)
    assert max(t.end_time for t in tools) <= chats[1].start_time
    assert chats[1].end_time <= turn.end_time

    assert turn.kind is SpanKind.INTERNAL
    assert attrs(turn).items() >= {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "synapse_nb",
        "gen_ai.provider.name": "scripted", "gen_ai.request.model": "demo",
        "gen_ai.conversation.id": agent.session_id, "synapse.session_id": agent.session_id,
        "gen_ai.usage.input_tokens": result.usage.input_tokens,
        "gen_ai.usage.output_tokens": result.usage.output_tokens,
        "synapse.status": "finished", "synapse.iterations": 2,
    }.items()
    llm_events = [e for e in events if isinstance(e, LlmCallFinished)]
    for span, event in zip(chats, llm_events, strict=True):
        assert span.kind is SpanKind.CLIENT
        assert attrs(span).items() >= {
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": "scripted", "gen_ai.request.model": "demo",
            "gen_ai.usage.input_tokens": event.usage.input_tokens,
            "gen_ai.usage.output_tokens": event.usage.output_tokens, "synapse.llm_call_id": event.llm_call_id,
            "synapse.session_id": agent.session_id,
        }.items()
        assert attrs(span)["gen_ai.response.finish_reasons"] == (event.stop_reason,)
        assert span.status.status_code is StatusCode.UNSET
    by_tool = {attrs(s)["gen_ai.tool.name"]: s for s in tools}
    for finished in result.tool_calls:
        span = by_tool[finished.tool]
        assert span.kind is SpanKind.INTERNAL
        assert attrs(span).items() >= {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": finished.call.id,
            "gen_ai.tool.type": "function", "synapse.approval": "auto", "synapse.is_error": False,
            "synapse.session_id": agent.session_id, "synapse.origin": "agent",
        }.items()
        assert "synapse.server" not in attrs(span)
        assert span.status.status_code is StatusCode.UNSET
    # content is off by default: no prompt, answer, arguments or results anywhere
    text = values(spans)
    for content in ("Add and shout", "Done.", '"text": "hi"', "HI"):
        assert content not in text
    assert not any(k in attrs(s) for s in spans for k in (
        "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"))


@pytest.mark.anyio
async def test_content_is_opt_in_and_masked_like_the_history(traced_content: Traced) -> None:
    prompt = f"Echo my key {API_KEY} and {SECRET}"
    agent, _ = traced_agent(traced_content, [calls(("echo", {"text": f"{SECRET} and {API_KEY}"})), "Shouted."])
    result = await agent.ask(prompt)
    assert result.status == "finished"
    spans = traced_content.spans()
    text = values(spans)
    assert SECRET not in text
    assert API_KEY not in text
    turn = traced_content.named("invoke_agent")[0]
    [message] = json.loads(str(attrs(turn)["gen_ai.input.messages"]))
    assert message["role"] == "user"
    assert message["parts"][0]["content"] == f"Echo my key {MASK} and {MASK}"
    [answer] = json.loads(str(attrs(turn)["gen_ai.output.messages"]))
    assert (answer["role"], answer["parts"][0]["content"]) == ("assistant", "Shouted.")
    [echo] = traced_content.named("execute_tool echo")
    assert json.loads(str(attrs(echo)["gen_ai.tool.call.arguments"])) == {"text": f"{MASK} and {MASK}"}
    assert attrs(echo)["gen_ai.tool.call.result"] == f"{MASK} and {MASK}"


@pytest.mark.anyio
async def test_a_secret_added_later_is_masked_from_then_on(traced_content: Traced) -> None:
    late = "late-secret-token-value-99"
    traced_content.tracing.add_secret(late)
    agent, _ = traced_agent(traced_content, ["Nothing to do."])
    await agent.ask(f"remember {late}")
    text = values(traced_content.spans())
    assert late not in text
    assert f"remember {MASK}" in text


@pytest.mark.anyio
async def test_failures_are_span_status_and_error_type(traced: Traced) -> None:
    script = [calls(("broken", {"reason": "no way"}), ("nosuch", {}), ("add", {"a": 1, "b": 1})), "Partly."]
    agent, _ = traced_agent(traced, script, approval=ApprovalPolicy(tools={"add": "deny"}))
    result = await agent.ask("try things")
    assert result.status == "finished"
    tools = {s.name: s for s in traced.named("execute_tool ")}
    broken = tools["execute_tool broken"]
    assert broken.status.status_code is StatusCode.ERROR
    assert attrs(broken)["error.type"] == "ValueError"
    assert broken.status.description == "ValueError: cannot do it: no way"
    unknown = tools["execute_tool nosuch"]
    assert unknown.status.status_code is StatusCode.ERROR
    assert attrs(unknown)["error.type"] == "UnknownToolError"
    denied = tools["execute_tool add"]
    assert denied.status.status_code is StatusCode.ERROR
    assert (attrs(denied)["error.type"], attrs(denied)["synapse.approval"]) == ("denied", "denied")
    turn = traced.named("invoke_agent")[0]
    assert turn.status.status_code is StatusCode.UNSET  # the turn itself ended well: errors went to the model


class FailsSecondTime:
    """The scripted model for one reply, then a provider that is down."""

    name, model = "openai", "gpt-test"

    def __init__(self, first: Any) -> None:
        self.inner = ScriptedProvider([first])
        self.requests = 0

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (), *, system: str | None = None
    ) -> AsyncIterator[ProviderChunk]:
        self.requests += 1
        if self.requests > 1:
            raise ProviderUnavailableError(f"openai answered 503 twice (key {API_KEY})", provider="openai", status=503)
        async for chunk in self.inner.stream(messages, tools, system=system):
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.anyio
async def test_a_failed_turn_and_its_failed_model_call(traced: Traced) -> None:
    agent = Agent(FailsSecondTime(calls(("add", {"a": 1, "b": 2}))), registry(), sinks=[traced.tracing.sink],
                  tool_scope=traced.tracing.sink.tool_scope)
    result = await agent.ask("add")
    assert result.status == "failed"
    turn = traced.named("invoke_agent")[0]
    assert turn.status.status_code is StatusCode.ERROR
    assert attrs(turn)["error.type"] == "ProviderUnavailableError"
    assert attrs(turn)["synapse.status"] == "failed"
    assert attrs(turn)["gen_ai.provider.name"] == "openai"
    first, second = traced.named("chat ")
    assert first.status.status_code is StatusCode.UNSET
    assert second.status.status_code is StatusCode.ERROR
    assert attrs(second)["error.type"] == "ProviderUnavailableError"
    assert API_KEY not in values(traced.spans())  # error texts are masked even with content off
    assert MASK in str(second.status.description)


@pytest.mark.anyio
async def test_a_tool_runs_inside_its_span(traced: Traced) -> None:
    """What the tool does under `tool_scope` (an MCP request, the user's own spans) has the tool span as parent."""
    from opentelemetry import trace

    seen: list[int] = []

    @tool
    def where() -> str:
        """Report the current span."""
        seen.append(trace.get_current_span().get_span_context().span_id)
        return "here"

    tools = ToolRegistry()
    tools.register(where)
    agent = Agent(ScriptedProvider([calls(("where", {})), "ok"]), tools, sinks=[traced.tracing.sink],
                  tool_scope=traced.tracing.sink.tool_scope)
    await agent.ask("where?")
    [span] = traced.named("execute_tool where")
    assert seen == [span.context.span_id]
    assert not trace.get_current_span().get_span_context().is_valid  # the scope was left behind


def test_a_call_made_by_hand_is_a_trace_of_its_own_and_sampling_nests_under_its_tool_call(traced: Traced) -> None:
    """`%mcp call` records only the finished call; a server's sampling request names the call it came from."""
    started = utcnow()
    call = ToolCall("call-by-hand", "meta__count", {"n": 2})
    sink = traced.tracing.sink
    sink(ToolCallStarted(session_id="", call=call, server="meta", tool="count", approval="manual", at=started))
    sink(LlmCallFinished(
        session_id="", llm_call_id="sampled", provider="scripted", model="demo", started_at=started,
        duration_ms=3.0, usage=Usage(7, 2), origin="sampling:meta", tool_call_id=call.id,
    ))
    sink(ToolCallFinished(
        session_id="", call=call, server="meta", tool="count", approval="manual", started_at=started,
        duration_ms=12.5, result=ToolResult(content=(ContentBlock("text", text="1 2"),)), origin="manual",
    ))
    other = ToolCall("another", "meta__count", {"n": 1})
    sink(ToolCallFinished(
        session_id="", call=other, server="meta", tool="count", approval="manual", started_at=started,
        duration_ms=1.0, error="ToolCallTimeout: tool 'count' did not finish within 1 s", origin="app:meta",
    ))
    by_call = {attrs(s).get("gen_ai.tool.call.id"): s for s in traced.named("execute_tool count")}
    first, second = by_call["call-by-hand"], by_call["another"]
    assert first.parent is None
    assert second.parent is None
    assert first.context.trace_id != second.context.trace_id
    assert first.end_time - first.start_time == 12_500_000
    assert attrs(first)["synapse.approval"] == "manual"
    assert (attrs(first)["synapse.origin"], attrs(second)["synapse.origin"]) == ("manual", "app:meta")
    assert (attrs(second)["error.type"], second.status.status_code) == ("ToolCallTimeout", StatusCode.ERROR)
    [chat] = traced.named("chat ")
    assert chat.parent is not None
    assert chat.parent.span_id == first.context.span_id
    assert attrs(chat)["synapse.origin"] == "sampling:meta"


@pytest.mark.anyio
async def test_a_cancelled_turn_ends_its_spans_as_cancelled_not_as_errors(traced: Traced) -> None:
    running = asyncio.Event()

    @tool
    async def forever() -> str:
        """Never answers."""
        running.set()
        await asyncio.Event().wait()
        return "never"

    tools = ToolRegistry()
    tools.register(forever)
    agent = Agent(ScriptedProvider([calls(("forever", {})), "never"]), tools, sinks=[traced.tracing.sink],
                  tool_scope=traced.tracing.sink.tool_scope)
    task = asyncio.ensure_future(agent.ask("wait"))
    await asyncio.wait_for(running.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [turn] = traced.named("invoke_agent")
    [span] = traced.named("execute_tool forever")
    assert attrs(turn)["synapse.status"] == "cancelled"
    assert attrs(span)["synapse.cancelled"] is True
    assert span.parent is not None
    assert span.parent.span_id == turn.context.span_id
    assert (turn.status.status_code, span.status.status_code) == (StatusCode.UNSET, StatusCode.UNSET)


def test_an_mcp_task_is_a_span_under_its_tool_call_from_creation_to_its_end_by_the_servers_clock(
        traced_content: Traced) -> None:
    """A task's span runs from the server's createdAt to its last update, with a status event per change; a
    secret in a status message is masked."""
    import datetime as dt

    from synapse_nb.events import TaskCreated, TaskStatusChanged
    from synapse_nb.task_state import TaskState

    t0 = dt.datetime(2026, 11, 28, 9, 0, 0)

    def state(status: str, seconds: float, message: str | None = None) -> TaskState:
        return TaskState(task_id="t-9", server="fm", tool="slow", form="2026-07-28", status=status,  # type: ignore[arg-type]
                         status_message=message, created_at=t0, updated_at=t0 + dt.timedelta(seconds=seconds))

    call = ToolCall("call-9", "fm__slow", {"seconds": 20})
    sink = traced_content.tracing.sink
    sink(ToolCallStarted(session_id="", call=call, server="fm", tool="slow", approval="manual", at=t0))
    sink(TaskCreated(task=state("working", 0), tool_call_id="call-9", at=t0 + dt.timedelta(milliseconds=5)))
    sink(TaskStatusChanged(task=state("input_required", 4, f"asks for {SECRET}"), tool_call_id="call-9",
                           at=t0 + dt.timedelta(seconds=5)))
    sink(TaskStatusChanged(task=state("completed", 20), tool_call_id="call-9", at=t0 + dt.timedelta(seconds=90)))
    sink(ToolCallFinished(
        session_id="", call=call, server="fm", tool="slow", approval="manual", started_at=t0, duration_ms=21_000,
        result=ToolResult(content=(ContentBlock("text", text="done"),)), origin="manual"))

    [task] = traced_content.named("mcp.task slow")
    [tool_span] = traced_content.named("execute_tool slow")
    assert task.parent is not None
    assert task.parent.span_id == tool_span.context.span_id
    assert task.end_time - task.start_time == 20_000_000_000  # the task's life by the server's clock
    assert attrs(task)["mcp.task.id"] == "t-9"
    assert attrs(task)["synapse.mcp.task.status"] == "completed"
    assert [e.attributes["synapse.mcp.task.status"] for e in task.events] == ["working", "input_required", "completed"]
    assert SECRET not in values([task])
    assert MASK in str(task.events[1].attributes)
