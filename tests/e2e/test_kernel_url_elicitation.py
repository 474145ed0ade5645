"""A server's link (URL-mode elicitation) in a blocking cell of a real kernel: the input box is read off the loop.

The test plays a frontend that never answers the cell's input box. The demo server (`--legacy`: it sends
requests of its own) is told to complete the flow by a second call made from a kernel subshell, as
JupyterLab runs code while a cell waits; the server's `notifications/elicitation/complete` then ends the
wait. An interrupt with the box open ends the cell in one line. Either way the kernel's stdin works after.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import synapse_nb
from tests.support import tools_server
from tests.support.kernel_session import Execution, Kernel, loaded_kernel

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.kernel]

ROOT = Path(synapse_nb.__file__).resolve().parents[1]
# the server child gets only a safe environment: point it at this checkout's package explicitly
DEMO = (f"%mcp connect demo --env PYTHONPATH={ROOT} -- {tools_server.COMMAND} --legacy")
URL = "https://example.com/sign-in"
PROMPT = "press Enter when done, n to decline, c to cancel: "
TIMEOUT = 60.0


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    with loaded_kernel(tmp_path_factory.mktemp("kernel")) as k:
        assert k.ok(DEMO, timeout=120).text().startswith("✓ demo: connected")
        yield k


def unanswered(kernel: Kernel, code: str) -> tuple[str, str]:
    """Start `code` with stdin allowed and wait for its input request, which is left unanswered;
    returns (the cell's msg_id, the prompt)."""
    msg_id = kernel.kc.execute(code, allow_stdin=True, store_history=False)
    request = kernel.kc.get_stdin_msg(timeout=TIMEOUT)
    assert request["parent_header"]["msg_id"] == msg_id
    return msg_id, str(request["content"]["prompt"])


def in_subshell(kernel: Kernel, code: str) -> str:
    """Run `code` in a new kernel subshell (while the main shell still runs a cell); returns its msg_id."""
    create = kernel.kc.session.msg("create_subshell_request", {})
    kernel.kc.control_channel.send(create)
    reply = kernel.kc.control_channel.get_msg(timeout=TIMEOUT)
    assert reply["content"]["status"] == "ok", reply["content"]
    execute = kernel.kc.session.msg("execute_request", {
        "code": code, "silent": False, "store_history": False, "user_expressions": {}, "allow_stdin": False,
        "stop_on_error": True})
    execute["header"]["subshell_id"] = reply["content"]["subshell_id"]
    kernel.kc.shell_channel.send(execute)
    return str(execute["header"]["msg_id"])


def finished(kernel: Kernel, msg_ids: list[str]) -> tuple[dict[str, Execution], list[dict[str, Any]]]:
    """Every cell of `msg_ids` to its end (idle and reply), no input request answered; also returns every
    display update, whichever cell it came with (an update names its display, not its cell)."""
    updates: list[dict[str, Any]] = []

    def keep_update(message: dict[str, Any]) -> None:
        if message["msg_type"] == "update_display_data":
            updates.append(message["content"])

    runs = kernel.gather(msg_ids, timeout=TIMEOUT, on_iopub=keep_update)
    return dict(zip(msg_ids, runs, strict=True)), updates


def input_still_works(kernel: Kernel) -> None:
    asked = kernel.ok("print('got', input('name? '))", allow_stdin=True, answer=lambda prompt: "Ada")
    assert asked.prompts == ["name? "]
    assert asked.stdout.strip() == "got Ada"


def elicitation_rows(kernel: Kernel) -> list[dict[str, Any]]:
    out = kernel.ok("import json, synapse_nb\n_h = synapse_nb.history()\nprint(json.dumps(_h.sql("
                    "\"SELECT detail FROM server_events WHERE event = 'elicitation' ORDER BY \\\"at\\\"\")"
                    ".detail.tolist()))").stdout
    return [json.loads(d) for d in json.loads(out)]


def test_the_servers_completion_ends_a_link_left_unanswered(kernel: Kernel) -> None:
    before = len(elicitation_rows(kernel))
    cell, prompt = unanswered(kernel, f"%mcp call demo.sign_in url={URL}")
    assert prompt == PROMPT
    # The subshell's cell prints its result rather than ending in an Out[]: both cells end at about the same
    # moment, and ipykernel 7.4's displayhook keeps the execute_result it builds in one attribute shared by
    # every shell thread, so two Out[]s built at once can lose one (seen once on a loaded machine).
    fire = in_subshell(kernel, "_fired = %mcp call demo.fire signal=complete\nprint(repr(_fired))")
    runs, updates = finished(kernel, [cell, fire])
    assert runs[fire].status == "ok", runs[fire].error
    assert "fired complete" in runs[fire].stdout, runs[fire].messages
    run = runs[cell]
    assert run.status == "ok", run.error
    card = next(d["data"] for d in run.displays if "snb-elicit-card" in d["data"].get("text/html", ""))
    assert f'href="{URL}"' in card["text/html"]
    assert "Sign in to the shop" in card["text/plain"]
    closed = [u["data"]["text/plain"] for u in updates if u["data"].get("text/plain", "").startswith("✓ link")]
    assert closed == ["✓ link from demo: completed by the server: the input box is no longer needed: press Enter in it"]
    assert run.text().endswith(": accept"), run.text()  # the tool went on as the server was answered "accept"
    rows = elicitation_rows(kernel)[before:]
    assert rows == [{"mode": "url", "message": "Sign in to the shop", "action": "accept", "by": "server"}]
    input_still_works(kernel)


def test_an_interrupt_with_the_links_box_open_ends_the_cell_in_one_line(kernel: Kernel) -> None:
    before = len(elicitation_rows(kernel))
    cell, prompt = unanswered(kernel, f"%mcp call demo.sign_in url={URL}")
    assert prompt == PROMPT
    kernel.km.interrupt_kernel()
    runs, _ = finished(kernel, [cell])
    run = runs[cell]
    assert run.status == "error"
    error = run.error or {}
    assert error.get("evalue") == "the call of demo.sign_in was cancelled; the server stays connected", error
    assert len(error.get("traceback", [])) <= 2, error
    assert "Traceback" not in run.stderr
    # the question is cancelled too (here the server withdraws it once its tool call is cancelled)
    assert [r["action"] for r in elicitation_rows(kernel)[before:]] == ["cancel"]
    input_still_works(kernel)
