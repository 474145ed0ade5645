"""AppCompanion: an MCP Apps View and what shows under it, as one cell output: approval buttons for the
View's tool calls, the question whether to save a file it offers (`ui/download-file`), and the turns its
`ui/message` requests start (their output lives in the widget's model,
so it updates after the cell ended). One output, so a frontend shows no empty widget under the View while
nothing is asked or said."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import ipywidgets as w

from ...types import ToolSpec
from ..output.markup import Html
from ..widgets.run_controls import RunControls

__all__ = ["AppCompanion"]


class AppCompanion(w.VBox):  # type: ignore[misc]
    """One View (`hold`) and, under it, `ask` (an ApprovalCallback with buttons) and `publish` (a LiveOutput
    publisher that writes into the widget's Output by trait assignment, never by capturing the current
    message)."""

    children: tuple[Any, ...]

    def __init__(self) -> None:
        self.out = w.Output()
        self.view: w.DOMWidget | None = None
        self.controls: RunControls | None = None
        self.question: w.HBox | None = None
        self._answered = asyncio.Event()
        self._asking = 0  # the View's tool calls waiting for the buttons now
        self._shown: list[tuple[str | None, dict[str, Any]]] = []
        super().__init__([self.out], layout=w.Layout(width="100%"))
        self.add_class("snb-app-companion")

    def hold(self, view: w.DOMWidget) -> None:
        """Show `view` above the approval buttons and the messages' turns (the View is built after its host,
        which needs `ask`)."""
        self.view = view
        self._lay_out()

    def _lay_out(self) -> None:
        """The View, the approval buttons while a call waits for them (gone once answered), the question about a file
        it offers, the turns' output."""
        controls = self.controls if self._asking else None
        self.children = tuple(c for c in (self.view, controls, self.question, self.out) if c is not None)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        """The widget, with what it shows as text: the View's text fallback, then what its messages started."""
        data = super()._repr_mimebundle_(**kwargs)
        if data is None:
            return None
        texts = [_plain(self.view)] if self.view is not None else []
        texts += [str(b.get("text/plain", "")) for _, b in self._shown]
        return {**dict(data), "text/plain": "\n".join(t for t in texts if t)}

    async def ask(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> str:
        """Ask approval of a View's tool call with buttons under the View: "yes", "no" or "always". The buttons
        and their "needs approval" line show while a call waits, and go once it is answered."""
        if self.controls is None:
            self.controls = RunControls(on_stop=lambda: None)
            self.controls.stop_button.layout.display = "none"
            self.controls.set_status("view", "a tool call of the view needs approval")
        self._asking += 1
        self._lay_out()
        try:
            return await self.controls.ask(spec, arguments)
        finally:
            self._asking -= 1
            self._lay_out()

    async def ask_file(self, name: str, size: int) -> bool:
        """Ask with two buttons under the View whether to save the file it offers into the notebook's folder; the
        answer is shown as a line in place of the buttons."""
        while self.question is not None:  # one question at a time; a second file waits for the first answer
            await self._answered.wait()
        self._answered = asyncio.Event()
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        label = w.HTML(Html("The view offers <b>{}</b> ({}): save it in the notebook's folder?").format(
            name, _size(size)))
        save, skip = w.Button(description="Save", button_style="primary"), w.Button(description="Don't save")

        loop = asyncio.get_running_loop()

        def answered(value: bool) -> None:  # a click may arrive on another thread: settled on the loop
            loop.call_soon_threadsafe(lambda: None if answer.done() else answer.set_result(value))

        save.on_click(lambda _b: answered(True))
        skip.on_click(lambda _b: answered(False))
        self.question = w.HBox([label, save, skip])
        self.question.add_class("snb-app-download")
        self._lay_out()
        try:
            agreed = await answer
        finally:
            self.question = None
            self._lay_out()
            self._answered.set()
        if not agreed:
            self.say(f"not saved: {name}")
        return agreed

    def say(self, line: str) -> None:
        """One line of text under the View (what became of a file it offered)."""
        self.publish({"text/plain": line}, None, False)

    def publish(self, bundle: dict[str, Any], display_id: str | None, update: bool) -> None:
        """A LiveOutput publisher: a new display is appended, an update replaces the display of that id."""
        if update:
            self._shown = [(i, bundle if i == display_id else b) for i, b in self._shown]
        else:
            self._shown = [*self._shown, (display_id, bundle)]
        self.out.outputs = tuple(
            {"output_type": "display_data", "data": dict(b), "metadata": {}} for _, b in self._shown
            if any(str(v) for v in b.values())
        )


def _size(size: int) -> str:
    if size < 10_000:
        return f"{size} bytes"
    return f"{size / 1000:.0f} KB" if size < 10_000_000 else f"{size / 1e6:.0f} MB"


def _plain(widget: Any) -> str:
    found = widget._repr_mimebundle_()
    data = found[0] if isinstance(found, tuple) else found
    return str((data or {}).get("text/plain", ""))
