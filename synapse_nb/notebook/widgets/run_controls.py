"""RunControls: Stop and tool-approval buttons for a `%%synapse --background` run, plus its status line."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import ipywidgets as w

from ...events import (
    Event,
    LlmCallFinished,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    TurnCancelled,
    TurnFailed,
    TurnFinished,
    TurnStarted,
)
from ...types import ToolSpec
from ..output.markup import Html
from ._html import SPINNER, STYLE, badge, fmt_ms, json_block
from ._snapshot import Snapshot
from ._threads import call_on, current_loop
from .tool_panel import annotation_badges

__all__ = ["RunControls"]

logger = logging.getLogger("synapse_nb.notebook")

_STATUS_COLOUR = {"running": "blue", "finished": "green", "failed": "red", "cancelled": "amber", "stopping": "amber"}


@dataclass(frozen=True, slots=True, eq=False)
class _Request:
    spec: ToolSpec
    arguments: Mapping[str, Any]
    future: asyncio.Future[str]


class RunControls(Snapshot, w.VBox):  # type: ignore[misc]
    """Controls of one background run.

    Its MIME bundle carries a static snapshot (status, a waiting approval) beside the widget view;
    shown with `show()`, the output is updated when the run ends, so a saved notebook says how it ended.

    `await controls.ask(spec, arguments)` is an ApprovalCallback: it shows the request and returns
    "yes", "no" or "always" when a button is clicked. Requests arriving meanwhile wait in a queue and
    are shown one at a time. `on_event` is an EventSink that keeps the status line current;
    `finish(status)` ends the run's controls (pending requests are denied).
    """

    children: tuple[Any, ...]

    def __init__(self, on_stop: Callable[[], None], *, inline_approval: bool = True) -> None:
        """`inline_approval`: a waiting approval shows in these controls; False: elsewhere, in a `card` (a
        background turn shows it right above the tool's line, where a server's form goes too)."""
        self.on_stop = on_stop
        self.inline_approval = inline_approval
        self.status = "running"
        self.detail = ""
        self._tools: dict[str, str] = {}  # call id -> tool, for progress lines
        self.finished = False
        self.pending: tuple[_Request, ...] = ()
        self.answers: tuple[tuple[str, str], ...] = ()  # (tool, answer) in the order given, for the record

        self.status_label = w.HTML()
        self.status_label.add_class("snb-run-status")
        self.stop_button = w.Button(description="Stop", icon="stop", button_style="danger", tooltip="Cancel this run")
        self.stop_button.layout = w.Layout(width="auto")
        # the run's loop (the kernel's, when built in a cell); clicks may arrive on a subshell thread
        self.loop = current_loop()
        self.stop_button.on_click(lambda b: call_on(self.loop, self._stop_clicked, b))
        self.request_view = w.HTML()
        self.approve_button = w.Button(description="Approve", icon="check", button_style="success")
        self.deny_button = w.Button(description="Deny", icon="times", button_style="warning")
        self.always_button = w.Button(
            description="Always", icon="check-double", tooltip="Approve this tool for the rest of the session"
        )
        for button, answer in ((self.approve_button, "yes"), (self.deny_button, "no"), (self.always_button, "always")):
            button.on_click(lambda _b, a=answer: call_on(self.loop, self._answer, a))
        self.queue_label = w.HTML()
        self.approval_box = w.VBox(
            [self.request_view, w.HBox([self.approve_button, self.deny_button, self.always_button, self.queue_label])]
        )
        self.approval_box.add_class("snb-card")
        self.approval_box.add_class("snb-approval")
        top = w.HBox([self.status_label, self.stop_button], layout=w.Layout(align_items="center", width="100%"))
        super().__init__([w.HTML(STYLE), top], layout=w.Layout(width="100%"))
        self.add_class("snb-root")
        self.add_class("snb-run-controls")
        self.set_status("running")

    # --- status ----------------------------------------------------------------------------------

    def set_status(self, status: str, detail: str = "") -> None:
        """Show where the run is: `status` is a word (running, finished, ...), `detail` says more."""
        self.status = status
        self.detail = detail
        colour = _STATUS_COLOUR.get(status.split(":")[0], "grey")
        icon = SPINNER + " " if status in ("running", "stopping") else ""
        extra = Html(' <span class="snb-muted">{}</span>').format(detail) if detail else ""
        self.status_label.value = Html("{}{}{}").format(icon, badge(status, colour), extra)

    def finish(self, status: str, detail: str = "") -> None:
        """The run ended (finished / failed / cancelled): no more Stop, pending requests are denied."""
        if self.finished and status == self.status and not detail:
            return  # told twice (by the TurnFinished event, then by the handle): keep the first detail
        self.finished = True
        self.stop_button.disabled = True
        self.stop_button.layout.display = "none"
        self.set_status(status, detail)
        for request in self.pending:
            _resolve(request.future, "no")
        self.pending = ()
        self._render()
        try:
            self.refresh_snapshot()  # the saved output's snapshot says how the run ended
        except Exception:  # a display hook failing must not break the run's end
            logger.exception("updating the run controls' snapshot failed")

    def show(self) -> None:
        """Display the controls (their snapshot, then the widget) in the current cell; `finish` takes the
        snapshot again."""
        from IPython.display import display

        display(self)  # type: ignore[no-untyped-call]

    def snapshot(self) -> tuple[Html, str]:
        # the labels' values are Html this widget built (a trait may hand them back as plain str)
        html = Html('<div class="snb-root snb-run-controls">{}').format(Html(self.status_label.value))
        text = f"background run: {self.status}" + (f" · {self.detail}" if self.detail else "")
        if self.pending:
            request = self.pending[0]
            html += Html('<div class="snb-card snb-approval">{}</div>').format(Html(self.request_view.value))
            text += f"\nwaiting for approval: {request.spec.name} {dict(request.arguments)}"
        return html + Html("</div>"), text

    def on_event(self, event: Event) -> None:
        """An EventSink: keep the status line current as the agent works (quick, never raises)."""
        try:
            if self.finished:
                return
            if isinstance(event, TurnStarted):
                self.set_status("running", "waiting for the model")
            elif isinstance(event, LlmCallFinished):
                tokens = event.usage.input_tokens + event.usage.output_tokens
                self.set_status("running", f"model answered in {fmt_ms(event.duration_ms)} ({tokens:,} tokens)")
            elif isinstance(event, ToolCallStarted):
                self._tools = {**self._tools, event.call.id: event.tool}
                self.set_status("running", f"calling {event.tool}")
            elif isinstance(event, ToolCallProgress):
                amount = f"{event.progress / event.total:.0%}" if event.total else f"{event.progress:g}"
                message = f" {event.message}" if event.message else ""
                self.set_status("running", f"{self._tools.get(event.call_id, 'a tool')}: {amount}{message}")
            elif isinstance(event, ToolCallFinished):
                outcome = "cancelled" if event.error == "cancelled" else ("failed" if event.is_error else "done")
                self.set_status("running", f"{event.tool} {outcome} in {fmt_ms(event.duration_ms)}")
            elif isinstance(event, TurnFinished):
                self.finish("finished", f"{event.iterations} iteration(s), {fmt_ms(event.duration_ms)}")
            elif isinstance(event, TurnFailed):
                self.finish("failed", event.error)
            elif isinstance(event, TurnCancelled):
                self.finish("cancelled", f"after {fmt_ms(event.duration_ms)}")
        except Exception:  # an event sink must not raise into the agent
            logger.exception("updating the run controls failed")

    # --- approval --------------------------------------------------------------------------------

    async def ask(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> str:
        """Ask the user to approve one tool call; "yes", "no" or "always" (denied at once when finished)."""
        if self.finished:
            return "no"
        self.loop = asyncio.get_running_loop()
        future: asyncio.Future[str] = self.loop.create_future()
        request = _Request(spec, dict(arguments), future)
        future.add_done_callback(lambda _f: self._forget(request))
        self.pending = (*self.pending, request)
        self._render()
        before = self.detail
        if self.status == "running":  # not over a "stopping"
            self.set_status("running", f"waiting for your approval of {spec.original_name or spec.name}")
        try:
            return await future
        finally:
            if not self.finished and not self.pending and self.status == "running":
                self.set_status("running", before)

    def card(self, html: Html) -> w.VBox:
        """A card for the waiting approval shown elsewhere: `html` (what is asked) above its own Approve, Deny
        and Always buttons, which answer the first waiting request as this widget's do."""
        buttons = []
        for description, icon, style, answer in (("Approve", "check", "success", "yes"),
                                                 ("Deny", "times", "warning", "no"),
                                                 ("Always", "check-double", "", "always")):
            button = w.Button(description=description, icon=icon, button_style=style)
            button.on_click(lambda _b, a=answer: call_on(self.loop, self._answer, a))
            buttons.append(button)
        card = w.VBox([w.HTML(html), w.HBox(buttons)])
        card.add_class("snb-root")
        return card

    def _answer(self, answer: str) -> None:
        try:
            if not self.pending:
                return
            first = self.pending[0]
            settled = [first]
            if answer == "always":  # the same tool waiting further down the queue is approved too
                settled += [r for r in self.pending[1:] if r.spec.name == first.spec.name]
            for request in settled:
                _resolve(request.future, answer)
                self.answers = (*self.answers, (request.spec.name, answer))
            self.pending = tuple(r for r in self.pending if r not in settled)
            self._render()
        except Exception:  # a widget callback
            logger.exception("answering an approval request failed")

    def _forget(self, request: _Request) -> None:
        if request in self.pending:  # cancelled while waiting (the run was stopped)
            self.pending = tuple(r for r in self.pending if r is not request)
            self._render()

    def _stop_clicked(self, _button: w.Button) -> None:
        try:
            self.stop_button.disabled = True
            self.set_status("stopping")
            self.on_stop()
        except Exception as exc:  # a widget callback
            logger.exception("stopping the run failed")
            self.set_status("stopping", f"Stop failed: {exc}")

    def _render(self) -> None:
        top = self.children[1]
        if not self.pending or not self.inline_approval:
            self.children = (self.children[0], top)
            return
        request = self.pending[0]
        spec = request.spec
        where = f" on {spec.server}" if spec.server else ""
        self.request_view.value = Html(
            "<div><b>Approve this tool call?</b> <code>{}</code>"
            '<span class="snb-muted">{}</span> {}</div><div class="snb-muted">{}</div>{}'
        ).format(spec.original_name or spec.name, where, annotation_badges(spec.annotations),
                 spec.description.strip()[:200], json_block(dict(request.arguments)))
        waiting = len(self.pending) - 1
        self.queue_label.value = (Html('<span class="snb-muted">&nbsp;{} more waiting</span>').format(waiting)
                                  if waiting else "")
        self.children = (self.children[0], top, self.approval_box)


def _resolve(future: asyncio.Future[str], answer: str) -> None:
    """Settle a future from a click, on its own loop (clicks may arrive on another thread)."""
    if future.done():
        return
    loop = future.get_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        future.set_result(answer)
    else:
        loop.call_soon_threadsafe(lambda: None if future.done() else future.set_result(answer))
