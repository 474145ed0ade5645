"""ElicitationWidget: what a server asks the user (a form, a link, a sampling approval) answered by a widget.

Used where no cell waits on stdin: `--background` runs and calls made from the inspector. A form
request becomes the inspector's own schema form (ToolForm over `requested_schema`), answered through
`ElicitationForm.answer`, which applies defaults (SEP-1034) and types; a URL request becomes a link
with the server's message and Done / Decline; a sampling request shows what the model would be asked,
with Allow / Refuse. The server may close a question itself (`withdraw`): a URL flow it completed, or a
request it cancelled; the widget then says so and takes no more answers. Buttons may fire on a subshell
thread: they act on the loop the widget was made on (see _threads), where the answer future lives.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from ...mcp_client.elicitation import ElicitationAnswer, ElicitationError, ElicitationForm, UrlElicitation
from ...mcp_client.handlers import Withdrawal
from ...mcp_client.sampling import SamplingRequest
from ..output.markup import Html
from ..output.palette import link_style
from ._html import STYLE, pre
from ._threads import call_on
from .form import ToolForm

__all__ = ["ElicitationWidget"]

_OUTCOME = {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}
_SAMPLING_OUTCOME = {"accept": "allowed", "decline": "refused", "cancel": "refused"}
_WITHDRAWN: dict[Withdrawal, tuple[ElicitationAnswer, str]] = {
    "completed": (ElicitationAnswer("accept"), "completed by the server"),
    "cancelled": (ElicitationAnswer.cancel(), "cancelled by the server"),
}


class ElicitationWidget(w.VBox):  # type: ignore[misc]
    """One pending request; `await widget.wait()` gives the user's answer (cancel if the caller gives up).

    For a sampling request, accept means "let the model answer" (`model` names it), decline refuses.
    """

    def __init__(self, request: ElicitationForm | UrlElicitation | SamplingRequest, loop: asyncio.AbstractEventLoop,
                 *, model: str = "the kernel's model") -> None:
        self.request = request
        self.loop = loop
        self.done: asyncio.Future[ElicitationAnswer] = loop.create_future()
        self.form: ToolForm | None = None
        is_url = isinstance(request, UrlElicitation)
        sampling = isinstance(request, SamplingRequest)
        what = "asks to use the model" if sampling else "asks you to open a link" if is_url else "asks for input"
        message = "" if isinstance(request, SamplingRequest) else request.message
        described = Html('<div class="snb-tool-description">{}</div>').format(message) if message else ""
        title = w.HTML(Html('<div class="snb-title">{} {}</div>{}').format(request.server, what, described))
        body: list[w.Widget] = [title]
        if isinstance(request, SamplingRequest):
            system = f"system: {request.system_prompt}\n" if request.system_prompt else ""
            convo = "\n".join(f"{m.role}: {m.content}" for m in request.messages)[:4000]
            body.append(w.HTML(Html('<div class="snb-muted">model {}, at most {} tokens</div>{}').format(
                model, request.max_tokens, pre(system + convo))))
        elif isinstance(request, UrlElicitation):
            clickable = request.url.lower().startswith(("https://", "http://"))  # never javascript: and the like
            body.append(w.HTML(Html('<a href="{}" target="_blank" rel="noopener noreferrer" style="{}">{}</a>').format(
                request.url, link_style(), request.url) if clickable else Html("<code>{}</code>").format(request.url)))
        else:
            self.form = ToolForm(request.schema)
            body.append(self.form)
        accept = "Allow" if sampling else "Done" if is_url else "Submit"
        self.accept_button = w.Button(description=accept, icon="check", button_style="primary",
                                      layout=w.Layout(width="auto"))
        self.decline_button = w.Button(description="Refuse" if sampling else "Decline", icon="times",
                                       layout=w.Layout(width="auto"))
        self.cancel_button = w.Button(description="Cancel", icon="ban",
                                      layout=w.Layout(width="auto", display="none" if sampling else None))
        self.accept_button.on_click(lambda _b: self._on_loop(self._accept))
        self.decline_button.on_click(lambda _b: self._on_loop(self._finish, ElicitationAnswer.decline()))
        self.cancel_button.on_click(lambda _b: self._on_loop(self._finish, ElicitationAnswer.cancel()))
        self.status = w.HTML()  # the outcome, on its own line: a long answer never squeezes the buttons
        self.status.add_class("snb-elicit-status")
        buttons = w.HBox([self.accept_button, self.decline_button, self.cancel_button],
                         layout=w.Layout(align_items="center"))
        buttons.add_class("snb-actions")
        super().__init__([w.HTML(STYLE), *body, buttons, self.status], layout=w.Layout(width="100%"))
        self.add_class("snb-root")
        self.add_class("snb-card")
        self.add_class("snb-elicitation")

    def withdraw(self, why: Withdrawal) -> None:
        """The server closed the question itself: say how, and take no more answers."""
        answer, text = _WITHDRAWN[why]
        self._finish(answer, text=text)

    async def wait(self) -> ElicitationAnswer:
        """The user's answer; if the waiting call is cancelled, the widget says so and stops taking answers."""
        try:
            return await asyncio.shield(self.done)
        except asyncio.CancelledError:
            self._finish(ElicitationAnswer.cancel(), note="the call ended before an answer")
            raise

    def _accept(self) -> None:
        if isinstance(self.request, UrlElicitation | SamplingRequest):
            self._finish(ElicitationAnswer("accept"))
            return
        assert self.form is not None
        values = self.form.arguments()
        if values is None:  # the form flagged the bad fields itself
            self.status.value = '<span class="snb-err">fix the marked fields</span>'
            return
        try:
            answer = self.request.answer(values)
        except ElicitationError as exc:
            self.status.value = Html('<span class="snb-err">{}</span>').format(exc)
            return
        self._finish(answer)

    def _finish(self, answer: ElicitationAnswer, note: str = "", *, text: str | None = None) -> None:
        if self.done.done():
            return
        self.done.set_result(answer)
        for button in (self.accept_button, self.decline_button, self.cancel_button):
            button.disabled = True
        if self.form is not None:
            self.form.layout.display = "none"
        css = "snb-ok" if answer.action == "accept" else "snb-muted"
        if text is None:
            detail = ", ".join(f"{k}={v}" for k, v in (answer.content or {}).items())
            outcome = (_SAMPLING_OUTCOME if isinstance(self.request, SamplingRequest) else _OUTCOME)[answer.action]
            text = outcome + (f": {detail}" if detail else "") + (f" ({note})" if note else "")
        self.status.value = Html('<span class="{}">{}</span>').format(css, text)

    def _on_loop(self, fn: Callable[..., None], *args: Any) -> None:
        call_on(self.loop, fn, *args)
