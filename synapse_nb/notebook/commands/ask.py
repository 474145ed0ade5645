"""`%%synapse`: one agent turn in a cell, blocking (stdin approvals) or in the background (widget controls).

Both kinds of run check the cell into a TurnPlan (`plan_turn`, the provider resolved once), build the
turn's display and TurnOptions (`_Turn`), and run it through the one function `run_turn`; only what is
around it differs: who asks approval (stdin or the RunControls' buttons) and what the cell gets back (the
result, or a handle at once).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from IPython.core.error import UsageError

from ...errors import SynapseError
from ...events import ServerEvent
from ...task_state import TASK_ORIGIN, TaskOrigin
from ...types import Message, ToolSpec
from ..apps.turn_views import AppTurnViews
from ..output.live import LiveOutput, Publisher
from ..questions.approval import ButtonsApproval, StdinApproval
from ..settings import Settings
from ..turns.budget import check_prices
from ..turns.display import Format, TurnDisplay, TurnView, render
from ..turns.holding import hold_policy, results_tools
from ..turns.interpolate import interpolate
from ..turns.result import BackgroundRun, SynapseResult
from ..turns.skills import skill_tools
from ..turns.tool_search import tool_search
from .args import AskOptions

if TYPE_CHECKING:
    from ...agent.orchestrator import Agent
    from ...agent.result import TurnResult
    from ...agent.turn import TurnOptions
    from ...protocols import ApprovalCallback, EventSink, Provider
    from ...telemetry.spans import SpanSink
    from ..kernel.port import KernelPort
    from .turn_parts import TurnParts

__all__ = [
    "INTERRUPTED", "CellInterrupted", "TurnError", "TurnPlan", "ask_async", "background", "plan_turn", "run_turn",
    "view_turn",
]

KERNEL_NOTE = "the agent could see the kernel (kernel__* tools: variables, DataFrames, cells, run_python)"

FORMAT_HINTS = {
    "json": "Answer with one JSON value only: no prose and no code fence.",
    "code": "Answer with one fenced code block holding the complete code, then at most two sentences.",
}


INTERRUPTED = "the turn was cancelled; servers stay connected and the transcript so far is kept (see _synapse)"


class CellInterrupted(KeyboardInterrupt):
    """The user interrupted a %%synapse cell or an %mcp command: its work was cancelled (and recorded as
    cancelled), servers stay connected. Shown as one line, not a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31mKeyboardInterrupt\x1b[0m: {self}"]


class TurnError(Exception):
    """A blocking %%synapse turn failed (the provider refused, was unreachable, a replay missed, too many
    iterations): the cell ends with this error so that Run All stops there. Its text is the error as what
    it is (`AuthenticationError: ...`), shown once, as one line under the transcript, never as a
    `UsageError: ...` repeat of a line the display already showed."""

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31m{self}\x1b[0m"]


@dataclass(frozen=True)
class TurnPlan:
    """A %%synapse cell checked and resolved, before anything runs or is recorded."""

    prompt: str
    session: str
    provider: Provider  # resolved once, here: the turn runs with this one
    model_id: str
    model_note: str | None
    system: str | None
    tool_patterns: tuple[str, ...] | None
    max_iterations: int
    max_result_chars: int
    approve: str | None
    format: Format
    history: bool
    kernel: bool = False  # the kernel__* tools are offered
    budget_usd: float | None = None  # --budget (agent/spend.py)
    session_budget_usd: float | None = None  # SynapseMagics.session_budget (None: no limit)
    max_tokens: int | None = None  # --max-tokens
    price_note: str | None = None  # why costs will show as unknown (a bad prices file)
    hold: Any = None  # the HoldPolicy of this cell (notebook/turns/holding.py); None: the agent's default
    tool_budget: int = 0  # tools offered up front; more, and the model searches them (0: every tool)
    cell_tool_budget: int | None = None  # --tool-budget: wins over the servers' own choices
    search_by_meaning: bool = True  # the tool search ranks by meaning too (SynapseMagics.search_by_meaning)
    resumed: tuple[Message, ...] = ()  # --resume: the tool messages the waiting turn goes on with (no prompt)


def plan_turn(
    parts: TurnParts, settings: Settings, options: AskOptions, body: str, resumed: tuple[Message, ...] = (),
) -> TurnPlan:
    """Validate a cell (UsageError on any bad input) and resolve its options against the settings; `resumed`: the
    tool messages a --resume turn goes on with instead of a prompt."""
    if options.resume and body.strip():
        raise UsageError("%%synapse: --resume continues the waiting turn with its tool results and takes no prompt; "
                         "empty the cell body, or ask in a new cell after it")
    if not body.strip() and not options.resume:
        raise UsageError("%%synapse: missing prompt; write the question in the cell body below the %%synapse line")
    namespace: Mapping[str, Any] = getattr(parts.port.shell, "user_ns", None) or {}
    prompt = interpolate(body.strip(), namespace)
    sessions = parts.sessions
    if options.session is None and sessions.current not in sessions:
        sessions.current = sessions.own_name(sessions.current)
    session = (options.session or sessions.current).strip()
    tape = parts.deck.tape
    replaying = tape is not None and tape.mode == "replay"  # a re-run asks what the cassette holds
    if options.session is not None and not replaying and not (session in sessions and sessions[session].messages):
        # the history's NAME, not a second one
        session = sessions.resume_recorded(session, lambda: parts.models.provider(None)) or session
    running = sessions.background.get(session)
    if running is not None and not running.done():
        raise UsageError(
            f"%%synapse: session {session!r} is busy with a background run; await it, .cancel() it, "
            "or use another --session"
        )
    provider = parts.models.provider(options.model or settings.model or None)
    model_id = f"{provider.name}:{provider.model}"
    registry = parts.registry()
    parts.kernel.register_notebook_tools(registry)
    kernel = (options.kernel or settings.kernel_tools) and options.tools != () and parts.kernel is not None
    patterns = options.tools
    if patterns:
        available = [s.name for s in registry.specs()]
        for pattern in patterns:
            if pattern.startswith("kernel__") and not kernel:
                raise UsageError(f"%%synapse: --tools {pattern!r} names kernel tools, which are off; add --kernel")
            if not registry.specs([pattern]):
                known = ", ".join(available[:12]) + (", ..." if len(available) > 12 else "")
                hint = f"tools now: {known}" if available else "no tools are connected (%mcp connect ...)"
                raise UsageError(f"%%synapse: --tools {pattern!r} matches no tool; {hint}")
    if kernel:
        # The group is opt-in in the registry: a `kernel__` pattern turns it on; one given by the user
        # selects within it, else all of it joins the other tools.
        if patterns is None:
            patterns = ("*", "kernel__*")
        elif not any(p.startswith("kernel__") for p in patterns):
            patterns = (*patterns, "kernel__*")
    system = options.system if options.system is not None else (settings.system or None)
    fmt = cast(Format, options.format or settings.format)  # both validated: a FORMATS value
    if fmt in FORMAT_HINTS:
        system = f"{system}\n\n{FORMAT_HINTS[fmt]}" if system else FORMAT_HINTS[fmt]
    note = _model_note(model_id)
    if tape is not None:
        note = f"{note}, {tape.note}" if note else tape.note
    session_budget = settings.session_budget or None
    # replayed calls cost 0: nothing to price
    price_note = None if replaying else check_prices(
        provider.name, provider.model, budget=options.budget, session_budget=session_budget,
    )
    return TurnPlan(
        prompt=prompt, session=session, provider=provider, model_id=model_id, model_note=note, system=system,
        tool_patterns=patterns, max_iterations=options.max_iterations or settings.max_iterations,
        max_result_chars=settings.max_result_chars,
        approve=options.approve or settings.approve or None, format=fmt, history=options.history and settings.history,
        kernel=kernel, budget_usd=options.budget, session_budget_usd=session_budget, max_tokens=options.max_tokens,
        price_note=price_note,
        hold=hold_policy(parts.hub(), settings.hold_over, options.hold_over),
        tool_budget=settings.tool_budget, cell_tool_budget=options.tool_budget,
        search_by_meaning=settings.search_by_meaning,
        resumed=resumed,
    )


def _model_note(model_id: str) -> str | None:
    from ...providers.registry import is_offline

    return "offline scripted model" if is_offline(model_id) else None


def background(
    parts: TurnParts, settings: Settings, options: AskOptions, body: str,
    *, keep: Callable[[SynapseResult | BackgroundRun], None] | None = None,
) -> BackgroundRun:
    """`%%synapse --background`: start the turn as a task on the loop and return its handle at once.

    Approval is asked with buttons in a card right above the tool's line, where a server's form goes too
    (ButtonsApproval); the RunControls hold the status line and Stop (denied, with a note, where no widget can
    show)."""
    from ..widgets import RunControls

    turn = _Turn(parts, settings, options, body)
    handle: BackgroundRun | None = None

    def stop() -> None:
        if handle is not None:
            handle.cancel()

    controls = RunControls(on_stop=stop, inline_approval=False)
    approval: ApprovalCallback = (ButtonsApproval(controls, turn.display) if parts.port.live
                                  else _NoButtons(turn.display))
    told = turn.options(approval, controls.on_event)
    turn.display.view.footer_elsewhere = parts.port.live  # the controls' status line is the run's one footer
    turn.display.start()
    if parts.port.live:
        controls.show()
    task = parts.runner.spawn(_background_turn(turn, told, controls), name=f"synapse {turn.plan.session}")
    handle = BackgroundRun(task, parts.runner, session=turn.plan.session, prompt=turn.plan.prompt, controls=controls)
    parts.sessions.background[turn.plan.session] = handle
    if keep is not None:
        keep(handle)
    return handle


async def _background_turn(turn: _Turn, told: TurnOptions, controls: Any) -> SynapseResult:
    result, interrupted = await run_turn(turn, told, interrupts=(asyncio.CancelledError,))
    if interrupted:
        _uncancel()  # the run ends as "cancelled", and awaiting the handle gives that result
    controls.finish(result.status, turn.display.view.footer)
    return result


class _Turn:
    """A cell checked, its session's agent found, its display and sinks built: what both kinds of run start
    from. `options(ask, ...)` gives the TurnOptions the agent is told, once the kind of run says who asks."""

    def __init__(
        self, parts: TurnParts, settings: Settings, options: AskOptions, body: str,
        output: LiveOutput | None = None, resumed: tuple[Message, ...] = (),
    ) -> None:
        self.plan = plan = plan_turn(parts, settings, options, body, resumed)
        self.agent = parts.sessions.agent(plan.session, plan.provider)
        unrecorded = parts.notice.take() if plan.history else None
        view = TurnView(
            model=plan.model_id, model_note=plan.model_note, session=plan.session, format=plan.format,
            background=options.background, error_raised=not options.background,
            user_wait=None if options.background else (lambda: parts.port.asking_since),
        )
        if output is None:
            output = LiveOutput(live=parts.port.live, keep=options.background, publish=parts.port.publish)
        self.display = TurnDisplay(view, output, interval=settings.stream_interval)
        answers = parts.answers()
        if answers is not None:  # a server's widget question goes in its tool call's place
            answers.follow(self.display)
        if unrecorded:
            view.notes.append(unrecorded)
        if plan.kernel:
            view.notes.append(KERNEL_NOTE)
        if plan.price_note:
            view.notes.append(plan.price_note)
        self.router = parts.router
        self.sinks: list[EventSink] = [self.display, parts.router.history_sink(plan.history)]
        tape = parts.deck.tape
        if tape is not None and tape.writer is not None:
            self.sinks.append(tape.on_event)  # recording: tool results join the cassette
        self.tracing: SpanSink | None = parts.tracer.sink()  # OpenTelemetry spans of the turn, when tracing is on
        if self.tracing is not None:
            self.sinks.append(self.tracing)
        self._approval = parts.policy() if plan.approve is None else _cell_policy(plan.approve)
        self._tool_answer = tape.tool_answer() if tape is not None else None
        self._held = parts.held()  # results held whole by name; the model gets summaries and results__sql
        self._hub = parts.hub()
        self._skills = skill_tools(self._hub)  # servers' skills, loaded on demand
        self._store = parts.store() if plan.history else None  # what worked before: the search's tie-breaker
        # MCP Apps: UI tools' Views show in the tool block; a View's context joins this turn's system prompt
        self.views = AppTurnViews(parts.apps, self._hub, self.display,
                                  session=plan.session, policy=self._approval, model=plan.model_id)
        self.sinks.append(self.views)
        self._view_tools = parts.apps.tools  # the tools the Views registered, offered beside the servers'
        self.view_context = given = parts.apps.contexts.take(plan.session)
        if given is not None:  # which View told the model what: in the footer, and in the history with the View
            view.notes.append(given.note)
            if plan.history:
                parts.router.record(ServerEvent(server=given.server, event="app_context", detail={
                    "view": given.view, "tool": given.tool, "session": plan.session,
                    "session_id": self.agent.session_id, "text": given.text}))

    def options(self, ask: ApprovalCallback | None, *more_sinks: EventSink) -> TurnOptions:
        """What the agent is told for this turn; `ask` asks approval, `more_sinks` see its events too."""
        from ...agent.turn import TurnOptions

        plan = self.plan
        context = self.view_context.prompt if self.view_context is not None else None
        system = "\n\n".join(p for p in (plan.system, context) if p) or None
        return TurnOptions(
            plan.provider, system=system, tool_patterns=plan.tool_patterns, max_iterations=plan.max_iterations,
            max_result_chars=plan.max_result_chars, approval=self._approval,
            ask=_Asking(ask, self.display) if ask is not None else None,
            sinks=(*self.sinks, *more_sinks),
            tool_scope=self.router.tool_scope(self.tracing.tool_scope if self.tracing is not None else None),
            budget=_budget(plan), tool_answer=self._tool_answer,
            held=self._held, hold=plan.hold,
            agent_tools=(*results_tools(self._held), self._view_tools, *self._skills),
            tool_search=tool_search(self._hub, self._store, plan.tool_budget, plan.cell_tool_budget,
                                    meaning=plan.search_by_meaning),
        )


class _Asking:
    """An approval callback that tells the turn's display while the user is asked: the tool's line and the
    activity line say "waiting for your approval" (with the time waited) until the answer."""

    def __init__(self, ask: ApprovalCallback, display: TurnDisplay) -> None:
        self.ask = ask
        self.display = display

    async def __call__(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> str:
        self.display.view.ask_approval(spec.name)
        self.display.refresh()
        try:
            return await self.ask(spec, arguments)
        finally:
            self.display.view.approval_answered()
            if not self.display.output.finished:
                self.display.refresh()


FOREGROUND_INTERRUPTS: tuple[type[BaseException], ...] = (asyncio.CancelledError, KeyboardInterrupt)
"""What ends a blocking turn as interrupted: the runner cancels the command when the user interrupts, and a
second interrupt (synchronous path) may land in code the first one's cancellation runs. A background run
takes only cancellation: a Ctrl-C meant for the cell running meanwhile is not its to swallow."""


async def run_turn(
    turn: _Turn, told: TurnOptions, *, interrupts: tuple[type[BaseException], ...] = FOREGROUND_INTERRUPTS,
) -> tuple[SynapseResult, bool]:
    """The one path of a %%synapse turn, blocking or in the background: the agent answers the prompt as
    `told`, then its result (the TurnResult `Agent.ask` returned) is wrapped for the cell and the display
    finished.

    Returns (result, interrupted): an interrupt (one of `interrupts`) ends the turn recorded as cancelled and
    is not raised, the caller decides what the cell shows. A turn that could not start (SynapseError, e.g.
    the session is still busy) shows as failed and raises."""
    display = turn.display
    interrupted = False
    agent = turn.agent
    try:
        outcome: TurnResult | None = await agent.ask(turn.plan.resumed or turn.plan.prompt, told)
    except interrupts:
        interrupted, outcome = True, agent.last_result  # the cancelled turn's result
    except SynapseError as exc:
        display.view.status = "failed"
        display.view.error = f"{type(exc).__name__}: {exc}"
        display.finish()
        raise
    await turn.views.settle()  # a UI tool's View lands in its block before the display ends
    result = build_result(outcome, turn.plan, agent)
    display.finish()
    return result, interrupted


async def ask_async(
    parts: TurnParts, settings: Settings, options: AskOptions, body: str,
    *, keep: Callable[[SynapseResult | BackgroundRun], None] | None = None,
) -> SynapseResult | BackgroundRun:
    """Run one %%synapse cell: the result object (blocking) or the handle of a background run.

    `keep` receives the result (or handle) as soon as there is one, also when the cell then raises.

    Blocking: when the user interrupts (this coroutine is cancelled) the turn is recorded as cancelled,
    the result kept, and the coroutine ends cancelled; TurnError when the turn failed (provider error,
    max iterations; the transcript so far is kept). A turn a budget stopped returns its result (status
    budget_exceeded); the display says which budget in one line.
    """
    origin = TASK_ORIGIN.set(TaskOrigin(cell=parts.port.cell_label()))  # an MCP task a tool call becomes: this cell's
    try:
        return await _ask(parts, settings, options, body, keep=keep)
    finally:
        TASK_ORIGIN.reset(origin)


async def _ask(
    parts: TurnParts, settings: Settings, options: AskOptions, body: str,
    *, keep: Callable[[SynapseResult | BackgroundRun], None] | None,
) -> SynapseResult | BackgroundRun:
    if options.background:
        return background(parts, settings, options, body, keep=keep)
    resumed: tuple[Message, ...] = ()
    if options.resume:  # the session and the results it waits on, found (and waited for) before the turn
        from .turn_resume import resumed_turn

        if body.strip():
            plan_turn(parts, settings, options, body)  # the one line about the prompt, before any waiting
        name, messages = await resumed_turn(parts, settings, options.session)
        options, resumed = dataclasses.replace(options, session=name), tuple(messages)
    output = _placeholder(parts, settings, options)
    try:
        turn = _Turn(parts, settings, options, body, output, resumed)
    except BaseException:
        output.clear()  # a bad cell (UsageError) leaves no running line behind
        raise
    told = turn.options(StdinApproval(parts.port, turn.display))
    turn.display.start()
    try:
        result, interrupted = await run_turn(turn, told)
    except SynapseError as exc:  # the turn could not start (e.g. the session is still busy)
        raise TurnError(_one_line(f"{type(exc).__name__}: {exc}")) from None
    if keep is not None:
        keep(result)
    if interrupted or result.status == "cancelled":
        # Ends cancelled, never with a KeyboardInterrupt: one raised out of a task stops the event loop
        # itself. Whoever drives this (notebook/magics.py) shows the one line of INTERRUPTED.
        raise asyncio.CancelledError
    if result.status == "failed":
        raise TurnError(_one_line(result.error or "the turn failed"))
    if turn.plan.format == "code":
        _insert_code(parts.port, result)
    return result


def view_turn(
    parts: TurnParts, session: str, text: str, *, model: str | None = None, publish: Publisher,
    ask: ApprovalCallback,
) -> asyncio.Task[tuple[SynapseResult, bool]]:
    """An MCP Apps View's `ui/message`: a turn of the agent in `session` with the View's text as the prompt
    (taken literally: `{...}` is not interpolated) answered by `model` (None: the kernel's), shown through
    `publish` (under the View), approvals asked by `ask`; started as a task, recorded as any turn.
    UsageError when it cannot start (a busy session)."""
    body = text.replace("{", "{{").replace("}", "}}")
    output = LiveOutput(live=True, keep=True, publish=publish)
    turn = _Turn(parts, parts.settings(), AskOptions(session=session, model=model, background=True), body, output)
    told = turn.options(ask)
    turn.display.start()
    return parts.runner.spawn(run_turn(turn, told, interrupts=(asyncio.CancelledError,)), name=f"view {session}")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _placeholder(parts: TurnParts, settings: Settings, options: AskOptions) -> LiveOutput:
    """The cell's running line, shown before anything slow: resolving the provider (its first import of
    httpx), the tools, the history's session-name lookup. The turn's display then takes this output over."""
    output = LiveOutput(live=parts.port.live, publish=parts.port.publish)
    model = options.model or settings.model or ""  # not known yet (SYNAPSE_MODEL, a key, or scripted:demo)
    view = TurnView(model=model, session=options.session or parts.sessions.current,
                    format=cast(Format, options.format or settings.format))
    output.start(render(view))
    return output


def _insert_code(port: KernelPort, result: SynapseResult) -> None:
    """--format code: the answer's Python (see SynapseResult.code) goes into a new cell below, and the cell
    says so; an answer with only other languages (SQL, shell) inserts nothing and says what it found."""
    code = result.code
    if code is None:
        found = result.code_languages
        if found:
            languages = ", ".join(found)
            print(f"no Python code block in the answer (found: {languages}); no cell inserted (see _synapse.text)")
        else:
            print("no code block in the answer; no cell inserted")
        return
    if port.shell is not None:
        port.shell.set_next_input(code, replace=False)
        print("inserted a cell below with the answer's Python code")


def _uncancel() -> None:
    """The cancellation was handled (the turn ends as cancelled): the task may go on to report it."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


def _cell_policy(approve: str) -> Any:
    """--approve MODE: one mode for every tool of this cell; "always" answers still count within the cell."""
    from ...agent.approval import ApprovalPolicy

    return ApprovalPolicy(approve, tools={"*": approve}, destructive=approve)


def _budget(plan: TurnPlan) -> Any:
    from ...agent.spend import Budget

    budget = Budget(turn_usd=plan.budget_usd, session_usd=plan.session_budget_usd, max_tokens=plan.max_tokens)
    return None if budget.empty else budget


def build_result(outcome: TurnResult | None, plan: TurnPlan, agent: Agent) -> SynapseResult:
    """The cell's result: the agent's TurnResult of the turn with the notebook's views (session name, format).
    None: the turn was interrupted before it began, a cancelled turn with nothing in it."""
    if outcome is None:
        from ...agent.result import TurnRecord

        outcome = TurnRecord(agent.session_id, "", plan.model_id).result()
    return SynapseResult(outcome, session=plan.session, format=plan.format)


# ---------------------------------------------------------------------------------------------- background


class _NoButtons:
    """Approval for a background run where no widget can be shown (terminal IPython): denied, with a note."""

    def __init__(self, display: TurnDisplay) -> None:
        self.display = display

    async def __call__(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> str:
        self.display.note(f"{spec.name} needs approval, which a background run asks with buttons this frontend "
                          "cannot show, so it was denied; run the cell without --background")
        return "no"
