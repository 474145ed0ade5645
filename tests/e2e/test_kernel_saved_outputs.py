"""What a saved notebook keeps of a command's live output (issue 38, item 9): at the command's end its emptied
live line is cleared away and what the cell showed is sent again, so JupyterLab and nbclient save the final
rendering alone, with what the cell printed or showed before or after it; a cell that asked a question keeps
everything (the answered prompt cannot be sent again)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import tools_server
from tests.support.kernel_session import Kernel, running_kernel

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.kernel]

DEMO = f"{sys.executable} -m synapse_nb.mcp_client.demo_server"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    with running_kernel(tmp_path_factory.mktemp("kernel-saved-outputs")) as k:
        k.ok("%load_ext synapse_nb")
        yield k


def empty(output: dict[str, Any]) -> bool:
    """An output a reader sees as nothing: a display whose every text is blank."""
    data = output.get("data")
    return isinstance(data, dict) and all(not str(v).strip() for v in data.values())


def test_connect_list_and_call_save_their_final_rendering_alone(kernel: Kernel) -> None:
    connect = kernel.ok(f"%mcp connect t -- {tools_server.COMMAND}", timeout=120)
    [saved] = connect.saved_outputs()
    assert saved["output_type"] == "display_data"
    assert saved["data"]["text/plain"].startswith("✓ t: connected")
    kernel.ok(f"%mcp connect shop -- {DEMO}", timeout=120)

    listing = kernel.ok("%mcp list")
    assert [o for o in listing.saved_outputs() if empty(o)] == []
    assert "shop" in listing.text()

    call = kernel.ok("%mcp call t.progress steps=2 seconds=0.5")
    # the live line showed the server's progress while the call ran (a report refreshes it at once: on a busy
    # machine the first one can come before the line's first tick, and then it opens the line itself) ...
    assert any(d["kind"] in ("display_data", "update_display_data")
               and re.search(r"step [12] of 2", d["data"].get("text/plain", "")) for d in call.displays)
    [saved] = call.saved_outputs()  # ... and only the result is saved
    assert saved["data"]["text/plain"].startswith("t.progress → ok (")

    # a call whose value is the cell's result (Out[]): the result alone
    result = kernel.ok('x = 1\n%mcp call shop.query sql="SELECT 1 AS one"')
    assert [o for o in result.saved_outputs() if empty(o)] == []
    assert result.saved_outputs() != []


def test_what_the_cell_printed_or_showed_first_is_kept(kernel: Kernel) -> None:
    run = kernel.ok("print('printed first')\n"
                    "from IPython.display import display\ndisplay({'text/plain': 'shown first'}, raw=True)\n"
                    "%mcp call t.progress steps=1 seconds=0.1")
    saved = run.saved_outputs()
    assert saved[0] == {"output_type": "stream", "name": "stdout", "text": "printed first\n"}
    assert saved[1]["data"] == {"text/plain": "shown first"}
    assert saved[-1]["data"]["text/plain"].startswith("t.progress → ok (")
    assert len(saved) == 3  # and no emptied live line between them


def test_what_the_cell_prints_after_the_command_is_kept(kernel: Kernel) -> None:
    run = kernel.ok("%mcp list\nprint('printed after')")
    saved = run.saved_outputs()
    assert [o for o in saved if empty(o)] == []
    assert saved[-1] == {"output_type": "stream", "name": "stdout", "text": "printed after\n"}


def test_a_synapse_turn_saves_its_answer_alone(kernel: Kernel) -> None:
    kernel.ok(f"%mcp connect demo -- {DEMO}", timeout=120)  # the offline scripted model queries `demo`
    run = kernel.ok("%%synapse\nWhat are the top products by revenue?", timeout=120)
    [saved] = run.saved_outputs()
    assert "Top products by revenue" in saved["data"]["text/markdown"]


def test_a_question_answered_in_the_cell_is_kept(kernel: Kernel) -> None:
    # JupyterLab keeps an answered prompt as an output of the cell: no clear may take it away
    kernel.ok(f"%mcp connect q -- {tools_server.COMMAND} --legacy", timeout=120)  # --legacy: it asks with a form
    run = kernel.ok('%mcp call q.question message="Your name?"', allow_stdin=True,
                    answer=lambda prompt: "a" if prompt.startswith("fill in the form?") else "Ada")
    assert len(run.prompts) == 2
    assert [m for m in run.messages if m["msg_type"] == "clear_output"] == []
    assert "answer: accept name=Ada" in run.text()


def test_a_cell_showing_a_widget_is_left_as_it_is(kernel: Kernel) -> None:
    # sending a widget's display again would build a second view of it (an MCP Apps View would load its page again)
    kernel.ok(f"%mcp connect w -- {tools_server.COMMAND}", timeout=120)
    run = kernel.ok("import ipywidgets\nfrom IPython.display import display\ndisplay(ipywidgets.Label('a widget'))\n"
                    "%mcp call w.progress steps=1 seconds=0.1")
    assert [m for m in run.messages if m["msg_type"] == "clear_output"] == []
    saved = run.saved_outputs()
    assert "application/vnd.jupyter.widget-view+json" in saved[0]["data"]
    assert saved[-1]["data"]["text/plain"].startswith("w.progress → ok (")
