"""AppTurnViews: a `%%synapse` turn's EventSink that shows the View of each UI tool the model calls in the
turn's tool block, the answer going on below it (TurnDisplay.cut).

When the model streams a UI tool's arguments, the View opens as soon as the tool's name is known (the
block above it keeps following the call: TurnDisplay.cut's `reshow`), gets `tool_input_partial` as the
arguments grow (partial JSON read leniently by pydantic_core), then the call's whole `tool_input`, then
its result (or `tool_cancelled` when the call did not run). A call whose arguments were not streamed
opens its View once it has finished, with its input and result."""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_core import from_json

from ...errors import SynapseError
from ...events import Event, ToolCallArgumentsDelta, ToolCallFinished, ToolCallStarted, TurnCancelled, TurnFailed
from ...types import ToolSpec
from ..output.live import EMPTY
from ..turns.render import TURN_REST
from .ui import resource_uri, wire_result

if TYPE_CHECKING:
    from ...agent.approval import ApprovalPolicy
    from ...mcp_client.hub import McpHub
    from ..turns.display import TurnDisplay
    from .views import AppViews, OpenedView

__all__ = ["AppTurnViews"]

logger = logging.getLogger("synapse_nb.notebook")


@dataclass
class _Early:
    """A UI tool call whose View opened while the model streamed its arguments."""

    name: str
    streamed: str = ""
    call_id: str | None = None
    started: bool = False
    opened: OpenedView | None = None
    task: asyncio.Task[None] | None = None
    after: list[Any] = field(default_factory=list)  # what the View gets once open (input, result, cancel)
    display_id: str = field(default_factory=lambda: uuid.uuid4().hex)  # its live output while the turn runs


def partial_arguments(streamed: str) -> dict[str, Any] | None:
    """What the arguments streamed so far say (an unfinished string or number left out), or None while
    they are not yet an object."""
    try:
        value = from_json(streamed, allow_partial="trailing-strings")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class AppTurnViews:
    """Opens the View of every UI tool call of the turn; `settle()` (awaited before the turn's display
    finishes) waits for the Views still being opened, so each lands where its call is."""

    def __init__(
        self, apps: AppViews, hub: McpHub | None, display: TurnDisplay, *, session: str, policy: ApprovalPolicy,
        model: str,
    ) -> None:
        """`apps` opens the Views, `hub` (None: no server connected) knows the tools; `session`, `policy` and
        `model` are the turn's: the Views' calls and messages keep to them."""
        self.apps = apps
        self.hub = hub
        self.model = model
        self.display = display
        self.session = session
        self.policy = policy
        self.opened: list[Any] = []
        self._pending: list[asyncio.Task[None]] = []
        self._streaming: dict[int, _Early] = {}  # by the call's index in the model's reply
        self._early: list[_Early] = []  # opened early, waiting for their call to start and end

    def _spec(self, name: str) -> ToolSpec | None:
        if self.hub is None:
            return None
        try:
            return self.hub.tool(name)
        except SynapseError:
            return None

    def _ui_spec(self, name: str) -> ToolSpec | None:
        spec = self._spec(name)
        return spec if spec is not None and spec.server is not None and resource_uri(spec) is not None else None

    def __call__(self, event: Event) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if isinstance(event, ToolCallArgumentsDelta):
            self._delta(loop, event)
        elif isinstance(event, ToolCallStarted):
            self._started(event)
        elif isinstance(event, ToolCallFinished):
            self._finished(loop, event)
        elif isinstance(event, TurnFailed | TurnCancelled):
            for early in self._early:
                self._give(early, "tool_cancelled", "the turn ended before the call ran")

    def _delta(self, loop: asyncio.AbstractEventLoop, event: ToolCallArgumentsDelta) -> None:
        early = self._streaming.get(event.index)
        if early is None or early.started:
            if event.name is None:
                return
            spec = self._ui_spec(event.name)
            if spec is None:
                return
            early = _Early(event.name, call_id=event.call_id)
            self._streaming[event.index] = early
            self._early.append(early)
            index = len(self.display.view.parts)  # the call's streaming block is the last part by now
            early.task = loop.create_task(self._show_early(spec, early, index))
            self._pending.append(early.task)
        early.streamed += event.arguments_delta
        partial = partial_arguments(early.streamed)
        if partial is not None and early.opened is not None and partial != early.opened.view.tool_input_partial:
            early.opened.view.tool_input_partial = partial

    def _match(self, call_id: str, name: str) -> _Early | None:
        waiting = [e for e in self._early if not e.started]
        return next((e for e in waiting if e.call_id == call_id), None) or next(
            (e for e in waiting if e.name == name), None)

    def _started(self, event: ToolCallStarted) -> None:
        early = self._match(event.call.id, event.call.name)
        if early is None:
            return
        early.started = True
        early.call_id = event.call.id
        self._give(early, "tool_input", dict(event.call.arguments))

    def _finished(self, loop: asyncio.AbstractEventLoop, event: ToolCallFinished) -> None:
        early = next((e for e in self._early if e.started and e.call_id == event.call.id), None)
        if early is None:
            early = self._match(event.call.id, event.call.name)  # denied: it finished without starting
            if early is not None:
                early.started = True
        if early is not None:
            self._early.remove(early)
            if event.result is None or event.outcome in ("denied", "cancelled"):
                reason = event.result.text if event.result is not None and event.result.text else event.error
                self._give(early, "tool_cancelled", reason or f"the call was {event.outcome}")
            else:
                self._give(early, "tool_input", dict(event.call.arguments))
                self._give(early, "tool_result", wire_result(event.result))
            return
        if event.result is None or event.server is None:
            return
        spec = self._ui_spec(event.call.name)
        if spec is None:
            return
        index = len(self.display.view.parts)  # the call's block is shown by now: the View goes right below
        self._pending.append(loop.create_task(self._show(spec, event, index)))

    def _give(self, early: _Early, trait: str, value: Any) -> None:
        """Set a trait of the early View (or once it has opened); the call's end shows its output again,
        so that its text fallback holds the result."""
        if early.opened is None:
            early.after.append((trait, value))
            return
        setattr(early.opened.view, trait, value)

    async def _show_early(self, spec: ToolSpec, early: _Early, index: int) -> None:
        opened = await self.apps.open(spec, {}, None, session=self.session, policy=self.policy,
                                            model=self.model, rest=TURN_REST)
        if opened is None:
            return
        early.opened = opened
        opened.view.tool_input = None  # type: ignore[assignment]  # no tool-input before the whole arguments
        partial = partial_arguments(early.streamed)
        if partial is not None and not early.started:
            opened.view.tool_input_partial = partial
        for trait, value in early.after:
            setattr(opened.view, trait, value)
        self.opened.append(opened)

        from ..widgets._snapshot import snapshot_id  # the widgets package imports ipywidgets: not at %load_ext

        publish = self.display.output.publisher

        def show() -> None:  # live: a frontend that ignores display updates sees it once, from reshow
            publish(EMPTY, snapshot_id(early.display_id), False)
            publish(EMPTY, early.display_id, False)
            opened.publish(publish, early.display_id, update=True)

        def reshow(in_place: bool) -> None:  # at the turn's end, below its block's final form (its fallback
            if in_place:                       # has the result by now)
                opened.publish(publish, early.display_id, update=True)
                return
            publish(EMPTY, snapshot_id(early.display_id), True)
            publish(EMPTY, early.display_id, True)
            opened.publish(publish)

        self.display.cut(index, show, reshow=reshow)

    async def _show(self, spec: ToolSpec, event: ToolCallFinished, index: int) -> None:
        opened = await self.apps.open(spec, event.call.arguments, event.result, session=self.session,
                                            policy=self.policy, model=self.model, rest=TURN_REST)
        if opened is None:
            return
        self.opened.append(opened)
        self.display.cut(index, lambda: opened.publish(self.display.output.publisher))

    async def settle(self) -> None:
        """Wait for the Views being opened (each bounded by the hub's request timeout)."""
        pending, self._pending = self._pending, []
        for task in pending:
            try:
                await task
            except Exception:  # a View that fails to open leaves the turn's answer as it is
                logger.exception("showing a tool's view failed")
