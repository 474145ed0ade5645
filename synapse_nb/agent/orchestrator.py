"""The Agent: the tool-call loop over a Provider and a ToolRegistry, emitting every event to sinks and the caller."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Unpack

from ..cassette import RequestDigest
from ..errors import AgentError, MaxIterationsError, StreamError, SynapseError
from ..events import (
    Event,
    LlmCallFinished,
    MessageAdded,
    SessionStarted,
    TextDelta,
    ToolCallArgumentsDelta,
    TurnCancelled,
    TurnFailed,
    TurnFinished,
    TurnStarted,
    utcnow,
)
from ..history.transcript import waiting_calls
from ..protocols import Completion, Provider, ProviderChunk, TextChunk, ToolCallChunk
from ..types import Message, ToolCall, ToolResult, ToolSpec, Usage
from .emitter import Emitter
from .result import TurnRecord, TurnResult
from .spend import SessionSpend
from .tool_batch import INTERRUPTS, ToolBatch
from .tool_search import loaded_tools
from .tools import ToolRegistry, error_line
from .turn import TurnChanges, TurnOptions

__all__ = ["Agent", "TurnOptions", "TurnResult"]

logger = logging.getLogger("synapse_nb.agent")

Emit = Callable[[Event], Event]

NOT_RESUMED = ("no result: the kernel stopped before this tool call finished, and the turn went on without it "
               "(%%synapse --resume would have given it its result)")
"""The tool message of a call a turn was left waiting on (a kernel restart) when a new prompt comes instead."""

_TOLD_PER_TURN = frozenset(f.name for f in dataclasses.fields(TurnOptions)) - {"ask"} | {"ask_callback"}
"""TurnOptions fields (and the old name of `ask`, a method here), refused as Agent attributes (see
Agent.__setattr__)."""


class Agent:
    """Answers prompts with a model that may call tools; one Agent is one conversation session.

    The Agent keeps the session only: its id, the transcript, usage, spend and message order. Everything
    a turn is told (provider, system prompt, tools offered, approval, sinks, budget...) comes with the turn
    as a `TurnOptions` value (agent/turn.py). The Agent is built with its `defaults`, the options of a turn
    given none: a TurnOptions (`Agent(TurnOptions(provider, system=...), tools)`), or a provider and the
    fields that differ from TurnOptions' own defaults (`Agent(provider, tools, system=...)`); a turn then
    passes only what differs (`agent.ask(prompt, agent.defaults.replace(system=...))`). Nothing of a turn
    is written on the Agent but its session, so one Agent can be told differently turn by turn, and
    sessions run concurrently on shared parts (registry, policy) without seeing each other.

    `messages` is the transcript (without the system prompt, which is sent separately); it survives
    failed and cancelled turns in a state the next request can be built from. `last_result` is the
    TurnResult of the latest turn, also of one that was cancelled (whose `ask` raised).

    What a call costs is the session's `SessionSpend` (agent/spend.py), a stage every event of the session
    passes before the sinks (agent/emitter.py); the tool calls of a reply are a `ToolBatch`
    (agent/tool_batch.py); the loop here only streams replies and hands their calls on, until an answer.

    `tool_answer`, when set (a replayed cassette), answers tool calls instead of running them, without
    asking approval (their approval is recorded as "replayed"); a provider with a true `replays`
    attribute (providers/replay.py) marks turns and LLM calls as replayed.
    """

    def __init__(
        self,
        defaults: TurnOptions | Provider,
        tools: ToolRegistry | None = None,
        *,
        session_id: str | None = None,
        session_name: str | None = None,
        notebook: str | None = None,
        kernel_id: str | None = None,
        **options: Unpack[TurnChanges],
    ) -> None:
        if isinstance(defaults, TurnOptions):
            self.defaults = defaults.replace(**options) if options else defaults
        else:
            self.defaults = TurnOptions(defaults).replace(**options)
        self.tools = tools
        self.session_id = session_id or uuid.uuid4().hex
        self.session_name = session_name
        self.notebook = notebook
        self.kernel_id = kernel_id
        self.messages: list[Message] = []
        self.usage = Usage()
        self.last_result: TurnResult | None = None
        self._spend = SessionSpend()
        self._seq = 0
        self._session_started = False
        self._system_recorded: str | None = None
        self._running = False
        self._broken_sinks: set[int] = set()
        self._requests = RequestDigest()

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _TOLD_PER_TURN:  # these were Agent attributes once: setting one now would do nothing
            raise AgentError(
                f"Agent.{name} is told per turn: pass it to Agent(...) or in the turn's options, e.g. "
                f"agent.ask(prompt, agent.defaults.replace({name}=...))"
            )
        super().__setattr__(name, value)

    @property
    def running(self) -> bool:
        """True while a turn is in progress."""
        return self._running

    @property
    def provider(self) -> Provider:
        """The provider of a turn told nothing else (the constructor's)."""
        return self.defaults.provider

    @property
    def model_id(self) -> str:
        """`provider:model` of the default provider, as recorded for the session and its messages."""
        return self.defaults.model_id

    def offered_tools(self, options: TurnOptions | None = None) -> list[ToolSpec]:
        """The tools a turn with `options` (None: the defaults) offers the model now: the registry's, filtered
        by its `tool_patterns` (empty: none), less those its `tool_search` defers (all of them when they are more
        than its budget) with `tools__search` and the tools the session's searches loaded; then those its
        `agent_tools` offer now (`results__sql` while results are held), unless the turn offers no tools."""
        return self._serving(options or self.defaults)[0]

    def _serving(self, opts: TurnOptions) -> tuple[list[ToolSpec], TurnOptions]:
        """(the tools offered now, the options the tool calls of the reply run with: with the turn's
        `tools__search` among its agent tools when it is offered)."""
        specs = [] if self.tools is None else self.tools.specs(opts.tool_patterns)
        if opts.tool_patterns == ():
            return specs, opts
        search = opts.tool_search
        deferred = search.deferred(specs) if search is not None else set()
        if search is not None and deferred:
            loaded = loaded_tools(self.messages)
            opts = opts.replace(agent_tools=(search.serve(specs), *opts.agent_tools))
            specs = [s for s in specs if s.name not in deferred or s.name in loaded]
        names = {s.name for s in specs}
        for agent_tool in opts.agent_tools:
            specs.extend(s for s in agent_tool.specs() if s.name not in names)
        return specs, opts

    def reset(self) -> None:
        """Start a new session: new id, empty transcript."""
        if self._running:
            raise AgentError("cannot reset while a turn is running")
        self.session_id = uuid.uuid4().hex
        self.messages = []
        self.usage = Usage()
        self._spend = SessionSpend()
        self._seq = 0
        self._session_started = False
        self._system_recorded = None

    def resume(self, session_id: str, messages: Sequence[Message], *, next_seq: int,
               last_usage: tuple[int, int] | None = None) -> None:
        """Continue a recorded session (e.g. from another kernel): its id and transcript become ours.

        `next_seq` is one past the highest recorded `seq`, so new messages sort after the old ones. `last_usage`
        (prompt, output tokens of the session's last model call) lets the next call measure what the tool results
        added since then cost (a turn resumed with an MCP task's result charges it to the tool, as any call).
        """
        if self._running:
            raise AgentError("cannot resume a session while a turn is running")
        self.reset()
        self.session_id = session_id
        self.messages = list(messages)
        self._seq = next_seq
        self._session_started = True  # its session row exists already
        if last_usage is not None:
            self._spend.last_input, self._spend.last_output = last_usage

    # -- public entry points

    async def run(
        self, prompt: str | Sequence[Message], options: TurnOptions | None = None
    ) -> AsyncIterator[Event]:
        """Answer one prompt told by `options` (None: `defaults`), yielding every event as it happens (each
        also goes to every sink of the options).

        Cancelling the consuming task stops the turn: tool calls in flight are cancelled, TurnCancelled
        goes to the sinks, and CancelledError propagates. Close the iterator (`contextlib.aclosing`) if
        you stop consuming early; that cancels the turn too.
        """
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        turn = asyncio.create_task(self._turn(prompt, options or self.defaults, queue.put_nowait))
        turn.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (event := await queue.get()) is not None:
                yield event
            await turn  # a bug inside the loop surfaces here
        finally:
            if not turn.done():
                turn.cancel()
                await asyncio.wait([turn])

    async def ask(self, prompt: str | Sequence[Message], options: TurnOptions | None = None) -> TurnResult:
        """Answer one prompt told by `options` (None: `defaults`) and return the result; failures are in
        `.status`/`.error`, cancellation raises (the cancelled turn's result is then `last_result`)."""
        await self._turn(prompt, options or self.defaults, _nowhere)
        assert self.last_result is not None  # set by every turn that started
        return self.last_result

    # -- the loop

    async def _turn(self, prompt: str | Sequence[Message], opts: TurnOptions, out: Callable[[Event], None]) -> None:
        """One turn: its events go through the session's stages (pricing) to the turn's sinks, its TurnRecord
        (which becomes `last_result`, however the turn ends) and `out`."""
        if self._running:
            raise AgentError("this session is already answering a prompt; wait for it or use another session")
        self._running = True
        record = TurnRecord(self.session_id, uuid.uuid4().hex, opts.model_id)
        emit = Emitter((self._spend,), (*opts.sinks, record, out), self._broken_sinks)
        try:
            await self._loop(prompt, opts, record.turn_id, emit)
        finally:
            self._running = False
            self.last_result = record.result()

    async def _loop(self, prompt: str | Sequence[Message], opts: TurnOptions, turn_id: str, emit: Emit) -> None:
        started = time.perf_counter()
        new = [Message.user(prompt)] if isinstance(prompt, str) else list(prompt)
        if isinstance(prompt, str):  # a new prompt closes the calls a turn left waiting: the request stays valid
            waiting = waiting_calls(self.messages)
            new[:0] = [Message.tool(c.id, NOT_RESUMED, name=c.name, is_error=True) for c in waiting]
        text = next((m.content for m in reversed(new) if m.role == "user"), "")
        if not self._session_started:
            self._session_started = True
            emit(SessionStarted(
                session_id=self.session_id, name=self.session_name or f"session-{self.session_id[:8]}",
                model=opts.model_id, notebook=self.notebook, kernel_id=self.kernel_id,
            ))
        emit(TurnStarted(
            session_id=self.session_id, turn_id=turn_id, prompt=text, model=opts.model_id, replayed=opts.replays,
        ))
        if opts.system and opts.system != self._system_recorded:
            self._system_recorded = opts.system
            self._add(Message.system(opts.system), opts, emit, transcript=False)
        for message in new:
            self._add(message, opts, emit)

        usage = Usage()
        iterations = 0

        def elapsed() -> float:
            return (time.perf_counter() - started) * 1000

        try:
            while True:
                specs, serving = self._serving(opts)
                if opts.budget is not None:
                    self._spend.check(
                        opts.budget, turn=usage, model=(opts.provider.name, opts.provider.model),
                        messages=self.messages, system=opts.system, tools=specs, replayed=opts.replays,
                    )
                iterations += 1
                completion = await self._complete(specs, turn_id, opts, emit)
                usage += completion.usage
                self.usage += completion.usage
                reply, reply_id = self._add_reply(completion.message, opts, emit)
                if not reply.tool_calls:
                    emit(TurnFinished(
                        session_id=self.session_id, turn_id=turn_id, text=reply.content,
                        iterations=iterations, usage=usage, duration_ms=elapsed(),
                    ))
                    return
                if iterations >= opts.max_iterations:
                    error = MaxIterationsError(
                        f"the model still asked for tools after {iterations} iterations; the partial transcript "
                        "is kept (allow more with --max-iterations)", iterations=iterations,
                    )
                    for call in reply.tool_calls:
                        message = Message.tool(call.id, f"not run: {error}", name=call.name, is_error=True)
                        self._add(message, opts, emit)
                    emit(TurnFailed(
                        session_id=self.session_id, turn_id=turn_id, error=str(error),
                        error_type=type(error).__name__, iterations=iterations, usage=usage, duration_ms=elapsed(),
                    ))
                    return

                def add(message: Message, result: ToolResult) -> None:
                    self._add(message, opts, emit, result=result)

                await ToolBatch(self.session_id, self.tools, serving, emit, add).run(reply, reply_id, specs)
        except INTERRUPTS:
            emit(TurnCancelled(
                session_id=self.session_id, turn_id=turn_id, iterations=iterations, usage=usage,
                duration_ms=elapsed(),
            ))
            raise
        except Exception as exc:  # the provider failed: the turn ends, the transcript so far stays
            if not isinstance(exc, SynapseError):
                logger.exception("the turn failed unexpectedly (model %s)", opts.model_id)
            emit(TurnFailed(
                session_id=self.session_id, turn_id=turn_id, error=str(exc) or type(exc).__name__,
                error_type=type(exc).__name__, iterations=iterations, usage=usage, duration_ms=elapsed(),
            ))

    async def _complete(self, specs: Sequence[ToolSpec], turn_id: str, opts: TurnOptions, emit: Emit) -> Completion:
        """One streamed model request; TextDelta per text chunk, LlmCallFinished at the end (or on failure)."""
        call_id = uuid.uuid4().hex
        started_at = utcnow()
        t0 = time.perf_counter()
        ttft: float | None = None
        completion: Completion | None = None
        request = self._requests(opts.provider, opts.system, specs, len(self.messages))  # for a cassette export
        sent = tuple(self.messages)
        provider = opts.provider

        def finished(error: str | None = None) -> None:
            nonlocal completion
            call = emit(LlmCallFinished(
                session_id=self.session_id, llm_call_id=call_id, provider=provider.name,
                model=provider.model, started_at=started_at, duration_ms=(time.perf_counter() - t0) * 1000,
                ttft_ms=(completion.ttft_ms if completion and completion.ttft_ms is not None else ttft),
                usage=completion.usage if completion else Usage(),
                stop_reason=completion.stop_reason if completion else None, error=error,
                request=request, replayed=opts.replays,
            ))
            if completion is not None and isinstance(call, LlmCallFinished):
                completion = dataclasses.replace(completion, usage=call.usage)  # as priced (agent/spend.py)

        stream: AsyncIterator[ProviderChunk] | None = None
        try:
            stream = provider.stream(sent, tuple(specs), system=opts.system)
            async for chunk in stream:
                if ttft is None:
                    ttft = (time.perf_counter() - t0) * 1000
                if isinstance(chunk, TextChunk):
                    if chunk.text:
                        emit(TextDelta(session_id=self.session_id, turn_id=turn_id, text=chunk.text))
                elif isinstance(chunk, ToolCallChunk):
                    emit(ToolCallArgumentsDelta(
                        session_id=self.session_id, turn_id=turn_id, index=chunk.index,
                        arguments_delta=chunk.arguments_delta, call_id=chunk.id, name=chunk.name,
                    ))
                elif isinstance(chunk, Completion):
                    completion = chunk
            if completion is None:
                raise StreamError("the model's stream ended without completing the reply", provider=provider.name)
        except INTERRUPTS:
            finished("cancelled")
            raise
        except Exception as exc:
            finished(error_line(exc))
            raise
        finally:
            aclose = getattr(stream, "aclose", None) if stream is not None else None
            if aclose is not None:
                await aclose()  # stop streaming now (closes the HTTP response)
        finished()
        return completion

    # -- transcript and events

    def _add(
        self, message: Message, opts: TurnOptions, emit: Emit, *, transcript: bool = True,
        result: ToolResult | None = None,
    ) -> str:
        """A message joins the session (the transcript too, unless it is the system prompt): MessageAdded."""
        message_id = uuid.uuid4().hex
        if transcript:
            self.messages.append(message)
        emit(MessageAdded(
            session_id=self.session_id, message_id=message_id, seq=self._seq, message=message,
            model=opts.model_id if message.role == "assistant" else None, result=result,
        ))
        self._seq += 1
        return message_id

    def _add_reply(self, message: Message, opts: TurnOptions, emit: Emit) -> tuple[Message, str]:
        """The assistant reply joins the transcript; tool calls without (unique) ids get one."""
        seen: set[str] = set()
        calls: list[ToolCall] = []
        for call in message.tool_calls:
            if not call.id or call.id in seen:
                call = dataclasses.replace(call, id=f"call_{uuid.uuid4().hex[:24]}")
            seen.add(call.id)
            calls.append(call)
        reply = dataclasses.replace(message, role="assistant", tool_calls=tuple(calls))
        return reply, self._add(reply, opts, emit)


def _nowhere(event: Event) -> None:
    """`ask` keeps no events: its result is the turn's TurnRecord."""
