"""While a blocking cell asks tool approval, the turn's display says it waits for the user (issue 22, section 3):
the tool's line and the activity line say "waiting for your approval", not "waiting to run" / "about to run"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nb_shell import Shell

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
