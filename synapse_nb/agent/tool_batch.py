"""ToolBatch: the tool calls of one model reply, approved (or refused), then run concurrently, each reported."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..departure import DEPARTURE
from ..errors import SynapseError
from ..events import Event, ToolCallFinished, ToolCallProgress, ToolCallStarted, utcnow
from ..task_state import TASK_ORIGIN, TaskOrigin
from ..types import Message, ToolCall, ToolResult, ToolSpec
from .held import HeldResult
from .held_summary import summarize
from .results_tool import SQL_TOOL
from .tool_search import SEARCH_TOOL
from .tools import ToolRegistry, error_line
from .turn import TurnOptions

__all__ = ["CANCEL_GRACE", "INTERRUPTS", "ToolBatch", "bound_text"]

logger = logging.getLogger("synapse_nb.agent")

INTERRUPTS = (asyncio.CancelledError, KeyboardInterrupt)
"""What ends a turn as cancelled: the task was cancelled, or Ctrl-C landed inside the loop's code."""
CANCEL_GRACE = 5.0
"""Seconds to wait for tool calls to acknowledge cancellation before leaving them behind."""

AddMessage = Callable[[Message, ToolResult], None]
"""Adds a tool message to the session's transcript, with the full result it bounds (the Agent's)."""


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
    held: HeldResult | None = None  # the kernel holds the whole result; the model sees `summary`
    summary: str | None = None
    left: bool = False  # the kernel ended under it: no result and no tool message (a resumed turn fills them)

    @property
    def tool(self) -> str:
        """The tool's own name (the server's, not the qualified one offered to the model)."""
        if self.spec is not None:
            return self.spec.original_name or self.spec.name
        return self.call.name


class ToolBatch:
    """The tool calls of one reply (`reply_id`), as the turn's `opts` say: each approved or refused, then every
    approved one run concurrently; ToolCallStarted and ToolCallFinished for each, in the order asked; and,
    however the batch ends (an interrupt cancels the calls still running), one tool message per call given
    to `add`, so the next request of the session is valid; except when the kernel's restart or shutdown ended
    it: the calls still running then have none, as if the kernel had died, for a resumed turn to fill."""

    def __init__(
        self, session_id: str, tools: ToolRegistry | None, opts: TurnOptions, emit: Callable[[Event], Event],
        add: AddMessage,
    ) -> None:
        self.session_id = session_id
        self.tools = tools
        self.opts = opts
        self.emit = emit
        self.add = add

    async def run(self, reply: Message, reply_id: str, specs: Sequence[ToolSpec]) -> None:
        """Approve, then run every approved call of `reply` concurrently; one tool message per call."""
        offered = {s.name: s for s in specs}
        calls = [_Call(call, offered.get(call.name)) for call in reply.tool_calls]
        tasks: dict[asyncio.Task[tuple[ToolResult | None, str | None, float]], _Call] = {}
        batch_started = time.perf_counter()

        def finish(c: _Call, result: ToolResult | None, error: str | None, duration_ms: float) -> None:
            c.finished = ToolCallFinished(
                session_id=self.session_id, call=c.call, server=c.spec.server if c.spec else None,
                tool=c.tool, approval=c.approval, started_at=c.started_at or utcnow(),
                duration_ms=duration_ms, result=result, error=error, message_id=reply_id,
                held=c.held.name if c.held is not None else None,
                origin=c.spec.origin if c.spec is not None and c.spec.origin else "agent",
            )
            self.emit(c.finished)

        try:
            for c in calls:
                if c.spec is None:
                    c.refusal = _unknown_tool(c.call.name, offered)
                elif self.opts.tool_answer is not None:
                    c.approval = "replayed"  # the cassette answers as it was decided then: no one is asked
                else:
                    c.approval, c.refusal = await self._approve(c.spec, c.call)
            for c in calls:
                c.started, c.started_at = True, utcnow()
                self.emit(ToolCallStarted(
                    session_id=self.session_id, call=c.call, server=c.spec.server if c.spec else None,
                    tool=c.tool, approval=c.approval, message_id=reply_id, at=c.started_at,
                ))
                if c.refusal is not None:
                    finish(c, ToolResult.error(c.refusal) if c.spec else None, None if c.spec else c.refusal, 0.0)
                else:
                    tasks[asyncio.create_task(self._run(c, specs), name=f"tool {c.call.name}")] = c
            pending = set(tasks)
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in sorted(done, key=lambda t: calls.index(tasks[t])):
                    c = tasks[task]
                    if task.cancelled():
                        finish(c, None, "cancelled", (time.perf_counter() - batch_started) * 1000)
                    else:
                        finish(c, *task.result())
        except INTERRUPTS as interrupt:
            await _cancel(tasks, wait=isinstance(interrupt, asyncio.CancelledError))
            for task, c in tasks.items():
                if c.finished is None and task.done() and not task.cancelled():
                    finish(c, *task.result())  # it finished while the others were being cancelled
            # the kernel restarting or shutting down interrupted the turn (synapse_nb/departure.py): its running
            # calls are left as a killed kernel leaves them, open, so `%synapse --resume` can give them their results
            leaving = DEPARTURE.announced
            for c in calls:
                if c.finished is None and c.started:
                    if leaving:
                        c.left = True
                    else:
                        finish(c, None, "cancelled", (time.perf_counter() - batch_started) * 1000)
            raise
        finally:
            # Whatever happened, every tool call of the reply gets its tool message, so the next request is valid
            # (unless the kernel is ending: the resumed turn adds them).
            for c in calls:
                if not c.left:
                    self._add_tool_message(c)

    async def _run(self, c: _Call, specs: Sequence[ToolSpec]) -> tuple[ToolResult | None, str | None, float]:
        """Run one call; a result the turn's hold policy holds is kept whole (in a worker thread: a big one takes
        a moment to parse) and summarised for the model."""
        result, error, duration_ms = await self._call_tool(c.call)
        held = self.opts.held
        server = c.spec.server if c.spec is not None else None
        if result is not None and held is not None and self.opts.hold.holds(result, server):
            c.held = await asyncio.to_thread(held.hold, result, tool=c.call.name, call_id=c.call.id)
            python = any(s.name == "kernel__run_python" for s in specs)
            c.summary = summarize(c.held, sql_tool=SQL_TOOL, python=python)
        return result, error, duration_ms

    async def _call_tool(self, call: ToolCall) -> tuple[ToolResult | None, str | None, float]:
        """(result, error, duration ms) of one call; errors are data for the model, never raised.

        The tool's progress notifications become ToolCallProgress events of this call."""
        opts = self.opts

        def progress(done: float, total: float | None, message: str | None) -> None:
            self.emit(ToolCallProgress(
                session_id=self.session_id, call_id=call.id, progress=done, total=total, message=message,
            ))

        t0 = time.perf_counter()
        if opts.tool_answer is not None:
            answered = await opts.tool_answer(call)
            if answered is not None:
                return answered
        scope = opts.tool_scope(call.id) if opts.tool_scope is not None else contextlib.nullcontext()
        # a call the server runs as an MCP task records this turn's session, this call and the cell as its origin
        outer = TASK_ORIGIN.get()
        origin = TASK_ORIGIN.set(TaskOrigin(self.session_id, call.id, outer.cell if outer is not None else None))
        served = next((t for t in opts.agent_tools if any(s.name == call.name for s in t.specs())), None)
        try:
            with scope:
                if served is not None:
                    result = await served.call(call.name, call.arguments)
                elif self.tools is not None:
                    result = await self.tools.call(
                        call.name, call.arguments, timeout=opts.tool_timeout, on_progress=progress)
                else:
                    return None, f"UnknownToolError: no tool named {call.name!r}", 0.0
        except SynapseError as exc:
            return None, error_line(exc), (time.perf_counter() - t0) * 1000
        except Exception as exc:  # a failing tool is reported to the model; it never ends the loop
            logger.warning("tool %s raised", call.name, exc_info=True)
            return None, error_line(exc), (time.perf_counter() - t0) * 1000
        finally:
            TASK_ORIGIN.reset(origin)
        return result, None, result.duration_ms or (time.perf_counter() - t0) * 1000

    async def _approve(self, spec: ToolSpec, call: ToolCall) -> tuple[str, str | None]:
        """(approval as recorded, refusal text or None) for one call, asking the user when the policy says so."""
        opts = self.opts
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

    def _limit(self, c: _Call) -> int | None:
        """What the model may see of a result not held: all of it where results are held (it is under the hold
        budget), else the turn's `max_result_chars`."""
        server = c.spec.server if c.spec is not None else None
        if self.opts.held is not None and self.opts.hold.budget(server) > 0:
            return None
        return self.opts.max_result_chars

    def _add_tool_message(self, c: _Call) -> None:
        fin = c.finished
        result: ToolResult
        if fin is not None and fin.result is not None:
            result = fin.result
            content = c.summary if c.summary is not None else bound_text(result.text, self._limit(c))
        else:
            text = fin.error if fin is not None and fin.error else "cancelled"
            result = ToolResult.error(text, duration_ms=fin.duration_ms if fin else 0.0)
            content = text
        self.add(Message.tool(c.call.id, content, name=c.call.name, is_error=result.is_error, images=result.images),
                 result)


async def _cancel(tasks: Mapping[asyncio.Task[Any], _Call], *, wait: bool = True) -> None:
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


def _unknown_tool(name: str, offered: Mapping[str, ToolSpec]) -> str:
    names = sorted(offered)
    listed = ", ".join(names[:30]) + (", ..." if len(names) > 30 else "")
    if SEARCH_TOOL in offered:  # the tool may exist but is not loaded: the search loads it
        return (f"UnknownToolError: no tool named {name!r} is loaded; find and load tools with {SEARCH_TOOL} "
                f"(loaded now: {listed})")
    return f"UnknownToolError: no tool named {name!r} is available" + (
        f"; available tools: {listed}" if names else "; no tools are available in this turn"
    )


def bound_text(text: str, limit: int | None) -> str:
    """What the model sees of a tool result: at most `limit` characters (None or 0: all), saying so."""
    if limit is None or limit <= 0 or len(text) <= limit:
        return text
    return (
        f"{text[:limit]}\n\n[truncated: the tool returned {len(text):,} characters; only the first "
        f"{limit:,} are shown. The full result is recorded in the history (tool_calls.result_text).]"
    )
