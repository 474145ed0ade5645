"""The kernel__* tools in a real kernel (jupyter_client): the scripted analyst's turn with a `y` on stdin, the
chart in the cell, `_synapse.code`, and an interrupt that stops run_python and cancels the turn."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.kernel_session import Kernel, running_kernel

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.kernel]

SALES = (
    "import pandas as pd\n"
    "sales = pd.DataFrame({'region': ['north', 'south', 'north', 'east', 'south', 'north'],\n"
    "                      'units': [3, 5, 2, 7, 1, 4],\n"
    "                      'revenue': [30.0, 52.5, 20.0, 70.0, 9.5, None]})"
)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    tmp = tmp_path_factory.mktemp("kernel-tools")
    with running_kernel(tmp) as k:
        k.ok("%load_ext synapse_nb")
        k.ok(SALES)
        yield k


def test_the_analyst_turn_asks_once_runs_draws_and_answers(kernel: Kernel) -> None:
    run = kernel.ok(
        "%%synapse --kernel --model scripted:analyst\nWhat is the total revenue by region in sales?",
        allow_stdin=True, answer=lambda prompt: "y",
    )
    assert len(run.prompts) == 1
    assert run.prompts[0] == "allow kernel__run_python? [y/n/a]: "  # the card above it shows the code
    texts = [d["data"].get("text/plain", "") for d in run.displays]
    card = "\n".join(t for t in texts if "Approve this tool call?" in t)
    assert "kernel__run_python on server kernel" in card
    assert "\n  summary.round(2).to_dict()\n" in card  # all of the code, as code
    final = run.final_outputs()
    markdown = "\n".join(o.get("text/markdown", "") for o in final)
    assert "| east | 70.00 |" in markdown
    assert "| south | 62.00 |" in markdown
    assert '<img src="data:image/png;base64,' in markdown  # the chart, in the run_python block
    assert "the agent could see the kernel" in markdown
    # the figure is shown once, in the tool block: not again by the inline backend after the cell
    assert not [o for o in final if "image/png" in o]
    check = kernel.ok(
        "print(summary.to_dict())\nprint(_synapse.tool_calls.server.unique().tolist(), "
        "_synapse.tool_calls.approval.tolist())\nprint(_synapse.code.splitlines()[1])"
    )
    assert check.stdout.splitlines() == [
        "{'east': 70.0, 'south': 62.0, 'north': 50.0}",
        "['kernel'] ['auto', 'auto', 'approved']",
        "summary = sales.groupby('region')['revenue'].sum().sort_values(ascending=False)",
    ]
    recorded = kernel.ok(
        "import synapse_nb\nprint(synapse_nb.history().sql(\"SELECT count(*) FROM tool_calls "
        "WHERE server = 'kernel'\").iloc[0, 0])"
    )
    assert recorded.stdout.strip() == "3"


def test_interrupt_stops_run_python_and_cancels_the_turn(kernel: Kernel) -> None:
    # the file says the loop runs: it is made after the first spin, so an interrupt as soon as it shows finds
    # `spins` defined and above 0 however the kernel's thread is scheduled
    code = ("import pathlib\nspins = 0\nwhile True:\n    spins += 1\n"
            "    if spins == 1:\n        pathlib.Path('spinning').touch()")
    spin = [{"tool": "kernel__run_python", "arguments": {"code": code}}, "spun"]
    folder = Path(kernel.ok("import os\nprint(os.getcwd())").stdout.strip())
    kernel.ok(f"import pathlib\npathlib.Path('spin.json').write_text({json.dumps(json.dumps(spin))})")
    sent: list[bool] = []

    def interrupt_when_spinning(msg: dict[str, Any]) -> None:
        plain = msg["content"].get("data", {}).get("text/plain", "")
        if not sent and "kernel__run_python" in plain and "running kernel__run_python" in plain:
            deadline = time.monotonic() + 60
            while not (folder / "spinning").exists():  # the code runs: interrupt it, not the turn before it
                assert time.monotonic() < deadline, "run_python never started"
                time.sleep(0.01)
            sent.append(True)
            kernel.km.interrupt_kernel()

    run = kernel.execute(
        "%%synapse --kernel --approve auto --session spin --model scripted:spin.json\nspin",
        on_message=interrupt_when_spinning, timeout=120,
    )
    assert sent, run.text()
    assert run.error is not None
    assert run.error["ename"] == "CellInterrupted"
    assert "■ cancelled" in run.text()
    after = kernel.ok("print(_synapse.status, spins > 0, _synapse.tool_calls.error.tolist())")
    assert after.stdout.split()[:2] == ["cancelled", "True"]
    again = kernel.ok("%%synapse --kernel --approve auto --model scripted:analyst\nrevenue by region in sales?")
    assert "| east | 70.00 |" in again.text()
