"""While a blocking cell asks the user (tool approval, a server's form), its running line says it waits for the
user (issue 22, section 3): "waiting for your approval" on the tool's line and the activity line, not "waiting
to run" / "about to run"; "waiting for your answer" with the time waited while a form is in the input box."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.nb_shell import Shell, demo_server_command

WAIT = 30.0  # seconds a line source waits for the running line to say it waits (it takes a tick, 0.25 s)

TOOL = """
import synapse_nb

@synapse_nb.tool
def shout(text: str) -> str:
    '''Shout the text.'''
    return text.upper()
"""


def test_the_turn_says_it_waits_for_your_approval_until_answered(ip: Shell, script: Callable[[Any], str]) -> None:
    ip.run(TOOL)
    seen: list[str] = []

    def answer(prompt: str) -> str:
        live = [b["text/plain"] for b, _id, _update in ip.published.items if "-- running" in b.get("text/plain", "")]
        seen.append(live[-1])
        return "y"

    ip.state.port.input = answer
    model = script([{"match": "shout (\\w+)", "tool": "shout", "arguments": {"text": "{1}"},
                     "answer": "It says {result}."}])
    ip.cell(f"synapse --model {model} --approve ask", "shout hi")
    assert len(seen) == 1
    assert "waiting for your approval of shout · " in seen[0]  # the activity line
    assert "about to run" not in seen[0]
    assert "waiting to run" not in seen[0]
    final = ip.published.text()
    assert "waiting for your approval" not in final
    assert "[tool] shout(text=\"hi\")" in final
    assert ip.ns["_synapse"].text == "It says HI."


def _answer_once_shown(ip: Shell, text: str, answers: dict[str, str]) -> Callable[[str], str]:
    """A line source that answers `answers[prompt...]` only once a live output said `text` while the box was
    open (the running line re-rendered during the wait), else gives up with "c" after WAIT seconds."""
    import time

    def answer(prompt: str) -> str:
        start = len(ip.published.items)
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if any(text in b.get("text/plain", "") for b, _id, _u in ip.published.items[start:]):
                return next(v for k, v in answers.items() if prompt.startswith(k))
            threading.Event().wait(0.02)
        return "c"

    return answer


@pytest.mark.process
def test_a_call_waiting_on_a_form_says_it_waits_for_your_answer(ip: Shell) -> None:
    """Issue 22, section 3: the header stayed at "calling ... 0 ms" while a server's form waited in the box."""
    ip.line("mcp", f"connect demo -- {demo_server_command()} --legacy")  # --legacy: the server sends requests
    ip.state.port.input = _answer_once_shown(ip, "waiting for your answer · ", {"fill": "a", "name": "Ada"})
    out = ip.line("mcp", 'call demo.question message="Your name?"')
    assert out.text == "answer: accept name=Ada"
    waiting = [b["text/plain"] for b, _id, _u in ip.published.items if "waiting for your answer" in b["text/plain"]]
    assert waiting[0].startswith("calling demo.question … ")
    assert ip.state.port.asking_since is None  # nothing waits once answered


@pytest.mark.process
def test_a_turn_waiting_on_a_form_says_it_waits_for_your_answer(ip: Shell, script: Callable[[Any], str]) -> None:
    ip.line("mcp", f"connect demo -- {demo_server_command()} --legacy")
    ip.state.port.input = _answer_once_shown(ip, "waiting for your answer · ", {"fill": "a", "name": "Ada"})
    model = script([{"match": "ask", "tool": "demo__question", "arguments": {"message": "Your name?"},
                     "answer": "It says {result}."}])
    ip.cell(f"synapse --model {model} --approve auto", "ask me")
    assert ip.ns["_synapse"].text == "It says answer: accept name=Ada."
    live = [b["text/plain"] for b, _id, _u in ip.published.items if "waiting for your answer · " in b["text/plain"]]
    assert live
    assert "-- running" in live[0]  # the turn's running display
