"""The notebook's answers to MCP servers: forms, links and sampling approval asked in the cell; sampling by its model.

`NotebookAnswers(port, runner, router, models).handlers()` builds the `ClientHandlers` the hub is given.
A server asks while a cell
waits on it (a `%mcp call`, a `%%synapse` turn); the SDK runs the callback in the connection's task,
which was started by an earlier cell, so cards and notes are shown in the cell the kernel is running now
(`KernelPort.show`), or they would land in the connecting cell.
In a blocking cell every question (a form's confirmation and each field, a link, a sampling approval) is
asked in the input box through `KernelPort.ask`, which reads it in a worker thread so the loop runs on:
the server may complete a link's flow (`notifications/elicitation/complete`) or cancel its request first
(the card then asks to press Enter in the box, which Jupyter cannot withdraw), and an interrupt of the
cell ends the question (cancelled).
Where no cell waits on stdin (a `--background` run, a call from the inspector) a form, a URL or a sampling
approval is a widget in the cell (widgets/elicit_form.py), which the server may also close itself (a URL
flow it completed, a request it cancelled). A widget asked by a tool call of a turn shown now (`follow`) goes
in that call's place: the turn's output is cut there (TurnDisplay.cut), so the card stays put and the tool's
line and the answer go on below it. Where nobody can answer (no stdin: nbclient, papermill, a
frontend without input; for widgets, a cell run by a frontend that does not take input, which is how
nbclient and papermill run cells) a form or URL is declined and sampling refused, with a note in the cell.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import datetime as _dt
import functools
import json
import logging
import time
import uuid
import weakref
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError, SynapseError
from ...events import LlmCallFinished, ServerEvent, utcnow
from ...mcp_client.elicitation import (
    ElicitationAnswer,
    ElicitationError,
    ElicitationField,
    ElicitationForm,
    UrlElicitation,
)
from ...mcp_client.handlers import ClientHandlers, Withdrawal
from ...mcp_client.sampling import SamplingReply, SamplingRequest
from ...protocols import Completion, Provider
from ...types import Usage
from ..kernel.port import NobodyCanAnswer
from . import cards
from .formats import format_problem

if TYPE_CHECKING:
    from ...pricing import Price
    from ..kernel.port import KernelPort
    from ..kernel.runner import Runner
    from ..models import Models
    from ..recording.router import EventRouter
    from ..turns.display import TurnDisplay

__all__ = ["NotebookAnswers"]

logger = logging.getLogger("synapse_nb.notebook")

_TRIES = 3
LONG_FORM = 5  # a form with more fields than this may be answered with one JSON object
_NO_STDIN = "no one can answer here (no stdin: a frontend without input, or a background run)"
_NO_FRONTEND = "no one can answer here (the cell was run by a frontend without input, e.g. nbclient or papermill)"
_URL_PROMPT = "press Enter when done, n to decline, c to cancel: "
_OUTCOMES = {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}


@dataclasses.dataclass(eq=False)
class _InBox:
    """A form or link asked through the input box; `why` is set when the server closed it first."""

    request: ElicitationForm | UrlElicitation
    why: Withdrawal | None = None


def _url_answer(reply: str | None, request: UrlElicitation) -> ElicitationAnswer:
    """What a line typed at the link's prompt means: Enter (or anything else) is done, n declines, c cancels;
    None (end of input, an interrupt) cancels."""
    reply = None if reply is None else reply.strip().lower()
    if reply is None or reply in ("c", "cancel"):
        return ElicitationAnswer.cancel()
    if reply in ("n", "no", "d", "decline"):
        return ElicitationAnswer.decline()
    return request.consent()


class NotebookAnswers:
    """Answers one kernel's servers through the running cell: cards above the input box, then the decision."""

    def __init__(self, port: KernelPort, runner: Runner, router: EventRouter, models: Models) -> None:
        """The parts it uses: the kernel port (cards, questions), the runner (is a cell waiting?), the event
        router (record, tell open panels, the tool call running on a server) and the models (sampling)."""
        self.port = port
        self.runner = runner
        self.router = router
        self.models = models
        self.updates: list[tuple[str, str]] = []  # (server, uri) of resource updates, oldest first
        self.asking: list[Any] = []  # the ElicitationWidgets waiting for an answer now
        self.in_box: list[_InBox] = []  # the links waiting on the input box of a blocking cell now
        # the turns shown now, each with the context of the cell that shows it (see `follow`)
        self.turns: weakref.WeakKeyDictionary[TurnDisplay, contextvars.Context] = weakref.WeakKeyDictionary()

    def follow(self, display: TurnDisplay) -> None:
        """A turn's display, called in its cell: a widget question its tool calls ask is shown in the call's
        place (see `_place`), published as part of that cell (the question arrives in the connection's task,
        which belongs to the cell that connected)."""
        self.turns[display] = contextvars.copy_context()

    def handlers(self) -> ClientHandlers:
        """The hub's handlers for this kernel: stdin questions, the kernel's model, updates shown and recorded."""
        return ClientHandlers(elicit=self.elicit, sample=self.sample, approve_sampling=self.approve_sampling,
                              on_resource_updated=self.resource_updated, on_withdrawn=self.withdrawn)

    # -- elicitation

    async def elicit(self, request: ElicitationForm | UrlElicitation) -> ElicitationAnswer:
        if self.port.live and not self.runner.foreground:
            if not self.port.takes_input():
                what = "link" if isinstance(request, UrlElicitation) else "form"
                self._note(what, request.server, "declined", _NO_FRONTEND + "; the server was told you declined")
                return ElicitationAnswer.decline()
            return await self._by_widget(request)
        return await self._by_stdin(request)

    def withdrawn(self, request: ElicitationForm | UrlElicitation, why: Withdrawal) -> None:
        """The server closed a question still open (completed its URL flow, or cancelled the request):
        its widget says so and takes no more answers; a form or link asked through stdin stops waiting
        for the box (the hub then cancels `elicit`) and its card says why."""
        for widget in list(self.asking):
            if widget.request is request:
                widget.withdraw(why)
        for question in self.in_box:
            if question.request is request:
                question.why = why

    async def _by_stdin(self, request: ElicitationForm | UrlElicitation) -> ElicitationAnswer:
        """A form or link in a blocking cell: the card, then the input box (`KernelPort.ask`, which keeps the
        loop running, so the server's completion or cancellation can end the wait). Ends when the user
        answers, the server completes or cancels (this task is cancelled), or the command the cell waited on
        ends (an interrupt: the call was cancelled, nobody waits for the answer)."""
        what = "link" if isinstance(request, UrlElicitation) else "form"
        card_id = uuid.uuid4().hex
        self.port.show(cards.url_card(request) if isinstance(request, UrlElicitation) else cards.form_card(request),
                       card_id, False)
        question = _InBox(request)
        self.in_box.append(question)
        runner = self.runner
        waited = runner.foreground  # the cell that waits now; it may stop waiting (interrupted)
        outcome, ok, detail = "cancelled", False, ""
        try:
            try:
                answer = await (self._url(request) if isinstance(request, UrlElicitation) else self._form(request))
            except NobodyCanAnswer:
                outcome, detail = "declined", _NO_STDIN + "; the server was told you declined"
                return ElicitationAnswer.decline()
            outcome, ok = _OUTCOMES[answer.action], answer.action == "accept"
            if answer.action == "cancel" and waited and not runner.foreground:
                detail = "the cell stopped waiting for it (interrupted)"
            elif isinstance(request, ElicitationForm):
                detail = ", ".join(f"{k}={v}" for k, v in (answer.content or {}).items())
            return answer
        except asyncio.CancelledError:
            if waited and not runner.foreground:  # interrupted: the server may withdraw it in turn
                detail = "the cell stopped waiting for it (interrupted)"
            elif question.why is not None:
                outcome, ok = f"{question.why} by the server", question.why == "completed"
                detail = "the input box is no longer needed: press Enter in it"
            raise
        finally:
            self.in_box.remove(question)
            self.port.show(cards.answered(what, request.server, outcome, ok=ok, detail=detail), card_id, True)

    async def _by_widget(self, request: ElicitationForm | UrlElicitation | SamplingRequest,
                         model: str = "") -> ElicitationAnswer:
        """No cell waits on stdin (a background run, a call from the inspector): a widget form, link or
        sampling approval, shown in the cell the kernel runs now, answers; the call waits for it (or is
        cancelled)."""
        from ..widgets.elicit_form import ElicitationWidget

        widget = ElicitationWidget(request, asyncio.get_running_loop(), model=model or "the kernel's model")
        self.asking.append(widget)
        # open inspectors show it too (not recorded: the hub records the answer as an `elicitation` event)
        self.router.tell_panels(ServerEvent(server=request.server, event="elicitation_asked"))
        try:
            bundle: dict[str, Any] = widget._repr_mimebundle_()
            self._place(request.server, bundle)
            return await widget.wait()
        finally:
            self.asking.remove(widget)
            self.router.tell_panels(ServerEvent(server=request.server, event="elicitation_answered"))

    def _place(self, server: str, bundle: dict[str, Any]) -> None:
        """Show a question's widget where the tool call that asked it is (`EventRouter.asking_call`): a turn
        shown now with that call is cut at the call's line (the card goes above it, the call and the answer go
        on below), so nothing written later lands above the card. Elsewhere (the inspector's Call) in the
        current cell."""
        running = self.router.asking_call(server)
        if running is not None:
            for display, cell in list(self.turns.items()):
                call = display.view.call(running.call_id)
                if call is None or display.output.finished or display.view.status != "running":
                    continue
                show = functools.partial(display.output.publisher, bundle, None, False)
                cell.copy().run(display.cut, display.view.parts.index(call), show)
                return
        self.port.show(bundle)

    async def _url(self, request: UrlElicitation) -> ElicitationAnswer:
        return _url_answer(await self.port.ask(_URL_PROMPT), request)

    async def _form(self, form: ElicitationForm) -> ElicitationAnswer:
        long = len(form.fields) > LONG_FORM  # one JSON answer is offered instead of a prompt per field
        choices = "a(ccept)/j(son)/d(ecline)/c(ancel)" if long else "a(ccept)/d(ecline)/c(ancel)"
        question = f"fill in the form? [{choices}]: "
        for _ in range(_TRIES):
            reply = await self._ask(question)
            if reply is None or reply in ("c", "cancel"):
                return ElicitationAnswer.cancel()
            if reply in ("d", "decline", "n", "no"):
                return ElicitationAnswer.decline()
            if long and reply in ("j", "json"):
                return await self._json_answer(form)
            if reply in ("a", "accept", "y", "yes", ""):
                break
            question = f"please answer {choices.replace('/', ', ')}: "
        else:
            return ElicitationAnswer.cancel()
        values: dict[str, Any] = {}
        for f in form.fields:
            question = cards.field_prompt(f)
            for _ in range(_TRIES):
                raw = await self._ask(question, lower=False)
                if raw is None:
                    return ElicitationAnswer.cancel()
                if raw == "" and (f.has_default or not f.required):
                    break
                try:
                    values[f.name] = _checked(f, f.convert(raw) if raw else None)
                    if values[f.name] is None:
                        raise ElicitationError(f"field {f.name!r} is required")
                    break
                except ElicitationError as exc:
                    values.pop(f.name, None)
                    question = f"{exc}; {cards.field_prompt(f)}"
            else:
                return ElicitationAnswer.cancel()
        return form.answer(values)

    async def _json_answer(self, form: ElicitationForm) -> ElicitationAnswer:
        """A long form answered in one line: a JSON object of the fields' keys (omitted ones take defaults)."""
        keys = ", ".join(f.name + ("" if f.required else "?") for f in form.fields)
        question = f"one JSON object with {keys}: "
        for _ in range(_TRIES):
            raw = await self._ask(question, lower=False)
            if raw is None:
                return ElicitationAnswer.cancel()
            try:
                values = json.loads(raw)
                if not isinstance(values, dict):
                    raise ElicitationError("the answer is not a JSON object ({...})")
                answer = form.answer(values)
                by_name = {f.name: f for f in form.fields}
                for name, value in (answer.content or {}).items():
                    _checked(by_name[name], value)
                return answer
            except json.JSONDecodeError as exc:
                question = f"not JSON ({exc.msg} at character {exc.pos + 1}); {question.split('; ')[-1]}"
            except ElicitationError as exc:
                question = f"{exc}; {question.split('; ')[-1]}"
        return ElicitationAnswer.cancel()

    # -- sampling

    async def approve_sampling(self, request: SamplingRequest) -> bool:
        if self.port.live and not self.runner.foreground:
            if not self.port.takes_input():
                self._note("sampling request", request.server, "refused",
                           _NO_FRONTEND + '; set "sampling": "auto" for this server to allow it')
                return False
            return (await self._by_widget(request, self._model_name())).action == "accept"
        return await self._approve(request)

    async def _approve(self, request: SamplingRequest) -> bool:
        model = self._model_name()
        card_id = uuid.uuid4().hex
        self.port.show(cards.sampling_card(request, model), card_id, False)
        approved = False
        outcome, detail = "refused", ""
        try:
            reply = await self._ask(f"let {request.server} use {model}? [y/n]: ")
        except NobodyCanAnswer:
            detail = _NO_STDIN + '; set "sampling": "auto" for this server to allow it'
            return False
        else:
            approved = reply in ("y", "yes")  # None (end of input, interrupt) refuses
            outcome = f"approved for {model}" if approved else "refused"
            return approved
        finally:
            self.port.show(cards.answered("sampling request", request.server, outcome, ok=approved, detail=detail),
                           card_id, True)

    async def sample(self, request: SamplingRequest) -> SamplingReply:
        """The kernel's current model answers (the server's model hints are advisory and not followed).

        The call is recorded as an LLM call with origin `sampling:SERVER`, in the session of the tool
        call that asked (and tied to it) when it is known (`EventRouter.asking_call`).
        """
        from IPython.core.error import UsageError

        try:
            provider = self.models.provider(None)
        except UsageError as exc:
            raise SynapseError(str(exc)) from None
        completion: Completion | None = None
        started_at, t0 = utcnow(), time.perf_counter()
        ttft: float | None = None
        error: str | None = "cancelled"
        try:
            async for chunk in provider.stream(list(request.messages), system=request.system_prompt):
                if ttft is None:
                    ttft = (time.perf_counter() - t0) * 1000
                if isinstance(chunk, Completion):
                    completion = chunk
            if completion is None:
                raise SynapseError(f"the model {provider.name}:{provider.model} ended without an answer")
            error = None
        except Exception as exc:
            error = str(exc) or type(exc).__name__
            raise
        finally:
            self._record_sampling(request.server, provider, started_at, t0, ttft, completion, error)
        text = completion.message.content
        model = f"{provider.name}:{provider.model}"
        self.port.show(cards.answered("sampling request", request.server, f"answered by {model}", ok=True,
                                      detail=text[:2000]))
        stop = "maxTokens" if completion.stop_reason in ("max_tokens", "length") else "endTurn"
        return SamplingReply(text=text, model=model, stop_reason=stop)

    def _record_sampling(self, server: str, provider: Provider, started_at: _dt.datetime, t0: float,
                         ttft: float | None, completion: Completion | None, error: str | None) -> None:
        running = self.router.asking_call(server)
        if running is not None and not running.recorded:
            return  # the tool call that caused it belongs to a turn run with --no-history
        session_id, tool_call_id = (running.session_id, running.call_id) if running is not None else ("", None)
        from ...agent.spend import costed

        self.router.record(costed(LlmCallFinished(
            session_id=session_id, llm_call_id=uuid.uuid4().hex, provider=provider.name, model=provider.model,
            started_at=started_at, duration_ms=(time.perf_counter() - t0) * 1000,
            ttft_ms=completion.ttft_ms if completion is not None and completion.ttft_ms is not None else ttft,
            usage=completion.usage if completion is not None else Usage(),
            stop_reason=completion.stop_reason if completion is not None else None, error=error,
            origin=f"sampling:{server}", tool_call_id=tool_call_id or None,
        ), _price(provider)))

    def _model_name(self) -> str:
        try:
            provider = self.models.provider(None)
        except Exception:  # the card still shows; the sampling itself reports the problem
            return self.models.model or "the kernel's model"
        return f"{provider.name}:{provider.model}"

    # -- notifications

    def resource_updated(self, server: str, uri: str) -> None:
        """A subscribed resource changed: kept, recorded as a server event, and noted in the running cell."""
        self.updates.append((server, uri))
        del self.updates[:-100]
        self.router.record(ServerEvent(server=server, event="resource_updated", detail={"uri": uri}))
        if self.port.live:
            self.port.show({"text/plain": f"⟳ {server}: resource updated {uri}"})

    # -- plumbing

    def _note(self, what: str, server: str, outcome: str, detail: str) -> None:
        """A question answered for the user where no one can (a declined card, in the running cell)."""
        self.port.show(cards.answered(what, server, outcome, ok=False, detail=detail))

    async def _ask(self, question: str, *, lower: bool = True) -> str | None:
        """One line typed by the user, stripped (None: end of input, or the cell stopped waiting: the
        question is cancelled); raises NobodyCanAnswer where no one can answer."""
        reply = await self.port.ask(question)
        if reply is None:
            return None
        reply = reply.strip()
        return reply.lower() if lower else reply


def _checked(f: ElicitationField, value: Any) -> Any:
    """`value` of field `f`, once it has the field's format (ElicitationError saying what is wrong if not)."""
    if isinstance(value, str) and value:
        problem = format_problem(f.format, value)
        if problem is not None:
            raise ElicitationError(f"field {f.name!r} {problem}")
    return value


def _price(provider: Provider) -> Price | None:
    """A sampling call's price (None: unknown, when the model has no price or the prices file is bad)."""
    from ...pricing import price_for

    try:
        return price_for(provider.name, provider.model)
    except ConfigError:
        return None
