"""The inspector's server panel shows "Sign in to NAME" while a connect of that server waits for the user."""

from __future__ import annotations

import asyncio
import html
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from synapse_nb.events import Event, ServerEvent
from synapse_nb.notebook.widgets import Inspector
from tests.notebook.widgets.real_state import go_live, private_state
from tests.support.oauth_server import follow, serve

if TYPE_CHECKING:
    from synapse_nb.notebook.state import SynapseState

TIMEOUT = 60
AUTH_URL = "https://as.example/authorize?client_id=c&state=s"


def sign_in_asked(state: SynapseState, loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
    """Done once the state's hub asks a user to sign in (its first `sign_in_asked` server event)."""
    asked: asyncio.Future[None] = loop.create_future()

    def listener(event: Event) -> None:
        if isinstance(event, ServerEvent) and event.event == "sign_in_asked" and not asked.done():
            asked.set_result(None)

    state.on_server_event(listener)
    return asked


@contextmanager
def live_state() -> Iterator[tuple[SynapseState, asyncio.AbstractEventLoop]]:
    """A live SynapseState on a private loop, and that loop; closed with its hub when the block ends."""
    with private_state() as state:
        go_live(state)
        yield state, state.runner.loop


@pytest.mark.process
def test_an_open_sign_in_shows_as_a_link_in_the_server_panel(clean_env: Any) -> None:
    with live_state() as (state, loop):
        state.runner.run(state.hub.connect("demo", command=sys.executable,
                                           args=["-m", "synapse_nb.mcp_client.demo_server"]), timeout=TIMEOUT)
        assert state.sign_in is not None
        ins = Inspector(state, "demo")
        panel = ins.panels["demo"]
        assert panel.asking.children == ()
        asked = sign_in_asked(state, loop)
        loopback: asyncio.Future[str] = loop.create_future()
        task = state.runner.spawn(state.sign_in("demo", AUTH_URL, loopback))
        loop.run_until_complete(asyncio.wait_for(asked, TIMEOUT))
        loop.run_until_complete(asyncio.sleep(0))  # the inspector re-reads the hub on the loop (call_on)
        (link,) = panel.asking.children
        assert "Sign in to demo" in link.value
        assert 'href="https://as.example/authorize?client_id=c&amp;state=s"' in link.value
        loopback.set_result("http://127.0.0.1:1/callback?code=x&state=s")
        loop.run_until_complete(asyncio.wait_for(task, TIMEOUT))
        loop.run_until_complete(asyncio.sleep(0))
        assert panel.asking.children == ()
        ins.close()


def test_the_panel_links_to_a_real_sign_in_and_drops_it_once_connected(clean_env: Any, tmp_path: Path) -> None:
    """A real hub connecting to tests/support/oauth_server.py: the inspector lists the server while it waits for the
    user, with the link; following it (as a browser would) connects, and the link leaves the panel."""
    from synapse_nb.mcp_client.oauth.storage import TokenStore

    with serve() as server, live_state() as (state, loop):  # the hub closes first, the server after it
        state.hub.token_store = TokenStore(tmp_path / "tokens", backend="file")  # never the user's keyring
        ins = Inspector(state)
        asked = sign_in_asked(state, loop)
        connecting = state.runner.spawn(state.hub.connect("notes", url=server.url))
        loop.run_until_complete(asyncio.wait_for(asked, TIMEOUT))
        loop.run_until_complete(asyncio.sleep(0))
        panel = ins.panels["notes"]
        (link,) = panel.asking.children
        href = html.unescape(re.search(r'href="([^"]+)"', link.value).group(1))  # type: ignore[union-attr]
        assert href.startswith(f"{server.origin}/authorize?")
        # the AS redirects to the loopback listener, which answers (a refusal would raise)
        final = loop.run_until_complete(asyncio.to_thread(follow, href))
        assert "/callback?code=" in final
        info = loop.run_until_complete(asyncio.wait_for(connecting, TIMEOUT))
        assert info.state == "connected"
        loop.run_until_complete(asyncio.sleep(0))
        assert panel.asking.children == ()
        ins.close()
