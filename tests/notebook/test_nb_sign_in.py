"""Signing in from a cell (notebook/questions/sign_in.py): the link card, loopback or paste (first wins), one at a time.

The pasted line comes through the shell's stand-in for stdin (`ip.answers`); the kernel's stdin channel
and a real OAuth server are tests/e2e/test_kernel_oauth.py.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
from IPython.core.error import UsageError
from traitlets import TraitError

from synapse_nb.notebook.questions.sign_in import NotebookSignIn, pasted_redirect, sign_in_card
from tests.support.nb_shell import Shell, demo_server_command

AUTH_URL = "https://as.example/authorize?client_id=c&state=s&code_challenge=x&redirect_uri=http%3A%2F%2F127.0.0.1"
FINAL = "http://127.0.0.1:5000/callback?code=CODE-123&state=s"


def cards_shown(ip: Shell) -> asyncio.Event:
    """Set each time the sign-in publishes a new card (not an update); call it inside the loop."""
    shown = asyncio.Event()
    publish = ip.state.port.publish

    def spy(bundle: dict[str, object], display_id: str | None, update: bool) -> None:
        publish(bundle, display_id, update)
        if not update:
            shown.set()

    ip.state.port.publish = spy
    return shown


async def card_shown(ip: Shell, sign_in: NotebookSignIn) -> tuple[asyncio.Future[str], asyncio.Task[str]]:
    """A sign-in to "notes" started (inside the loop), once its card shows: the loopback it waits on, and it."""
    loopback: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    shown = cards_shown(ip)
    task = asyncio.ensure_future(sign_in("notes", AUTH_URL, loopback))
    await asyncio.wait_for(shown.wait(), 10)
    return loopback, task


def test_the_card_is_a_link_with_a_plain_text_fallback() -> None:
    card = sign_in_card("notes", AUTH_URL + "&x=<b>", paste=True)
    assert 'href="https://as.example/authorize?client_id=c&amp;state=s' in card["text/html"]
    assert "&amp;x=&lt;b&gt;" in card["text/html"]  # the URL is escaped in the attribute
    assert ">Sign in to notes</a>" in card["text/html"]
    assert card["text/plain"].startswith(f"Sign in to notes: {AUTH_URL}")
    assert "paste the address" in card["text/plain"]
    assert "paste" not in sign_in_card("notes", AUTH_URL, paste=False)["text/plain"]


def test_the_card_says_which_origin_you_sign_in_to() -> None:
    card = sign_in_card("notes", "https://user@as.example:8443/authorize?client_id=c", paste=False)
    assert '<span class="snb-origin"' in card["text/html"]
    assert "at <b>https://as.example:8443</b>" in card["text/html"]  # no user part, the port kept
    assert "The sign-in page is at https://as.example:8443." in card["text/plain"]
    assert "text-decoration:underline" in card["text/html"]  # the link looks like a link in any theme


@pytest.mark.parametrize(("text", "expected"), [
    (FINAL, FINAL),
    (f"  '{FINAL}'\n", FINAL),
    ("http://127.0.0.1:5000/callback?error=access_denied&state=s", "http://127.0.0.1:5000/callback?error=access_denied&state=s"),
    ("http://127.0.0.1:5000/callback?state=s", None),
    ("CODE-123", None),
    ("", None),
])
def test_a_pasted_redirect_must_carry_a_code_or_an_error(text: str, expected: str | None) -> None:
    assert pasted_redirect(text) == expected


def test_the_loopback_redirect_signs_in_and_the_card_says_so(ip: Shell) -> None:
    sign_in = NotebookSignIn(ip.state.port, ip.state.router, lambda: str(ip.state.magics.oauth_redirect))

    async def run() -> str:
        loopback, task = await card_shown(ip, sign_in)
        assert sign_in.open[0].server == "notes"
        loopback.set_result(FINAL)
        return await asyncio.wait_for(task, 10)

    assert ip.state.runner.run(run()) == FINAL
    assert ip.prompts == []  # a local kernel ("auto"): no input box, the browser comes back to the loopback
    assert sign_in.open == []
    card, card_id, _ = ip.published.items[0]
    assert "Sign in to notes" in card["text/plain"]
    assert ip.published.items[-1][1] == card_id
    assert ip.published.text() == "✓ notes: signed in"
    assert "CODE-123" not in repr(ip.published.items)


def paste_mode(ip: Shell, mode: str = "paste") -> None:
    ip.line("config", f"SynapseMagics.oauth_redirect = {mode!r}")


def test_a_pasted_url_wins_and_a_wrong_paste_is_asked_again(ip: Shell) -> None:
    paste_mode(ip)
    ip.answers[:] = ["CODE-123", FINAL]
    sign_in = NotebookSignIn(ip.state.port, ip.state.router, lambda: str(ip.state.magics.oauth_redirect))

    async def run() -> str:
        never: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        result = await asyncio.wait_for(sign_in("notes", AUTH_URL, never), 10)
        assert never.cancelled()  # the loopback wait is dropped once the paste won
        return result

    assert ip.state.runner.run(run()) == FINAL
    assert ip.prompts[0].startswith("paste the address your browser ended on")
    assert ip.prompts[1].startswith("that is not the address the browser ended on")
    assert ip.published.text() == "✓ notes: signed in"
    assert "CODE-123" not in repr(ip.published.items)


def test_enter_alone_keeps_waiting_for_the_browser(ip: Shell) -> None:
    paste_mode(ip)
    ip.answers[:] = [""]
    sign_in = NotebookSignIn(ip.state.port, ip.state.router, lambda: str(ip.state.magics.oauth_redirect))

    async def run() -> str:
        loopback: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        asked = threading.Event()
        typed = ip.state.port.input
        assert typed is not None

        def enter(prompt: str) -> str:
            try:
                return typed(prompt)
            finally:
                asked.set()

        ip.state.port.input = enter
        task = asyncio.ensure_future(sign_in("notes", AUTH_URL, loopback))
        assert await asyncio.to_thread(asked.wait, 10)
        await asyncio.sleep(0)
        assert not task.done()
        loopback.set_result(FINAL)
        return await asyncio.wait_for(task, 10)

    assert ip.state.runner.run(run()) == FINAL


def test_a_cancelled_sign_in_ends_its_card_and_leaves_nothing_open(ip: Shell) -> None:
    sign_in = NotebookSignIn(ip.state.port, ip.state.router, lambda: str(ip.state.magics.oauth_redirect))

    async def run() -> None:
        loopback, task = await card_shown(ip, sign_in)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert loopback.cancelled()

    ip.state.runner.run(run())
    assert sign_in.open == []
    assert ip.published.text() == "⊘ notes: not signed in"


@pytest.mark.process
def test_auth_and_logout_name_one_http_server(ip: Shell) -> None:

    with pytest.raises(UsageError, match=r"^%mcp auth: name one server, e.g. %mcp auth notes$"):
        ip.line("mcp", "auth")
    with pytest.raises(UsageError, match=r"^%mcp logout: name one server"):
        ip.line("mcp", "logout a b")
    with pytest.raises(UsageError, match=r"unknown server 'nobody'"):
        ip.line("mcp", "logout nobody")
    ip.line("mcp", f"connect demo -- {demo_server_command()}")
    with pytest.raises(UsageError, match=r"^%mcp auth: demo is a stdio server; only HTTP servers sign in with OAuth$"):
        ip.line("mcp", "auth demo")
    with pytest.raises(UsageError, match=r"^%mcp logout: demo is a stdio server"):
        ip.line("mcp", "logout demo")


@pytest.mark.parametrize(("mode", "environ", "offered"), [
    ("auto", {}, False),
    ("auto", {"SSH_CONNECTION": "10.0.0.1 50000 10.0.0.2 22"}, True),
    ("auto", {"JUPYTERHUB_API_URL": "http://hub:8081/hub/api"}, True),
    ("loopback", {"SSH_CONNECTION": "10.0.0.1 50000 10.0.0.2 22"}, False),
    ("paste", {}, True),
])
def test_the_paste_box_is_offered_where_the_kernel_looks_remote(
    ip: Shell, monkeypatch: pytest.MonkeyPatch, mode: str, environ: dict[str, str], offered: bool,
) -> None:
    for name in ("JUPYTERHUB_API_URL", "JUPYTERHUB_USER", "SSH_CONNECTION", "SSH_CLIENT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    paste_mode(ip, mode)
    ip.answers[:] = [FINAL]
    sign_in = NotebookSignIn(ip.state.port, ip.state.router, lambda: str(ip.state.magics.oauth_redirect))

    async def run() -> str:
        loopback, task = await card_shown(ip, sign_in)
        if not offered:
            loopback.set_result(FINAL)
        return await asyncio.wait_for(task, 10)

    assert ip.state.runner.run(run()) == FINAL
    assert bool(ip.prompts) is offered
    assert ("paste the address" in ip.published.items[0][0]["text/plain"]) is offered


def test_oauth_redirect_takes_only_its_modes(ip: Shell) -> None:
    with pytest.raises(TraitError, match="oauth_redirect must be one of auto, loopback, paste, not 'browser'"):
        ip.state.magics.oauth_redirect = "browser"
    assert ip.state.magics.oauth_redirect == "auto"


def test_a_box_left_open_after_the_browser_came_back_says_to_press_enter(ip: Shell) -> None:
    paste_mode(ip)
    release = threading.Event()
    asked = threading.Event()

    def waits(prompt: str) -> str:  # the user does not touch the box
        asked.set()
        release.wait(10)
        return ""

    ip.state.port.input = waits
    sign_in = NotebookSignIn(ip.state.port, ip.state.router, lambda: str(ip.state.magics.oauth_redirect))

    async def run() -> str:
        loopback: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        task = asyncio.ensure_future(sign_in("notes", AUTH_URL, loopback))
        assert await asyncio.to_thread(asked.wait, 10)
        loopback.set_result(FINAL)
        for _ in range(20):  # let the sign-in see the browser's answer (no I/O: a few loop turns)
            await asyncio.sleep(0)
        release.set()  # the stand-in box returns only now, after the sign-in decided
        return await asyncio.wait_for(task, 10)

    assert ip.state.runner.run(run()) == FINAL
    assert ip.published.text() == ("✓ notes: signed in in the browser; the input box is no longer needed: "
                                   "press Enter in it")
