"""The inspector's server panel shows "Sign in to NAME" while a connect of that server waits for the user."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from synapse_nb.events import Event, ServerEvent
from synapse_nb.notebook.runner import Runner
from synapse_nb.notebook.widgets import Inspector

TIMEOUT = 60
AUTH_URL = "https://as.example/authorize?client_id=c&state=s"


def test_an_open_sign_in_shows_as_a_link_in_the_server_panel(clean_env: Any) -> None:
    from synapse_nb.notebook.state import SynapseState

    loop = asyncio.new_event_loop()
    state = SynapseState(None, runner=Runner(loop))
    state.live = True
    state.publish = lambda bundle, display_id, update: None
    try:
        state.runner.run(state.hub.connect("demo", command=sys.executable,
                                           args=["-m", "synapse_nb.mcp_client.demo_server"]), timeout=TIMEOUT)
        assert state.sign_in is not None
        ins = Inspector(state, "demo")
        panel = ins.panels["demo"]
        assert panel.asking.children == ()
        asked: asyncio.Future[None] = loop.create_future()

        def listener(event: Event) -> None:
            if isinstance(event, ServerEvent) and event.event == "sign_in_asked" and not asked.done():
                asked.set_result(None)

        state.on_server_event(listener)
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
    finally:
        state.close()
        loop.close()
