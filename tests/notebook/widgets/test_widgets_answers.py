"""What a server does while an inspector or background call waits, against the demo server in the 2025 era
(`--legacy`: the server sends requests of its own and may cancel them): progress in the tool panel, a URL
question the server completes, a question the server withdraws."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import ipywidgets as w
import pytest

import synapse_nb
from synapse_nb.events import Event, ServerEvent
from synapse_nb.notebook.state import SynapseState
from synapse_nb.notebook.widgets.elicit_form import ElicitationWidget
from synapse_nb.notebook.widgets.tool_panel import ToolPanel
from tests.notebook.widgets.real_state import go_live, private_state
from tests.support import tools_server

pytestmark = pytest.mark.process

DEMO = [sys.executable, *tools_server.ARGS, "--legacy"]
# the server child gets only a safe environment: point it at this checkout's package explicitly
DEMO_ENV = {"PYTHONPATH": str(Path(synapse_nb.__file__).resolve().parents[1])}
TIMEOUT = 60
T = TypeVar("T")


@pytest.fixture
def state(clean_env: Any) -> Iterator[SynapseState]:
    """The notebook's own facade and answers, live as in a kernel (no shell: bundles are collected)."""
    with private_state() as synapse:
        go_live(synapse)
        synapse.runner.run(synapse.hub.connect("demo", command=DEMO[0], args=DEMO[1:], env=DEMO_ENV), timeout=TIMEOUT)
        assert synapse.hub.servers[0].protocol_version == "2025-11-25"
        yield synapse


def drive(state: SynapseState, awaitable: Awaitable[T]) -> T:
    """Run the loop until `awaitable` is done, as the kernel runs it between cells (no cell waits on stdin)."""
    return state.runner.loop.run_until_complete(asyncio.wait_for(awaitable, TIMEOUT))


def asked(state: SynapseState) -> ElicitationWidget:
    """Drive the loop until a question is shown as a widget; returns it."""
    seen: asyncio.Future[None] = state.runner.loop.create_future()

    def listener(event: Event) -> None:
        if isinstance(event, ServerEvent) and event.event == "elicitation_asked" and not seen.done():
            seen.set_result(None)

    unsubscribe = state.on_server_event(listener)
    try:
        drive(state, seen)
    finally:
        unsubscribe()
    assert state.answers is not None
    (widget,) = state.answers.asking
    assert isinstance(widget, ElicitationWidget)
    return widget


def fire(state: SynapseState, signal: str) -> None:
    """Release the demo tool waiting on `signal` (a second call on the same connection)."""
    assert drive(state, state.hub.call("demo__fire", {"signal": signal})).text == f"fired {signal}"


def html_of(children: Any) -> str:
    return "".join(c.value for c in children if isinstance(c, w.HTML))


def test_inspector_call_shows_the_servers_progress_like_a_tool_block(state: SynapseState) -> None:
    panel = ToolPanel(state, state.hub.tool("demo__progress_held"))
    shown: list[str] = []
    reached: asyncio.Future[None] = state.runner.loop.create_future()

    def watch(change: dict[str, Any]) -> None:
        shown.append(html_of(change["new"]))
        if "indexing 3 of 3" in shown[-1] and not reached.done():
            reached.set_result(None)

    panel.result.observe(watch, "children")
    panel.form.load({"steps": 3, "message": "indexing"})
    panel.call_button.click()
    drive(state, reached)  # the call still waits for "release": the bar is what the panel shows now
    bars = [h for h in shown if "snb-progress" in h]
    assert [h.split('value="')[1][:5] for h in bars] == ["0.333", "0.667", "1.000"]
    assert "33% indexing 1 of 3" in bars[0]
    assert "calling progress_held …" in bars[-1]
    fire(state, "release")
    drive(state, panel.task)
    final = html_of(panel.result.children)
    assert "done after 3 steps" in final
    assert "snb-progress" not in final
    assert panel.call_button.disabled is False


def test_url_question_closed_by_the_servers_completion(state: SynapseState) -> None:
    url = "https://example.com/sign-in"
    call = state.runner.spawn(state.call_tool("demo__sign_in", {"url": url}))
    widget = asked(state)
    assert widget.accept_button.description == "Done"
    assert f'href="{url}"' in html_of(widget.children)
    fire(state, "complete")  # notifications/elicitation/complete for this question's id
    result = drive(state, call)
    assert result.text.endswith(": accept")  # the server was answered without the user confirming
    assert "completed by the server" in widget.status.value
    assert all(b.disabled for b in (widget.accept_button, widget.decline_button, widget.cancel_button))
    widget.decline_button.click()  # too late: nothing changes
    assert widget.done.result().action == "accept"
    assert state.answers is not None
    assert state.answers.asking == []
    history = state.history()
    assert history is not None
    events = history.sql("SELECT event, detail FROM server_events WHERE event LIKE 'elicitation%' ORDER BY \"at\"")
    assert list(events.event) == ["elicitation_complete", "elicitation"]
    assert json.loads(events.detail.iloc[-1]) == {"mode": "url", "message": "Sign in to the shop", "action": "accept",
                                                  "by": "server"}


def test_question_withdrawn_by_the_server_closes_its_widget(state: SynapseState) -> None:
    call = state.runner.spawn(state.call_tool("demo__question", {"message": "Who are you?"}))
    widget = asked(state)
    assert widget.form is not None
    fire(state, "withdraw")  # the server cancels its elicitation request (notifications/cancelled)
    drive(state, asyncio.shield(widget.done))
    assert drive(state, call).text == "the question was withdrawn"
    assert widget.done.result().action == "cancel"
    assert "cancelled by the server" in widget.status.value
    assert all(b.disabled for b in (widget.accept_button, widget.decline_button, widget.cancel_button))
    widget.form.load({"name": "Ada"})
    widget.accept_button.click()  # a late answer is ignored
    assert widget.done.result().action == "cancel"
    assert "cancelled by the server" in widget.status.value
    assert state.answers is not None
    assert state.answers.asking == []
    history = state.history()
    assert history is not None
    detail = history.sql("SELECT detail FROM server_events WHERE event = 'elicitation'").detail
    assert [json.loads(d) for d in detail] == [
        {"mode": "form", "message": "Who are you?", "action": "cancel", "by": "server"}]


def test_question_answered_through_the_widget_still_works(state: SynapseState) -> None:
    call = state.runner.spawn(state.call_tool("demo__question", {"message": "Who are you?"}))
    widget = asked(state)
    assert widget.form is not None
    widget.form.load({"name": "Grace"})
    widget.accept_button.click()
    assert drive(state, call).text == "answer: accept name=Grace"
    assert "accepted: name=Grace" in widget.status.value


def test_inspector_badge_and_recent_calls_agree_when_the_call_restarted_the_server(state: SynapseState) -> None:
    """Issue 22, section 5: the result badge showed the server's own time (8 ms) and the Recent-calls row the
    whole call's (1.04 s) when the call first restarted the crashed server. Both show the recorded duration
    now, and the badge says what it includes."""
    from synapse_nb.errors import SynapseError
    from synapse_nb.notebook.widgets._html import fmt_ms

    with pytest.raises(SynapseError):
        drive(state, state.call_tool("demo__crash", {}))
    assert state.hub.server("demo").state == "crashed"
    panel = ToolPanel(state, state.hub.tool("demo__echo"))
    panel.form.load({"text": "again"})
    panel.call_button.click()
    drive(state, panel.task)
    assert state.hub.server("demo").restarts == 1
    shown = html_of(panel.result.children)
    assert "again" in shown
    row = panel.history.rows[0]
    assert f"{fmt_ms(row['duration_ms'])}, incl. restarting the server" in shown, (shown, row)

    panel.call_button.click()  # a call with nothing restarted: the same recorded duration, no note
    drive(state, panel.task)
    shown = html_of(panel.result.children)
    assert "incl. restarting" not in shown
    assert f">{fmt_ms(panel.history.rows[0]['duration_ms'])}<" in shown, shown
