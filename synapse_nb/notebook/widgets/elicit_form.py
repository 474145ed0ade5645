"""ElicitationWidget: a server's elicitation answered by a widget (the schema form, or a link) instead of stdin.

Used where no cell waits on stdin: `--background` runs and calls made from the inspector. A form
request becomes the inspector's own schema form (ToolForm over `requested_schema`), answered through
`ElicitationForm.answer`, which applies defaults (SEP-1034) and types; a URL request becomes a link
with the server's message and Done / Decline. Buttons may fire on a subshell thread: they act on the
loop the widget was made on (see _threads), where the answer future lives.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from ...mcp_client.elicitation import ElicitationAnswer, ElicitationError, ElicitationForm, UrlElicitation
from ._html import esc
from ._threads import call_on
from .form import ToolForm

__all__ = ["ElicitationWidget"]

_OUTCOME = {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}


class ElicitationWidget(w.VBox):  # type: ignore[misc]
    """One pending request; `await widget.wait()` gives the user's answer (cancel if the caller gives up)."""

    def __init__(self, request: ElicitationForm | UrlElicitation, loop: asyncio.AbstractEventLoop) -> None:
        self.request = request
        self.loop = loop
        self.done: asyncio.Future[ElicitationAnswer] = loop.create_future()
        self.form: ToolForm | None = None
        is_url = isinstance(request, UrlElicitation)
        what = "asks you to open a link" if is_url else "asks for input"
        title = w.HTML(f'<div class="snb-title">{esc(request.server)} {what}</div>'
                       f'<div class="snb-tool-description">{esc(request.message)}</div>')
        body: list[w.Widget] = [title]
        if isinstance(request, UrlElicitation):
            clickable = request.url.lower().startswith(("https://", "http://"))  # never javascript: and the like
            body.append(w.HTML(f'<a href="{esc(request.url)}" target="_blank" rel="noopener noreferrer">'
                               f"{esc(request.url)}</a>" if clickable else f"<code>{esc(request.url)}</code>"))
        else:
            self.form = ToolForm(request.schema)
            body.append(self.form)
        self.accept_button = w.Button(description="Done" if is_url else "Submit", icon="check",
                                      button_style="primary", layout=w.Layout(width="auto"))
        self.decline_button = w.Button(description="Decline", icon="times", layout=w.Layout(width="auto"))
        self.cancel_button = w.Button(description="Cancel", icon="ban", layout=w.Layout(width="auto"))
        self.accept_button.on_click(lambda _b: self._on_loop(self._accept))
        self.decline_button.on_click(lambda _b: self._on_loop(self._finish, ElicitationAnswer.decline()))
        self.cancel_button.on_click(lambda _b: self._on_loop(self._finish, ElicitationAnswer.cancel()))
        self.status = w.HTML()
        buttons = w.HBox([self.accept_button, self.decline_button, self.cancel_button, self.status],
                         layout=w.Layout(align_items="center"))
        super().__init__([*body, buttons], layout=w.Layout(width="100%"))
        self.add_class("snb-card")
        self.add_class("snb-elicitation")

    async def wait(self) -> ElicitationAnswer:
        """The user's answer; if the waiting call is cancelled, the widget says so and stops taking answers."""
        try:
            return await asyncio.shield(self.done)
        except asyncio.CancelledError:
            self._finish(ElicitationAnswer.cancel(), note="the call ended before an answer")
            raise

    def _accept(self) -> None:
        if isinstance(self.request, UrlElicitation):
            self._finish(self.request.consent())
            return
        assert self.form is not None
        values = self.form.arguments()
        if values is None:  # the form flagged the bad fields itself
            self.status.value = '<span class="snb-err">fix the marked fields</span>'
            return
        try:
            answer = self.request.answer(values)
        except ElicitationError as exc:
            self.status.value = f'<span class="snb-err">{esc(exc)}</span>'
            return
        self._finish(answer)

    def _finish(self, answer: ElicitationAnswer, note: str = "") -> None:
        if self.done.done():
            return
        self.done.set_result(answer)
        for button in (self.accept_button, self.decline_button, self.cancel_button):
            button.disabled = True
        if self.form is not None:
            self.form.layout.display = "none"
        css = "snb-ok" if answer.action == "accept" else "snb-muted"
        detail = ", ".join(f"{k}={v}" for k, v in (answer.content or {}).items())
        text = _OUTCOME[answer.action] + (f": {detail}" if detail else "") + (f" ({note})" if note else "")
        self.status.value = f'<span class="{css}">{esc(text)}</span>'

    def _on_loop(self, fn: Callable[..., None], *args: Any) -> None:
        call_on(self.loop, fn, *args)
