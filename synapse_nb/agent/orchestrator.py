"""The Agent: the tool-call loop over a Provider and a ToolRegistry, emitting every event to sinks and the caller."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..cassette import ToolsDigest, provider_params
from ..errors import AgentError, MaxIterationsError, StreamError, SynapseError
from ..events import (
    Event,
    LlmCallFinished,
    MessageAdded,
    SessionStarted,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    TurnCancelled,
    TurnFailed,
    TurnFinished,
    TurnStarted,
    utcnow,
)
from ..protocols import (
    ApprovalCallback,
    Completion,
    EventSink,
    Provider,
    ProviderChunk,
    TextChunk,
    ToolAnswer,
    ToolCallChunk,
    ToolScope,
)
from ..task_state import TASK_ORIGIN, TaskOrigin
from ..types import Message, ToolCall, ToolResult, ToolSpec, Usage
from .approval import ApprovalPolicy
from .result import TurnResult, turn_result
from .spend import Budget, SessionSpend
from .tools import ToolRegistry, error_line
from .turn import TurnOptions

__all__ = ["Agent", "TurnOptions", "TurnResult", "turn_result"]

logger = logging.getLogger("synapse_nb.agent")

_INTERRUPTS = (asyncio.CancelledError, KeyboardInterrupt)
"""What ends a turn as cancelled: the task was cancelled, or Ctrl-C landed inside the loop's code."""
CANCEL_GRACE = 5.0
"""Seconds to wait for tool calls to acknowledge cancellation before leaving them behind."""


_TOLD_PER_TURN = frozenset({
    "provider", "system", "tool_patterns", "max_iterations", "max_result_chars", "approval", "ask_callback", "sinks",
    "tool_scope", "budget", "tool_answer", "tool_timeout",
})
"""TurnOptions fields (and the old name of `ask`), refused as Agent attributes (see Agent.__setattr__)."""


@dataclass(slots=True)
class _Call:
    """One requested tool call on its way through approval and execution."""

    call: ToolCall
    spec: ToolSpec | None
    approval: str = "auto"
    refusal: str | None = None  # the error text when the call will not run
    started: bool = False
    started_at: datetime.datetime | None = None
    finished: ToolCallFinished | None = None


class Agent:
    """Answers prompts with a model that may call tools; one Agent is one conversation session.

    The Agent keeps the session only: its id, the transcript, usage, spend and message order. Everything
    a turn is told (provider, system prompt, tools offered, approval, sinks, budget...) comes with the turn
    as a `TurnOptions` value (agent/turn.py); the constructor's arguments make `defaults`, the options of a
    turn given none. Nothing of a turn is written on the Agent, so one Agent can be told differently turn by
    turn, and sessions run concurrently on shared parts (registry, policy) without seeing each other.

    `messages` is the transcript (without the system prompt, which is sent separately); it survives
    failed and cancelled turns in a state the next request can be built from.

    `tool_answer`, when set (a replayed cassette), answers tool calls instead of running them, without
    asking approval (their approval is recorded as "replayed"); a provider with a true `replays`
    attribute (providers/replay.py) marks turns and LLM calls as replayed.
    """

    def __init__(
        self,
        provider: Provider,
        tools: ToolRegistry | None = None,
        *,
        session_id: str | None = None,
        session_name: str | None = None,
        system: str | None = None,
        max_iterations: int = 10,
        approval: ApprovalPolicy | None = None,
        ask: ApprovalCallback | None = None,
        sinks: Iterable[EventSink] = (),
        tool_patterns: Sequence[str] | None = None,
        max_result_chars: int | None = 20000,
        notebook: str | None = None,
        kernel_id: str | None = None,
        tool_timeout: float | None = None,
        tool_scope: ToolScope | None = None,
        tool_answer: ToolAnswer | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.defaults = TurnOptions(
            provider, system=system, tool_patterns=None if tool_patterns is None else tuple(tool_patterns),
            max_iterations=max_iterations, max_result_chars=max_result_chars,
            approval=approval if approval is not None else ApprovalPolicy(), ask=ask, sinks=tuple(sinks),
            tool_scope=tool_scope, budget=budget, tool_answer=tool_answer, tool_timeout=tool_timeout,
        )
        self.tools = tools
        self.session_id = session_id or uuid.uuid4().hex
        self.session_name = session_name
        self.notebook = notebook
        self.kernel_id = kernel_id
        self.messages: list[Message] = []
        self.usage = Usage()
        self._spend = SessionSpend()
        self._seq = 0
        self._session_started = False
        self._system_recorded: str | None = None
        self._running = False
        self._broken_sinks: set[int] = set()
        self._tools_digest = ToolsDigest()

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
        """The tools a turn with `options` (None: the defaults) offers the model now: the registry's,
        filtered by its `tool_patterns` (empty: none)."""
        patterns = (options or self.defaults).tool_patterns
        return [] if self.tools is None else self.tools.specs(patterns)

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

    def resume(self, session_id: str, messages: Sequence[Message], *, next_seq: int) -> None:
        """Continue a recorded session (e.g. from another kernel): its id and transcript become ours.

        `next_seq` is one past the highest recorded `seq`, so new messages sort after the old ones.
        """
        if self._running:
            raise AgentError("cannot resume a session while a turn is running")
        self.reset()
        self.session_id = session_id
        self.messages = list(messages)
        self._seq = next_seq
        self._session_started = True  # its session row exists already

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
        `.status`/`.error`, cancellation raises."""
        events: list[Event] = []
        await self._turn(prompt, options or self.defaults, events.append)
        return turn_result(events)

    # -- the loop

    async def _turn(self, prompt: str | Sequence[Message], opts: TurnOptions, out: Callable[[Event], None]) -> None:
        if self._running:
            raise AgentError("this session is already answering a prompt; wait for it or use another session")
        self._running = True
        try:
            await self._loop(prompt, opts, out)
        finally:
            self._running = False

    async def _loop(self, prompt: str | Sequence[Message], opts: TurnOptions, out: Callable[[Event], None]) -> None:
        def emit(event: Event) -> None:
            self._emit(event, opts.sinks)
            out(event)

        started = time.perf_counter()
        turn_id = uuid.uuid4().hex
        new = [Message.user(prompt)] if isinstance(prompt, str) else list(prompt)
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
                specs = self.offered_tools(opts)
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
                await self._run_tools(reply, reply_id, specs, opts, emit)
        except _INTERRUPTS:
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

    async def _complete(
        self, specs: Sequence[ToolSpec], turn_id: str, opts: TurnOptions, emit: Callable[[Event], None]
    ) -> Completion:
        """One streamed model request; TextDelta per text chunk, LlmCallFinished at the end (or on failure)."""
        call_id = uuid.uuid4().hex
        started_at = utcnow()
        t0 = time.perf_counter()
        ttft: float | None = None
        completion: Completion | None = None
        # Cheap (the tools digest is cached): what the history needs to export this call to a cassette.
        request = {
            "system": opts.system or None, "params": provider_params(opts.provider),
            "tools": self._tools_digest(specs), "tool_names": [s.name for s in specs], "messages": len(self.messages),
        }

        sent = tuple(self.messages)
        provider = opts.provider

        def finished(error: str | None = None) -> None:
            nonlocal completion
            usage = completion.usage if completion else Usage()
            replayed = opts.replays  # a cassette answered: nothing spent
            price = self._spend.price(provider.name, provider.model, replayed=replayed)
            usage = dataclasses.replace(usage, cost_usd=None if price is None else price.cost(usage))
            if completion is not None:
                completion = dataclasses.replace(completion, usage=usage)
            emit(LlmCallFinished(
                session_id=self.session_id, llm_call_id=call_id, provider=provider.name,
                model=provider.model, started_at=started_at, duration_ms=(time.perf_counter() - t0) * 1000,
                ttft_ms=(completion.ttft_ms if completion and completion.ttft_ms is not None else ttft),
                usage=usage, stop_reason=completion.stop_reason if completion else None, error=error,
                price_source=price.source if price is not None else None,
                input_cost_usd=price.input_cost(usage) if price is not None else None,
                tool_result_tokens=self._spend.record(usage, sent),
                request=request, replayed=replayed,
            ))

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
        except _INTERRUPTS:
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

    # -- tools

    async def _run_tools(
        self, reply: Message, reply_id: str, specs: Sequence[ToolSpec], opts: TurnOptions,
        emit: Callable[[Event], None],
    ) -> None:
        """Approve, then run every approved call of one reply concurrently; append one tool message per call."""
        offered = {s.name: s for s in specs}
        calls = [_Call(call, offered.get(call.name)) for call in reply.tool_calls]
        tasks: dict[asyncio.Task[tuple[ToolResult | None, str | None, float]], _Call] = {}
        batch_started = time.perf_counter()

        def finish(c: _Call, result: ToolResult | None, error: str | None, duration_ms: float) -> None:
            c.finished = ToolCallFinished(
                session_id=self.session_id, call=c.call, server=c.spec.server if c.spec else None,
                tool=_tool_name(c), approval=c.approval, started_at=c.started_at or utcnow(),
                duration_ms=duration_ms, result=result, error=error, message_id=reply_id,
            )
            emit(c.finished)

        try:
            for c in calls:
                if c.spec is None:
                    c.refusal = self._unknown_tool(c.call.name, offered)
                elif opts.tool_answer is not None:
                    c.approval = "replayed"  # the cassette answers as it was decided then: no one is asked
                else:
                    c.approval, c.refusal = await self._approve(c.spec, c.call, opts)
            for c in calls:
                c.started, c.started_at = True, utcnow()
                emit(ToolCallStarted(
                    session_id=self.session_id, call=c.call, server=c.spec.server if c.spec else None,
                    tool=_tool_name(c), approval=c.approval, message_id=reply_id, at=c.started_at,
                ))
                if c.refusal is not None:
                    finish(c, ToolResult.error(c.refusal) if c.spec else None, None if c.spec else c.refusal, 0.0)
                else:
                    tasks[asyncio.create_task(self._call_tool(c.call, opts, emit), name=f"tool {c.call.name}")] = c
            pending = set(tasks)
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in sorted(done, key=lambda t: calls.index(tasks[t])):
                    c = tasks[task]
                    if task.cancelled():
                        finish(c, None, "cancelled", (time.perf_counter() - batch_started) * 1000)
                    else:
                        finish(c, *task.result())
        except _INTERRUPTS as interrupt:
            await self._cancel(tasks, wait=isinstance(interrupt, asyncio.CancelledError))
            for task, c in tasks.items():
                if c.finished is None and task.done() and not task.cancelled():
                    finish(c, *task.result())  # it finished while the others were being cancelled
            for c in calls:
                if c.finished is None and c.started:
                    finish(c, None, "cancelled", (time.perf_counter() - batch_started) * 1000)
            raise
        finally:
            # Whatever happened, every tool call of the reply gets its tool message, so the next request is valid.
            for c in calls:
                self._add_tool_message(c, opts, emit)

    async def _cancel(self, tasks: Mapping[asyncio.Task[Any], _Call], *, wait: bool = True) -> None:
        running = [t for t in tasks if not t.done()]
        for task in running:
            task.cancel()
        if running and wait:
            try:
                _, late = await asyncio.wait(running, timeout=CANCEL_GRACE)
            except asyncio.CancelledError:  # cancelled again while cleaning up: do not wait any longer
                return
            if late:
                logger.warning("%d tool call(s) did not stop within %.0f s of cancellation", len(late), CANCEL_GRACE)

    async def _call_tool(
        self, call: ToolCall, opts: TurnOptions, emit: Callable[[Event], None]
    ) -> tuple[ToolResult | None, str | None, float]:
        """(result, error, duration ms) of one call; errors are data for the model, never raised.

        The tool's progress notifications become ToolCallProgress events of this call."""
        assert self.tools is not None

        def progress(done: float, total: float | None, message: str | None) -> None:
            emit(ToolCallProgress(
                session_id=self.session_id, call_id=call.id, progress=done, total=total, message=message,
            ))

        t0 = time.perf_counter()
        if opts.tool_answer is not None:
            answered = await opts.tool_answer(call)
            if answered is not None:
                return answered
        scope = opts.tool_scope(call.id) if opts.tool_scope is not None else contextlib.nullcontext()
        outer = TASK_ORIGIN.get()
        origin = TASK_ORIGIN.set(TaskOrigin(self.session_id, call.id, outer.cell if outer is not None else None))
        try:
            with scope:
                result = await self.tools.call(
                    call.name, call.arguments, timeout=opts.tool_timeout, on_progress=progress)
        except SynapseError as exc:
            return None, error_line(exc), (time.perf_counter() - t0) * 1000
        except Exception as exc:  # a failing tool is reported to the model; it never ends the loop
            logger.warning("tool %s raised", call.name, exc_info=True)
            return None, error_line(exc), (time.perf_counter() - t0) * 1000
        finally:
            TASK_ORIGIN.reset(origin)
        return result, None, result.duration_ms or (time.perf_counter() - t0) * 1000

    async def _approve(self, spec: ToolSpec, call: ToolCall, opts: TurnOptions) -> tuple[str, str | None]:
        """(approval as recorded, refusal text or None) for one call, asking the user when the policy says so."""
        mode = opts.approval.decide(spec)
        if mode == "auto":
            return "auto", None
        if mode == "deny":
            return "denied", f"denied by policy: {spec.name} may not run (approve=deny)"
        if opts.ask is None:
            return "denied", f"denied: {spec.name} needs approval and there is no one to ask"
        try:
            answer = str(await opts.ask(spec, call.arguments)).strip().lower()
        except Exception:  # an approval prompt that fails counts as a refusal
            logger.exception("asking approval for %s failed", spec.name)
            return "denied", "denied: asking the user for approval failed"
        if answer in ("always", "a"):
            opts.approval.remember_always(spec.name)
            return "always", None
        if answer in ("yes", "y"):
            return "approved", None
        return "denied", "denied by user"

    def _unknown_tool(self, name: str, offered: Mapping[str, ToolSpec]) -> str:
        names = sorted(offered)
        listed = ", ".join(names[:30]) + (", ..." if len(names) > 30 else "")
        return f"UnknownToolError: no tool named {name!r} is available" + (
            f"; available tools: {listed}" if names else "; no tools are available in this turn"
        )

    def _add_tool_message(self, c: _Call, opts: TurnOptions, emit: Callable[[Event], None]) -> None:
        fin = c.finished
        result: ToolResult
        if fin is not None and fin.result is not None:
            result = fin.result
            content = _bound(result.text, opts.max_result_chars)
        else:
            text = fin.error if fin is not None and fin.error else "cancelled"
            result = ToolResult.error(text, duration_ms=fin.duration_ms if fin else 0.0)
            content = text
        message = Message.tool(c.call.id, content, name=c.call.name, is_error=result.is_error, images=result.images)
        self._add(message, opts, emit, result=result)

    # -- transcript and events

    def _add(
        self, message: Message, opts: TurnOptions, emit: Callable[[Event], None], *, transcript: bool = True,
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

    def _add_reply(self, message: Message, opts: TurnOptions, emit: Callable[[Event], None]) -> tuple[Message, str]:
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

    def _emit(self, event: Event, sinks: Sequence[EventSink]) -> None:
        for sink in sinks:
            try:
                sink(event)
            except Exception:  # a sink must never break the loop
                if id(sink) not in self._broken_sinks:
                    self._broken_sinks.add(id(sink))
                    logger.exception("event sink %r failed (further failures of it are logged at debug)", sink)
                else:
                    logger.debug("event sink %r failed", sink, exc_info=True)


def _bound(text: str, limit: int | None) -> str:
    """What the model sees of a tool result: at most `limit` characters (None or 0: all), saying so."""
    if limit is None or limit <= 0 or len(text) <= limit:
        return text
    return (
        f"{text[:limit]}\n\n[truncated: the tool returned {len(text):,} characters; only the first "
        f"{limit:,} are shown. The full result is recorded.]"
    )


def _tool_name(c: _Call) -> str:
    if c.spec is not None:
        return c.spec.original_name or c.spec.name
    return c.call.name
