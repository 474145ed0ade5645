"""No question to the user holds the loop: while tool approval, a form field or sampling approval waits in a
blocking cell, other tasks run and a server's notification arrives.

The line source stands in for the user and answers only once a coroutine it hands to the loop has run
there: when a question held the loop (a blocking `input()` on the loop's thread), that never happens and
the source gives up, failing the test. The kernel-level version is tests/e2e/test_kernel_questions.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from synapse_nb.mcp_client.elicitation import parse_form
from synapse_nb.mcp_client.sampling import SamplingRequest
from synapse_nb.types import Message
from tests.support.nb_shell import Shell, answers_of, demo_server_command

WAIT = 30.0  # seconds the user waits for the loop to run another task (it takes a few milliseconds)

TOOL = """
import synapse_nb

@synapse_nb.tool
def shout(text: str) -> str:
    '''Shout the text.'''
    return text.upper()
"""


class LoopWatcher:
    """A line source answering `answer(prompt)` once another task ran on the loop while the question waited;
    `ran` lists the prompts for which it did, `held` those for which it did not (the loop was held)."""

    def __init__(self, ip: Shell, answer: Callable[[str], str], *, watch: Callable[[str], bool]) -> None:
        self.loop = ip.state.runner.loop
        self.answer = answer
        self.watch = watch
        self.ran: list[str] = []
        self.held: list[str] = []
        ip.state.port.input = self

    def __call__(self, prompt: str) -> str:
        if self.watch(prompt):
            async def another_task() -> None:
                await asyncio.sleep(0)

            try:
                asyncio.run_coroutine_threadsafe(another_task(), self.loop).result(timeout=WAIT)
                self.ran.append(prompt)
            except TimeoutError:
                self.held.append(prompt)
        return self.answer(prompt)


def test_the_loop_runs_while_tool_approval_waits(ip: Shell, script: Callable[[Any], str]) -> None:
    ip.run(TOOL)
    watcher = LoopWatcher(ip, lambda prompt: "y", watch=lambda prompt: prompt.startswith("allow"))
    model = script([{"match": "shout (\\w+)", "tool": "shout", "arguments": {"text": "{1}"},
                     "answer": "It says {result}."}])
    ip.cell(f"synapse --model {model} --approve ask", "shout hi")
    assert watcher.ran == ["allow shout? [y/n/a]: "]
    assert watcher.held == []
    assert ip.ns["_synapse"].text == "It says HI."
    assert ip.ns["_synapse"].tool_calls.approval.tolist() == ["approved"]


def test_the_loop_runs_while_a_form_field_waits(ip: Shell) -> None:
    form = parse_form("srv", "Who are you?", {"type": "object", "properties": {"name": {"type": "string"}},
                                              "required": ["name"]})
    typed = {"fill in the form? [a(ccept)/d(ecline)/c(ancel)]: ": "a", "name (string, required): ": "Ada"}
    watcher = LoopWatcher(ip, typed.__getitem__, watch=lambda prompt: prompt.startswith("name"))
    answer = ip.state.runner.run(answers_of(ip.state).elicit(form))
    assert watcher.ran == ["name (string, required): "]
    assert watcher.held == []
    assert (answer.action, answer.content) == ("accept", {"name": "Ada"})
    assert ip.published.text() == "✓ form from srv: accepted: name=Ada"


def test_the_loop_runs_while_sampling_approval_waits(ip: Shell, tmp_path: Path) -> None:
    sampler = tmp_path / "sampler.json"
    sampler.write_text(json.dumps([{"match": "summarise", "answer": "a summary"}]))
    ip.state.model = f"scripted:{sampler}"
    watcher = LoopWatcher(ip, lambda prompt: "y", watch=lambda prompt: prompt.startswith("let srv"))
    request = SamplingRequest("srv", (Message.user("context: summarise this"),), max_tokens=20)
    assert ip.state.runner.run(answers_of(ip.state).approve_sampling(request)) is True
    assert watcher.ran == [f"let srv use scripted:{sampler}? [y/n]: "]
    assert watcher.held == []


@pytest.mark.process
def test_a_server_withdrawing_its_form_ends_the_open_question(ip: Shell) -> None:
    """A server notification arrives while a form waits in the input box: the server cancels its
    request (`notifications/cancelled` on a 2025-era connection), the question ends, the card says so."""
    ip.line("mcp", f"connect demo -- {demo_server_command()} --legacy")  # --legacy: the server sends requests
    boxed, release = ip.unanswered_box("c")  # the user never answers (until the test is over)
    card_answered = asyncio.Event()
    publish = ip.state.port.publish

    def watch(bundle: dict[str, Any], display_id: str | None, update: bool) -> None:
        publish(bundle, display_id, update)
        if update:
            card_answered.set()

    ip.state.port.publish = watch

    async def cell() -> str:
        call = asyncio.ensure_future(ip.state.hub.call("demo__question", {"message": "Your name?"}))
        assert await asyncio.to_thread(boxed.wait, WAIT), "the form's input box was never asked"
        assert not call.done()
        fired = await ip.state.hub.call("demo__fire", {"signal": "withdraw"})  # the loop runs: a second call
        assert fired.text == "fired withdraw"
        text = (await asyncio.wait_for(call, WAIT)).text
        await asyncio.wait_for(card_answered.wait(), WAIT)  # the cancelled question updates its card as it ends
        return text

    try:
        text = ip.state.runner.run(cell())
    finally:
        release.set()
    assert text == "the question was withdrawn"
    assert ip.prompts == ["fill in the form? [a(ccept)/d(ecline)/c(ancel)]: "]
    assert ip.published.items[-1][0]["text/plain"] == (
        "⊘ form from demo: cancelled by the server: the input box is no longer needed: press Enter in it")
