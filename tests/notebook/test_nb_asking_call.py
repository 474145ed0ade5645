"""A server's question belongs to the tool call that asked it, not the last call started on its server (issue 37, 4).

The agent runs a reply's tool calls concurrently: two calls to one server are in flight at once. A question
(elicitation, sampling) the server asks must show under, and be recorded against, the call that asked it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from synapse_nb.events import ToolCallFinished, ToolCallStarted, utcnow
from synapse_nb.notebook.recording.router import EventRouter
from synapse_nb.types import ToolCall
from tests.support import tools_server
from tests.support.nb_shell import Shell, demo_server_command

T = TypeVar("T")


async def _until(what: str, probe: Callable[[], T | None], timeout: float = 60) -> T:
    """`probe()` once it is not None, giving the loop a turn between tries (the turn runs on this loop)."""
    deadline = time.monotonic() + timeout
    while (found := probe()) is None:
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        await asyncio.sleep(0.01)
    return found


def _reply(tool: str, arguments: dict[str, Any]) -> list[Any]:
    """The model's script: one reply calling `tool` (it asks once fired) and then `echo`, on the same server."""
    return [{"text": "two calls", "tool_calls": [
        {"name": f"srv__{tool}", "arguments": arguments},
        {"name": "srv__echo", "arguments": {"text": "hi"}},
    ]}, "done"]


@pytest.mark.process
def test_a_question_shows_under_the_call_that_asked_it_not_the_last_call_started(
    ip: Shell, script: Callable[[Any], str],
) -> None:
    """The asking call starts first and `echo` after it; `echo` finishes before the question comes. The card
    (a widget: a background run) is cut into the turn at the asking call; it used to go to the cell at large
    (the server's "running call" was `echo`, and ended with it)."""
    ip.line("mcp", f"connect srv -- {demo_server_command()}")
    ip.cell(f"synapse --model {script(_reply('ask_when_fired', {'message': 'Your name?'}))} --background "
            "--approve auto --out job", "go")
    answers = ip.state.answers
    assert answers is not None

    async def scenario() -> tuple[int, int, str]:
        display = await _until("the turn's display", lambda: next(iter(answers.turns), None))
        await _until("echo finished", lambda: next(
            (p for p in display.view.parts if getattr(p, "name", "") == "srv__echo" and p.status == "ok"), None))
        asking = next(i for i, p in enumerate(display.view.parts) if getattr(p, "name", "") == "srv__ask_when_fired")
        await ip.state.hub.call("srv__fire", {"signal": "ask"})
        (widget,) = await _until("the question's widget", lambda: answers.asking or None)
        cut_at = display.view.first
        widget.decline_button.click()
        result = await asyncio.wait_for(ip.ns["job"], 60)
        return asking, cut_at, result.tool_calls.result_text.tolist()[0]

    # on the loop, not through `runner.run`: no cell blocks on it, so the question is a widget (as in a background run)
    asking, cut_at, answered = ip.state.runner.loop.run_until_complete(scenario())
    assert asking > 0  # the reply's text comes first: a cut at the call shows
    assert cut_at == asking, "the card was not placed at the call that asked"
    assert answered == "answer: decline"


@pytest.mark.process
def test_a_sampling_request_is_recorded_against_the_call_that_made_it(
    ip: Shell, script: Callable[[Any], str], tmp_path: Path,
) -> None:
    """The same two calls, the first one sampling the kernel's model: the LLM call is tied to it in the history
    (it used to be tied to no call: `echo`, started last, had ended)."""
    sampler = tmp_path / "sampler.json"
    sampler.write_text(json.dumps([{"match": "summarise", "answer": "a summary"}]))
    ip.state.models.model = f"scripted:{sampler}"
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"srv": {
        "command": sys.executable, "args": list(tools_server.ARGS), "sampling": "auto"}}}))
    ip.line("mcp", f"connect --config {config}")
    ip.cell(f"synapse --model {script(_reply('sample_when_fired', {'prompt': 'summarise this'}))} --background "
            "--approve auto --out job", "go")
    answers = ip.state.answers
    assert answers is not None

    async def scenario() -> Any:
        display = await _until("the turn's display", lambda: next(iter(answers.turns), None))
        await _until("echo finished", lambda: next(
            (p for p in display.view.parts if getattr(p, "name", "") == "srv__echo" and p.status == "ok"), None))
        await ip.state.hub.call("srv__fire", {"signal": "ask"})
        return await asyncio.wait_for(ip.ns["job"], 60)

    result = ip.state.runner.run(scenario())
    calls = result.tool_calls.set_index("tool")
    assert calls.loc["sample_when_fired", "result_text"] == "sampled: a summary"
    ip.state.store.flush()
    rows = ip.state.store.history().sql("SELECT origin, tool_call_id FROM llm_calls WHERE origin LIKE 'sampling:%'")
    assert rows.origin.tolist() == ["sampling:srv"]
    assert rows.tool_call_id.tolist() == [calls.loc["sample_when_fired", "tool_call_id"]]


def _no_store() -> Any:
    raise AssertionError("a turn run with --no-history records nothing")


def test_a_request_with_no_link_to_its_call_is_tied_only_when_one_call_runs_on_its_server() -> None:
    """A 2025-era server's request arrives outside the calls' tasks and names no call: it is tied to the one call
    running on that server, and to none when two run there (not to the last one started)."""
    router = EventRouter(store=_no_store, tracing=lambda: None)
    sink = router.history_sink(False)
    first, second, other = ToolCall("c1", "srv__a", {}), ToolCall("c2", "srv__b", {}), ToolCall("c3", "x__c", {})
    for call, server in ((first, "srv"), (other, "x")):
        sink(ToolCallStarted(session_id="s", call=call, server=server, tool=call.name, approval="auto"))
    only = router.asking_call("srv")
    assert only is not None
    assert only.call_id == "c1"
    sink(ToolCallStarted(session_id="s", call=second, server="srv", tool="b", approval="auto"))
    assert router.asking_call("srv") is None
    with router.calling("c2"):  # a 2026 question: asked in the task of the call that asked it
        assert router.asking_call("srv") == router._running["c2"]
        assert router.asking_call("x") is not None  # another server's request: its own only call
    sink(ToolCallFinished(session_id="s", call=second, server="srv", tool="b", approval="auto",
                          started_at=utcnow(), duration_ms=1.0))
    running = router.asking_call("srv")
    assert running is not None
    assert (running.call_id, running.recorded) == ("c1", False)
