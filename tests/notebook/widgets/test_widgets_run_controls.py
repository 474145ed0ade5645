"""RunControls: approvals answered by clicks, one at a time; Stop; status from events; finish."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
from typing import Any

import pytest

from synapse_nb.events import (
    LlmCallFinished,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    TurnFailed,
    TurnFinished,
    TurnStarted,
)
from synapse_nb.notebook.widgets import RunControls
from synapse_nb.types import ToolCall, ToolResult, Usage
from tests.notebook.widgets.widget_fakes import ECHO_SCHEMA, spec
from tests.support.untrusted import unstyled

pytestmark = pytest.mark.anyio

DROP = spec("drop_table", {"type": "object"}, annotations={"destructiveHint": True})
ECHO = spec("echo", ECHO_SCHEMA)


async def settled(*tasks: asyncio.Task[str]) -> list[str]:
    async with asyncio.timeout(5):
        return list(await asyncio.gather(*tasks))


async def pending(controls: RunControls, n: int) -> None:
    """Let the new ask() tasks take their first step, where they register (tasks start in FIFO order)."""
    await asyncio.sleep(0)
    assert len(controls.pending) == n


async def test_ask_shows_the_request_and_resolves_on_approve() -> None:
    controls = RunControls(on_stop=lambda: None)
    assert controls.approval_box not in controls.children
    task = asyncio.create_task(controls.ask(DROP, {"table": "orders", "note": "<x>"}))
    await pending(controls, 1)
    assert controls.approval_box in controls.children
    view = controls.request_view.value
    assert "drop_table" in view
    assert "destructive" in view
    assert "&quot;orders&quot;" in view
    assert "&lt;x&gt;" in view
    controls.approve_button.click()
    assert await settled(task) == ["yes"]
    assert controls.approval_box not in controls.children
    assert controls.answers == (("demo__drop_table", "yes"),)


async def test_the_status_says_it_waits_for_your_approval_until_answered() -> None:
    controls = RunControls(on_stop=lambda: None)
    controls.on_event(LlmCallFinished(session_id="s", llm_call_id="l", provider="scripted", model="demo",
                                      started_at=dt.datetime(2025, 1, 1), duration_ms=557, usage=Usage(10, 5)))
    task = asyncio.create_task(controls.ask(DROP, {"table": "orders"}))
    await pending(controls, 1)
    assert "waiting for your approval of drop_table" in controls.status_label.value
    assert "model answered" not in controls.status_label.value
    assert "waiting for your approval of drop_table" in controls.snapshot()[1]
    controls.approve_button.click()
    assert await settled(task) == ["yes"]
    assert "waiting for your approval" not in controls.status_label.value


@pytest.mark.parametrize(("button", "answer"), [("deny_button", "no"), ("always_button", "always")])
async def test_deny_and_always(button: str, answer: str) -> None:
    controls = RunControls(on_stop=lambda: None)
    task = asyncio.create_task(controls.ask(ECHO, {"text": "hi"}))
    await pending(controls, 1)
    getattr(controls, button).click()
    assert await settled(task) == [answer]


async def test_requests_queue_and_are_shown_one_at_a_time() -> None:
    controls = RunControls(on_stop=lambda: None)
    first = asyncio.create_task(controls.ask(ECHO, {"text": "one"}))
    second = asyncio.create_task(controls.ask(DROP, {"table": "t"}))
    await pending(controls, 2)
    assert "one" in controls.request_view.value
    assert "drop_table" not in controls.request_view.value
    assert "1 more waiting" in controls.queue_label.value
    controls.deny_button.click()
    assert await settled(first) == ["no"]
    assert "drop_table" in controls.request_view.value
    assert controls.queue_label.value == ""
    assert not second.done()
    controls.approve_button.click()
    assert await settled(second) == ["yes"]


async def test_always_also_answers_the_same_tool_waiting_further_down() -> None:
    controls = RunControls(on_stop=lambda: None)
    a = asyncio.create_task(controls.ask(ECHO, {"text": "a"}))
    b = asyncio.create_task(controls.ask(DROP, {"table": "t"}))
    c = asyncio.create_task(controls.ask(ECHO, {"text": "c"}))
    await pending(controls, 3)
    controls.always_button.click()
    assert await settled(a, c) == ["always", "always"]
    assert not b.done()
    assert len(controls.pending) == 1
    controls.deny_button.click()
    assert await settled(b) == ["no"]


async def test_stop_calls_on_stop_and_a_cancelled_ask_leaves_the_queue() -> None:
    stops: list[bool] = []
    controls = RunControls(on_stop=lambda: stops.append(True))
    task = asyncio.create_task(controls.ask(ECHO, {"text": "a"}))
    await pending(controls, 1)
    controls.stop_button.click()
    assert stops == [True]
    assert controls.stop_button.disabled
    assert controls.status == "stopping"
    task.cancel()  # what stopping the run does to the turn awaiting approval
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)  # the future's done-callback
    assert controls.pending == ()
    assert controls.approval_box not in controls.children


async def test_finish_denies_what_is_pending_and_later_asks() -> None:
    controls = RunControls(on_stop=lambda: None)
    task = asyncio.create_task(controls.ask(ECHO, {"text": "a"}))
    await pending(controls, 1)
    controls.finish("cancelled", "after 2 s")
    assert await settled(task) == ["no"]
    assert await controls.ask(ECHO, {}) == "no"
    assert controls.stop_button.disabled
    assert controls.stop_button.layout.display == "none"
    assert controls.status == "cancelled"
    assert "snb-b-amber" in controls.status_label.value
    assert "after 2 s" in controls.status_label.value


async def test_a_click_on_another_thread_is_answered_on_the_run_loop() -> None:
    controls = RunControls(on_stop=lambda: None)
    task = asyncio.create_task(controls.ask(ECHO, {"text": "a"}))
    await pending(controls, 1)
    seen: list[Any] = []

    def click() -> None:  # as JupyterLab's comm subshell delivers it
        controls.approve_button.click()
        seen.append(len(controls.pending))

    thread = threading.Thread(target=click)
    thread.start()
    thread.join(5)
    assert seen == [1]  # handed over, not handled on the foreign thread
    assert await settled(task) == ["yes"]


def test_status_follows_the_agent_events() -> None:
    controls = RunControls(on_stop=lambda: None)
    now = dt.datetime(2025, 1, 1)
    call = ToolCall("c1", "demo__echo", {"text": "x"})
    controls.on_event(TurnStarted(session_id="s", turn_id="t", prompt="p", model="m"))
    assert "waiting for the model" in controls.status_label.value
    controls.on_event(LlmCallFinished(session_id="s", llm_call_id="l", provider="scripted", model="demo",
                                      started_at=now, duration_ms=120, usage=Usage(10, 5)))
    assert "15 tokens" in controls.status_label.value
    controls.on_event(ToolCallStarted(session_id="s", call=call, server="demo", tool="echo", approval="auto"))
    assert "calling echo" in controls.status_label.value
    controls.on_event(ToolCallProgress(session_id="s", call_id="c1", progress=1, total=4, message="warming up"))
    assert "echo: 25% warming up" in controls.status_label.value
    controls.on_event(ToolCallFinished(session_id="s", call=call, server="demo", tool="echo", approval="auto",
                                       started_at=now, duration_ms=8, result=ToolResult.error("no")))
    assert "echo failed" in controls.status_label.value
    controls.on_event(TurnFinished(session_id="s", turn_id="t", text="done", iterations=2, usage=Usage(),
                                   duration_ms=900))
    assert controls.status == "finished"
    assert controls.finished
    assert "snb-b-green" in controls.status_label.value
    controls.on_event(TurnStarted(session_id="s", turn_id="t2", prompt="p", model="m"))
    assert controls.status == "finished"  # a finished run's controls stay finished
    controls.finish("finished")  # the handle says it again, with less to say
    assert "2 iteration(s)" in controls.status_label.value


def test_a_failed_turn_shows_its_error() -> None:
    controls = RunControls(on_stop=lambda: None)
    controls.on_event(TurnFailed(session_id="s", turn_id="t", error="rate limited", error_type="RateLimitError",
                                 iterations=1, usage=Usage(), duration_ms=5))
    assert controls.status == "failed"
    assert "rate limited" in controls.status_label.value
    assert "snb-b-red" in controls.status_label.value


async def test_the_snapshot_shows_the_status_and_a_waiting_approval_and_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    controls = RunControls(on_stop=lambda: None)
    bundle = controls._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == "background run: running"
    task = asyncio.ensure_future(controls.ask(DROP, {"table": "orders"}))
    await pending(controls, 1)
    bundle = controls._repr_mimebundle_()
    assert "Approve this tool call?" in bundle["text/html"]
    assert "destructive" in bundle["text/html"]
    assert "waiting for approval: demo__drop_table {'table': 'orders'}" in bundle["text/plain"]

    updates: list[tuple[str, str]] = []

    def update_display(bundle: dict[str, Any], *, raw: bool, display_id: str) -> None:
        updates.append((display_id, bundle["text/plain"]))

    monkeypatch.setattr("IPython.display.update_display", update_display)
    controls._snapshot_id = "snapshot-output"  # as displayed (Snapshot._ipython_display_)
    controls.finish("cancelled", "after 2.0 s")
    assert await settled(task) == ["no"]
    # the saved snapshot output says how it ended
    assert updates == [("snapshot-output", "background run: cancelled · after 2.0 s")]


async def test_the_snapshot_is_styled_inline_so_it_reads_well_where_style_blocks_are_stripped() -> None:
    controls = RunControls(on_stop=lambda: None)
    task = asyncio.ensure_future(controls.ask(DROP, {"table": "orders"}))
    await pending(controls, 1)
    html = controls._repr_mimebundle_()["text/html"]
    assert "snb-card" in html
    assert unstyled(html) == []
    controls.finish("cancelled", "")
    assert await settled(task) == ["no"]
