"""Signing in to an OAuth-protected MCP server from a cell: the link, then the loopback redirect or a pasted URL.

The hub calls `NotebookSignIn(port, router, redirect_mode)` as its `sign_in` callback with the server's
name, the authorization
URL and an awaitable of the loopback redirect (the browser coming back to 127.0.0.1 on a free port). The
cell shows "Sign in to NAME" as a link (HTML, and the URL in plain text for terminals), and open
inspectors show it in the server's panel. Then the first of these wins:

- the loopback redirect: the browser runs on the kernel's machine (the usual local case, nothing to type);
- a pasted URL: where the browser cannot reach the kernel (JupyterHub, a kernel over SSH), the user pastes
  the address the browser ended on into the input box the cell shows; Enter alone keeps waiting for the
  browser. `%config SynapseMagics.oauth_redirect` decides when the box is offered: "auto" (the default)
  when the kernel looks remote (JupyterHub's or SSH's variables are set), "paste" always, "loopback"
  never. It is not offered by default on a local kernel because a frontend keeps an unanswered box and
  JupyterLab runs no other cell until it is answered; nor where the cell cannot read stdin.

The hub asks for one sign-in at a time (a config file's servers that need one wait their turn; the others
connect meanwhile) and bounds the wait (the server's `oauth.sign_in_timeout`); an interrupt cancels it. The
stdin box is asked through `KernelPort.ask` (as every question is), which reads it in a worker thread, so
the event loop (and with it the loopback listener) keeps running meanwhile; when the browser wins, the
question is cancelled and the thread stops reading. The
authorization URL holds no secret (PKCE sends only the challenge); the pasted URL holds the one-time code,
which is never shown, recorded or logged here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from ...events import ServerEvent
from ..kernel.port import NobodyCanAnswer
from ..output.live import Bundle
from ..output.markup import Html
from ..output.palette import DARK_STYLE
from ..output.palette import colour as _colour
from .approval_card import _BOX

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..kernel.port import KernelPort
    from ..recording.router import EventRouter

__all__ = ["REDIRECT_MODES", "NotebookSignIn", "SignInRequest", "looks_remote", "pasted_redirect", "sign_in_card"]

PASTE_PROMPT = "paste the address your browser ended on (or just sign in; Enter keeps waiting): "
SDK_AUTH_LOGGER = "mcp.client.auth.oauth2"
REDIRECT_MODES = ("auto", "loopback", "paste")
"""`%config SynapseMagics.oauth_redirect`: where the browser's redirect comes back (see the module docstring)."""
REMOTE_VARIABLES = ("JUPYTERHUB_API_URL", "JUPYTERHUB_USER", "SSH_CONNECTION", "SSH_CLIENT")
_ACCENT = "#8250df"
_MUTED = f"color:{_colour('muted')};font-size:12px"


@dataclass(frozen=True)
class SignInRequest:
    """A sign-in the notebook waits for: what the inspector's panel shows while it is open."""

    server: str
    url: str


def sign_in_card(server: str, url: str, *, paste: bool) -> Bundle:
    """The cell's card: a link to the authorization URL, the origin it leads to (so the user sees where the
    password goes before clicking), and where to paste when the browser is elsewhere."""
    hint = ("If the browser cannot reach this machine (JupyterHub, SSH), paste the address it ends on in "
            "the box below." if paste else "This cell goes on by itself once you have signed in.")
    origin = _origin(url)
    text = f"Sign in to {server}: {url}\nThe sign-in page is at {origin}.\n{hint}"
    link = Html('<a href="{}" target="_blank" rel="noopener noreferrer" style="color:{};text-decoration:underline">'
                "Sign in to {}</a>").format(url, _colour("info"), server)
    at = Html(' <span class="snb-origin" style="{}">at <b>{}</b></span>').format(_MUTED, origin)
    box = _BOX.format(accent=_ACCENT)
    return {
        "text/plain": text,
        "text/html": Html('{}<div class="snb-sign-in" style="{}"><div><b>{}</b>{}</div><div style="{}">{}</div></div>'
                          ).format(Html(DARK_STYLE), box, link, at, _MUTED, hint),
    }


def _origin(url: str) -> str:
    """`https://auth.example.com` of an authorization URL (scheme, host and a non-default port)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}" if parts.scheme and parts.netloc else url


def sign_in_link_html(request: SignInRequest) -> Html:
    """The inspector panel's line for an open sign-in."""
    return Html('<div class="snb-sign-in">🔑 <a href="{}" target="_blank" rel="noopener noreferrer">Sign in to {}</a> '
                '<span style="{}">(the connecting cell goes on once you have)</span></div>'
                ).format(request.url, request.server, _MUTED)


def _outcome(server: str, text: str, *, ok: bool) -> Bundle:
    mark, colour = ("✓", _colour("ok")) if ok else ("⊘", _colour("faint"))
    return {
        "text/plain": f"{mark} {server}: {text}",
        "text/html": Html('{}<div class="snb-sign-in snb-answered" style="color:{}">{} <code>{}</code>: {}</div>'
                          ).format(Html(DARK_STYLE), colour, mark, server, text),
    }


def looks_remote(environ: Mapping[str, str]) -> bool:
    """Whether the kernel seems to run where the user's browser cannot reach it: started by JupyterHub,
    or over SSH (the variables a hub's single-user server and sshd set and kernels inherit)."""
    return any(environ.get(name) for name in REMOTE_VARIABLES)


def pasted_redirect(text: str) -> str | None:
    """The pasted text as a redirect URL (one carrying `code=` or `error=`), or None when it is not one."""
    value = text.strip().strip("'\"<>")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    query = parse_qs(parts.query)
    return value if "code" in query or "error" in query else None


class _QuietFlowErrors(logging.Filter):
    """The SDK logs a traceback ("OAuth flow error") for every sign-in that fails; the connect already
    ends with one line saying why (an OAuthError), and a traceback under it in the cell would only alarm."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "OAuth flow error"


def quiet_sdk_flow_errors() -> None:
    """Keep the SDK's "OAuth flow error" tracebacks out of the cells (once per process)."""
    sdk_logger = logging.getLogger(SDK_AUTH_LOGGER)
    if not any(isinstance(f, _QuietFlowErrors) for f in sdk_logger.filters):
        sdk_logger.addFilter(_QuietFlowErrors())


class NotebookSignIn:
    """The hub's `sign_in` callback for one kernel (see the module docstring)."""

    def __init__(self, port: KernelPort, router: EventRouter, redirect_mode: Callable[[], str]) -> None:
        """The parts it uses: the kernel port (the card, the paste box), the event router (tell open panels)
        and `redirect_mode()`, the current `SynapseMagics.oauth_redirect` (auto, loopback or paste)."""
        self.port = port
        self.router = router
        self.redirect_mode = redirect_mode
        quiet_sdk_flow_errors()
        self.open: list[SignInRequest] = []  # sign-ins waiting now (the inspector's panels list them)

    async def __call__(self, server: str, authorization_url: str, loopback_redirect: Awaitable[str]) -> str:
        """The final redirect URL: from the loopback listener or pasted, whichever comes first."""
        request = SignInRequest(server, authorization_url)
        offer_paste = self._offers_paste()
        card_id = uuid.uuid4().hex
        self.port.show(sign_in_card(server, authorization_url, paste=offer_paste), card_id, False)
        self.open.append(request)
        self.router.tell_panels(ServerEvent(server=server, event="sign_in_asked"))
        loopback = asyncio.ensure_future(loopback_redirect)
        waiting: set[asyncio.Future[Any]] = {loopback}
        paste: asyncio.Future[Any] | None = None
        if offer_paste:
            paste = asyncio.ensure_future(self._pasted())
            waiting.add(paste)
        everything = set(waiting)
        outcome = "cancelled"
        try:
            url = await self._first_url(waiting)
            outcome = "signed in"
            if paste is not None and not paste.done():
                # the frontend keeps the input box until it is answered (JupyterLab runs no other cell meanwhile)
                outcome = "signed in in the browser; the input box is no longer needed: press Enter in it"
            return url
        except BaseException:
            outcome = "not signed in"  # interrupted, timed out (the caller's bound) or failed: the cell says which
            raise
        finally:
            for future in everything:
                future.cancel()
            # a cancelled question returns within the reader's poll; wait for it so the stdin socket is free again
            with contextlib.suppress(BaseException):
                await asyncio.gather(*everything, return_exceptions=True)
            self.open.remove(request)
            self.router.tell_panels(ServerEvent(server=server, event="sign_in_answered"))
            self.port.show(_outcome(server, outcome, ok=outcome.startswith("signed in")), card_id, True)

    async def _first_url(self, waiting: set[asyncio.Future[Any]]) -> str:
        """The first redirect URL of the loopback listener or the paste reader; a reader that ends
        with nothing pasted leaves the loopback alone in the race."""
        while True:
            done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            for future in done:
                url = future.result()
                if url is not None:
                    return str(url)

    # -- paste-back

    def _offers_paste(self) -> bool:
        """Whether the input box is offered: not with `oauth_redirect` "loopback", nor with "auto" on a
        kernel that does not look remote, nor where nobody can answer."""
        mode = self.redirect_mode() or "auto"
        if mode == "loopback" or (mode == "auto" and not looks_remote(os.environ)):
            return False
        return self.port.can_ask()

    async def _pasted(self) -> str | None:
        """Lines until one is a redirect URL; None when the user pressed Enter alone (they sign in in a
        browser that reaches the loopback listener), input ended, nobody can answer or the cell stopped waiting."""
        prompt = PASTE_PROMPT
        while True:
            try:
                line = await self.port.ask(prompt)
            except NobodyCanAnswer:
                return None
            if line is None or not line.strip():
                return None
            url = pasted_redirect(line)
            if url is not None:
                return url
            prompt = "that is not the address the browser ended on (it has code=... in it); paste it again: "
