"""Questions in a real kernel (jupyter_client) never hold its loop: tool approval and a server's form field are
answered through input_request while a task on the kernel's loop goes on ticking; an interrupt with the box
open ends the cell in one line, and the kernel's stdin works after.

A task started in an earlier cell writes a counter to a file from the kernel's loop. The test plays a
frontend that answers an input request only once the counter moved while the box was open: with a
question that held the loop (ipykernel's blocking `input()`), it never moves and the frontend says no.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import synapse_nb
from tests.support import tools_server
from tests.support.kernel_session import Kernel, loaded_kernel

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.kernel]

ROOT = Path(synapse_nb.__file__).resolve().parents[1]
# the server child gets only a safe environment: point it at this checkout's package explicitly
DEMO = (f"%mcp connect demo --env PYTHONPATH={ROOT} -- {tools_server.COMMAND} "
        "--legacy")  # --legacy: the server sends requests of its own (a form)
TIMEOUT = 60.0
TICKER = """
import asyncio, pathlib
async def _tick(path=pathlib.Path('ticks')):
    n = 0
    while True:
        n += 1
        path.write_text(str(n))
        await asyncio.sleep(0.02)
_ticker = asyncio.ensure_future(_tick())
"""
TOOL = """
import synapse_nb

@synapse_nb.tool
def shout(text: str) -> str:
    '''Shout the text.'''
    return text.upper()
"""
SHOUT = [{"match": "shout (\\w+)", "tool": "shout", "arguments": {"text": "{1}"}, "answer": "It says {result}."}]
ASKS = [{"match": "ask me", "tool": "question", "arguments": {"message": "Your name?"}, "answer": "Got {result}."}]
FORM = "fill in the form? [a(ccept)/d(ecline)/c(ancel)]: "


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kernel")


@pytest.fixture(scope="module")
def kernel(folder: Path) -> Iterator[Kernel]:
    with loaded_kernel(folder) as k:
        assert k.ok(DEMO, timeout=120).text().startswith("✓ demo: connected")
        k.ok(TOOL)
        (folder / "shout.json").write_text(json.dumps(SHOUT))
        (folder / "asks.json").write_text(json.dumps(ASKS))
        k.ok(TICKER)
        yield k
        k.ok("_ticker.cancel()")


class Frontend:
    """Answers input requests with `answers[prompt]`, once the kernel's loop ticked while the box was open."""

    def __init__(self, folder: Path, answers: dict[str, str]) -> None:
        self.ticks = folder / "ticks"
        self.answers = answers
        self.ticked: list[str] = []  # prompts during which the loop ran
        self.held: list[str] = []  # prompts during which it did not

    def _count(self) -> int:
        text = self.ticks.read_text() if self.ticks.exists() else ""
        return int(text) if text.strip().isdigit() else 0  # a write may be under way

    def __call__(self, prompt: str) -> str:
        before, deadline = self._count(), time.monotonic() + 20
        while time.monotonic() < deadline:
            if self._count() >= before + 3:
                self.ticked.append(prompt)
                return self.answers.get(prompt, "")
            time.sleep(0.01)
        self.held.append(prompt)
        return "n"


def test_tool_approval_is_answered_while_the_loop_runs(kernel: Kernel, folder: Path) -> None:
    frontend = Frontend(folder, {"allow shout? [y/n/a]: ": "y"})
    run = kernel.ok("%%synapse --model scripted:shout.json --approve ask --session approvals\nshout hi",
                    allow_stdin=True, answer=frontend)
    assert run.prompts == ["allow shout? [y/n/a]: "]
    assert frontend.ticked == run.prompts
    assert frontend.held == []
    assert "It says HI." in run.text()
    assert "✓ shout: approved" in run.text()


def test_a_form_field_is_answered_while_the_loop_runs(kernel: Kernel, folder: Path) -> None:
    frontend = Frontend(folder, {"fill in the form? [a(ccept)/d(ecline)/c(ancel)]: ": "a",
                                 'name "Name" (string, required): ': "Ada"})
    run = kernel.ok('%mcp call demo.question message="Your name?"', allow_stdin=True, answer=frontend)
    assert run.prompts == ["fill in the form? [a(ccept)/d(ecline)/c(ancel)]: ",
                           'name "Name" (string, required): ']
    assert frontend.ticked == run.prompts
    assert frontend.held == []
    assert "✓ form from demo: accepted: name=Ada" in run.text()
    assert "answer: accept name=Ada" in run.text()


TURN_CANCELLED = "the turn was cancelled; servers stay connected and the transcript so far is kept (see _synapse)"
ASKING_TURN = "%%synapse --model scripted:asks.json --approve auto --session asked\nask me"


@pytest.mark.parametrize(("cell", "answered", "prompt", "line"), [
    ("%%synapse --model scripted:shout.json --approve ask --session interrupted\nshout hi", [],
     "allow shout? [y/n/a]: ", TURN_CANCELLED),
    ('%mcp call demo.question message="Your name?"', [], FORM,
     "the call of demo.question was cancelled; the server stays connected"),
    # issue 22, section 3: a server's form in a blocking %%synapse cell, interrupted at its first prompt and at
    # a field's: no further input request (a live box nobody answers) follows the interrupt
    (ASKING_TURN, [], FORM, TURN_CANCELLED),
    (ASKING_TURN, ["a"], 'name "Name" (string, required): ', TURN_CANCELLED),
])
def test_an_interrupt_with_the_box_open_ends_the_cell_in_one_line(kernel: Kernel, cell: str, answered: list[str],
                                                                  prompt: str, line: str) -> None:
    msg_id = kernel.kc.execute(cell, allow_stdin=True, store_history=False)
    for answer in answered:
        kernel.kc.get_stdin_msg(timeout=TIMEOUT)
        kernel.kc.input(answer)
    request = kernel.kc.get_stdin_msg(timeout=TIMEOUT)  # left unanswered
    assert request["parent_header"]["msg_id"] == msg_id
    assert request["content"]["prompt"] == prompt
    kernel.km.interrupt_kernel()
    (run,) = kernel.gather([msg_id], timeout=TIMEOUT)
    assert run.status == "error"
    error = run.error or {}
    assert error.get("evalue") == line, error
    assert error.get("traceback") == [f"\x1b[0;31mKeyboardInterrupt\x1b[0m: {line}"], error  # one line
    assert "Traceback" not in run.stderr
    asked = kernel.ok("print('got', input('name? '))", allow_stdin=True, answer=lambda prompt: "Ada")
    # the kernel's stdin works after, and the interrupted cell asked nothing more (no box left to answer)
    assert asked.prompts == ["name? "]
    assert asked.stdout.strip() == "got Ada"


def reply(kernel: Kernel, request: dict[str, object], value: str) -> None:
    """Answer one input request as JupyterLab does: the reply names the request it answers."""
    kernel.kc.stdin_channel.send(kernel.kc.session.msg("input_reply", {"value": value}, parent=request))


def test_the_box_an_interrupt_left_behind_does_not_answer_a_later_question(kernel: Kernel) -> None:
    """Issue 22, section 3: an interrupt leaves the frontend's input box open (the protocol has no way to take
    an input request back; no new request follows the interrupt, see the test above). Typed into later, that
    box's reply names the old request: it must not answer the question a later cell asks meanwhile."""
    msg_id = kernel.kc.execute(ASKING_TURN, allow_stdin=True, store_history=False)
    left = kernel.kc.get_stdin_msg(timeout=TIMEOUT)
    assert left["content"]["prompt"] == FORM
    kernel.km.interrupt_kernel()
    (run,) = kernel.gather([msg_id], timeout=TIMEOUT)
    assert run.status == "error"
    msg_id = kernel.kc.execute("%%synapse --model scripted:shout.json --approve ask --session late\nshout hi",
                               allow_stdin=True, store_history=False)
    asked = kernel.kc.get_stdin_msg(timeout=TIMEOUT)
    assert asked["content"]["prompt"] == "allow shout? [y/n/a]: "
    reply(kernel, left, "y")  # the user types into the old box: it answers nothing now
    reply(kernel, asked, "n")
    (run,) = kernel.gather([msg_id], timeout=TIMEOUT)
    assert "⊘ shout: denied" in run.text(), run.text()
