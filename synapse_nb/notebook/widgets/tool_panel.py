"""ToolPanel: one MCP tool in the inspector: badges, description, argument form, Call, progress, result, past calls."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as w

from ...errors import SynapseError
from ...types import ToolResult, ToolSpec
from ..output.markup import Html, join
from ._html import ANNOTATION_BADGES, badge
from ._threads import call_on, kernel_loop
from .call_history import CallHistory
from .facade import HistoryLike, StateLike
from .form import ToolForm
from .result_view import ResultView

__all__ = ["ToolPanel", "annotation_badges", "mcp_call_line", "ui_badge", "ui_mark"]

logger = logging.getLogger("synapse_nb.notebook")


def annotation_badges(annotations: Mapping[str, Any]) -> Html:
    """A badge per MCP hint that is true (read-only, destructive, idempotent, open-world)."""
    return join(
        badge(text, colour, tip) for key, text, colour, tip in ANNOTATION_BADGES if annotations.get(key) is True
    )


def ui_mark(spec: ToolSpec) -> str:
    """A tool's MCP Apps side in a word or two: "" (none), "UI" (it has a View), "UI, app only" (only a View
    may call it: never offered to the model)."""
    if spec.ui is None:
        return ""
    return "UI" if spec.ui.for_model else "UI, app only"


def ui_badge(spec: ToolSpec) -> Html:
    """The badge of a tool with an MCP Apps View (or an app-only one); empty for other tools."""
    mark = ui_mark(spec)
    if not mark:
        return Html()
    tip = ("only its server's View calls it; never offered to the model" if not spec.for_model
           else f"has an interactive view ({spec.ui.resource_uri})" if spec.ui and spec.ui.resource_uri else "")
    return badge(mark, "blue", tip)


def mcp_call_line(spec: ToolSpec, arguments: Mapping[str, Any]) -> str:
    """The `%mcp call` line that makes the same call from a cell."""
    target = f"{spec.server}.{spec.original_name or spec.name}" if spec.server else spec.name
    args = json.dumps(dict(arguments), ensure_ascii=False, separators=(", ", ": "))
    return f"%mcp call {target} {args}"


class ToolPanel(w.VBox):  # type: ignore[misc]
    """Call one tool through the hub without blocking the kernel (`state.runner.spawn`).

    Cancel stops a running call; "Copy as %mcp call" shows the line that makes the same call from a
    cell; choosing one of the recent calls puts its arguments back into the form."""

    def __init__(
        self,
        state: StateLike,
        spec: ToolSpec,
        *,
        on_called: Callable[[], None] | None = None,
        history: Callable[[], HistoryLike | None] | None = None,
    ) -> None:
        self.state = state
        self.get_history = history or state.history
        self.spec = spec
        self.on_called = on_called
        self.task: Any = None
        shown = spec.original_name or spec.name
        title = spec.annotations.get("title")
        header = Html('<div class="snb-title">{} {}{}</div><div class="snb-muted">{}called as <code>{}</code></div>'
                      ).format(shown, annotation_badges(spec.annotations), ui_badge(spec),
                               title + " · " if isinstance(title, str) and title else "", spec.name)
        description = spec.description.strip() or "(no description)"
        self.header = w.HTML(header)
        self.description = w.HTML(Html('<div class="snb-tool-description">{}</div>').format(description))
        self.form = ToolForm(spec.input_schema)
        self.call_button = w.Button(
            description="Call",
            icon="play",
            button_style="danger" if spec.destructive else "primary",
            tooltip=f"Run {shown} on {spec.server}" + (" (destructive)" if spec.destructive else ""),
        )
        self.call_button.add_class("snb-call")
        self.cancel_button = w.Button(description="Cancel", icon="stop", tooltip="Cancel the running call")
        self.cancel_button.layout = w.Layout(width="auto", display="none")
        self.cancel_button.add_class("snb-cancel")
        self.copy_button = w.Button(
            description="Copy as %mcp call", icon="terminal", tooltip="Show the line that makes this call from a cell"
        )
        self.copy_button.layout = w.Layout(width="auto")
        self.copy_line = w.HTML()
        self.copy_line.add_class("snb-copy-line")
        self.call_status = w.HTML()
        self.call_status.add_class("snb-call-status")
        self.result = ResultView()
        self.app_box = w.VBox(layout=w.Layout(width="100%"))  # a UI tool's View (MCP Apps), under its result
        self.history = CallHistory(spec.server or "", [n for n in (spec.original_name, spec.name) if n])
        # clicks may arrive on a subshell thread: act on the kernel's loop (see _threads)
        loop = kernel_loop(self.state.runner)
        self.history.on_pick = lambda arguments: call_on(loop, self._refill, arguments)
        self.call_button.on_click(lambda b: call_on(loop, self._clicked, b))
        self.cancel_button.on_click(lambda _b: call_on(loop, self._cancel))
        self.copy_button.on_click(lambda _b: call_on(loop, self._copy))
        super().__init__(
            [
                self.header,
                self.description,
                self.form,
                w.HBox(
                    [self.call_button, self.cancel_button, self.copy_button, self.call_status],
                    layout=w.Layout(align_items="center", margin="6px 0"),
                ),
                self.copy_line,
                self.result,
                self.app_box,
                w.HTML('<div class="snb-section"></div>'),
                self.history,
            ],
            layout=w.Layout(width="100%", padding="0 0 0 12px"),
        )
        self.add_class("snb-tool")
        self.refresh_history()

    def _restarts(self) -> int:
        """How often the tool's server has been restarted (a call to a crashed one restarts it first)."""
        info = next((s for s in self.state.hub.servers if getattr(s, "name", None) == self.spec.server), None)
        restarts = getattr(info, "restarts", 0)
        return restarts if isinstance(restarts, int) else 0

    def refresh_history(self) -> None:
        try:
            reader = self.get_history()
        except Exception as exc:  # the facade should not raise; if it does, say so where the calls would be
            logger.exception("opening the history failed")
            self.history.view.value = Html('<span class="snb-err">The history cannot be opened: {}</span>').format(exc)
            return
        self.history.load(reader)

    def _clicked(self, _button: w.Button) -> None:
        try:
            arguments = self.form.arguments()
            if arguments is None:
                self.call_status.value = '<span class="snb-err">⚠ Fix the marked fields; nothing was sent.</span>'
                return
            self.call_button.disabled = True
            self.cancel_button.layout.display = None
            self.call_status.value = ""
            self.result.show_pending(f"calling {self.spec.original_name or self.spec.name} …")
            self.task = self.state.runner.spawn(self._call(arguments))
        except Exception as exc:  # a widget callback: keep the kernel quiet, show and log
            logger.exception("the Call button of %s failed", self.spec.name)
            self.call_button.disabled = False
            self.result.show_error(f"{type(exc).__name__}: {exc}")

    async def _call(self, arguments: dict[str, Any]) -> None:
        start = time.perf_counter()
        recorded: list[float] = []
        restarts = self._restarts()

        def elapsed() -> float:
            """The duration the call's history row has (Recent calls), so the badge and the row agree."""
            return recorded[-1] if recorded else (time.perf_counter() - start) * 1000

        def note() -> str | None:
            return "incl. restarting the server" if self._restarts() > restarts else None

        label = f"calling {self.spec.original_name or self.spec.name} …"
        last_message: str | None = None

        def progress(done: float, total: float | None, message: str | None) -> None:
            nonlocal last_message
            last_message = message or last_message  # a report without a message keeps the last one
            self.result.show_progress(label, done, total, last_message)

        try:
            result = await self.state.call_tool(self.spec.name, arguments, on_progress=progress,
                                                on_recorded=recorded.append)
        except asyncio.CancelledError:
            self.result.show_cancelled(elapsed_ms=elapsed(), note=note())
            raise
        except SynapseError as exc:
            self.result.show_error(str(exc), elapsed_ms=elapsed(), note=note())
        except Exception as exc:  # the hub should map its errors; show whatever escaped and log it
            logger.exception("calling %s from the inspector failed", self.spec.name)
            self.result.show_error(f"{type(exc).__name__}: {exc}", elapsed_ms=elapsed(), note=note())
        else:
            # the recorded duration; a facade that records nothing: the server's own time, else the wall clock's
            took = recorded[-1] if recorded else result.duration_ms or elapsed()
            self.result.show(result, elapsed_ms=took, note=note())
            await self._show_view(arguments, result)
        finally:
            self.call_button.disabled = False
            self.cancel_button.layout.display = "none"
            try:
                self.refresh_history()
                if self.on_called is not None:
                    self.on_called()
            except Exception:
                logger.exception("refreshing the inspector after calling %s failed", self.spec.name)

    async def _show_view(self, arguments: dict[str, Any], result: ToolResult) -> None:
        """A UI tool's View (the facade's `apps` opens it, when it has one) replaces the previous call's."""
        apps = getattr(self.state, "apps", None)
        if apps is None or self.spec.ui is None:
            return
        opened = await apps.open(self.spec, arguments, result)
        self.app_box.children = (opened.companion,) if opened is not None else ()  # it holds the View

    # --- cancel, copy, refill ----------------------------------------------------------------------

    def _cancel(self) -> None:
        try:
            cancel = getattr(self.task, "cancel", None)
            if callable(cancel) and not self.task.done():
                cancel()  # the hub sends MCP cancellation; _call shows "cancelled"
        except Exception:  # a widget callback
            logger.exception("cancelling the call of %s failed", self.spec.name)

    def _copy(self) -> None:
        try:
            arguments = self.form.arguments()
            if arguments is None:
                self.copy_line.value = '<span class="snb-err">Fix the marked fields first.</span>'
                return
            line = mcp_call_line(self.spec, arguments)
            self.copy_line.value = Html(
                '<div class="snb-muted">Run this in a cell to make the same call (click it to select it):</div>'
                '<pre class="snb-pre" style="user-select:all">{}</pre>'
            ).format(line)
        except Exception as exc:  # a widget callback
            logger.exception("building the %%mcp call line of %s failed", self.spec.name)
            self.copy_line.value = Html('<span class="snb-err">{}</span>').format(exc)

    def _refill(self, arguments: Mapping[str, Any]) -> None:
        """Put a recent call's arguments back into the form."""
        unknown = self.form.load(arguments)
        if self.form.mode.value != "Form":
            self.form.raw.value = json.dumps(dict(arguments), indent=2)
        note = f" (not in the form: {', '.join(unknown)})" if unknown else ""
        self.call_status.value = Html('<span class="snb-muted">arguments of a recent call loaded{}</span>').format(note)
