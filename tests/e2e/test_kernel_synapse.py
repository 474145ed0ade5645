"""The extension in a real kernel (jupyter_client): load time, streamed outputs, interrupt, stdin approval,
background runs, and a real HTTP provider, all in one shared kernel with the demo MCP server connected."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_core.utils import ensure_event_loop

from tests.support import tools_server
from tests.support.kernel_session import Kernel, running_kernel
from tests.support.llm_server import LlmServer, text

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.kernel]

DEMO = tools_server.COMMAND


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    tmp = tmp_path_factory.mktemp("kernel")
    with running_kernel(tmp) as k:
        load = k.ok(
            "import time as _t\n_t0 = _t.perf_counter()\n%load_ext synapse_nb\n"
            "print(f'load_ext took {(_t.perf_counter() - _t0) * 1000:.0f} ms')"
        )
        assert load.stdout.startswith("load_ext took ")  # and nothing else: loading is quiet
        assert load.stderr == ""
        assert load.displays == []
        print(f"\n[kernel] %{load.stdout.strip()}")
        connect = k.ok(f"import sys\n%mcp connect demo -- {DEMO}")
        assert connect.text().startswith("✓ demo: connected")
        yield k


def script(kernel: Kernel, name: str, data: Any) -> str:
    """Write a scripted-model script in the kernel's folder; returns the model id that plays it."""
    kernel.ok(f"import json, pathlib\npathlib.Path({name + '.json'!r}).write_text(json.dumps({data!r}))")
    return f"scripted:{name}.json"


def test_load_ext_is_quick(kernel: Kernel) -> None:
    took = kernel.ok("import time as _t\n_t0 = _t.perf_counter()\n%reload_ext synapse_nb\n"
                     "print((_t.perf_counter() - _t0) * 1000)")
    ms = float(took.stdout)
    print(f"[kernel] %reload_ext synapse_nb: {ms:.0f} ms")
    assert ms < 5000  # a sanity bound only; the number is printed for the record
    assert kernel.ok("%mcp list").text() == ""  # the reload closed the servers ...
    kernel.ok(f"%mcp connect demo -- {DEMO}")  # ... connect again


def test_streamed_outputs_arrive_in_order(kernel: Kernel) -> None:
    run = kernel.ok("%%synapse\nWhat are the top products by revenue?")
    displays = run.displays
    live_id = displays[0]["transient"]["display_id"]
    assert displays[0]["kind"] == "display_data"
    assert displays[0]["data"] == {"text/plain": ""}
    updates = [d["data"]["text/plain"] for d in displays if d["kind"] == "update_display_data"]
    assert all(d["transient"]["display_id"] == live_id for d in displays if d["kind"] == "update_display_data")
    running = next(i for i, u in enumerate(updates) if "running demo__query" in u)
    finished = next(i for i, u in enumerate(updates) if "demo__query" in u and "✓" in u.split("demo__query")[1])
    answered = next(i for i, u in enumerate(updates) if "Top products" in u)  # the answer's first piece, live
    assert running < finished < answered
    assert updates[-1] == ""  # the live output ends empty ...
    final = displays[-1]
    assert final["kind"] == "display_data"
    assert "transient" not in final or not final["transient"]  # ... and the answer stays as a plain output
    # ... and at the command's end the emptied line is cleared away: the saved notebook keeps the answer alone
    [saved] = run.saved_outputs()
    assert saved["data"] == final["data"]
    markdown = final["data"]["text/markdown"]
    assert markdown.index('<details class="snb-turn-tool"') < markdown.index("Top products by revenue")
    assert "scripted:demo (offline scripted model)" in markdown
    check = kernel.ok("print(_synapse.tool_calls.tool.tolist(), _synapse.status)")
    assert check.stdout.strip() == "['query'] finished"


def test_a_running_tool_shows_a_ticking_elapsed_time(kernel: Kernel) -> None:
    model = script(kernel, "ticker", [{"match": "nap", "tool": "sleep", "arguments": {"seconds": 1.2},
                                       "answer": "rested"}])
    run = kernel.ok(f"%%synapse --model {model}\nplease nap")
    shown = [d["data"]["text/plain"] for d in run.displays if d["kind"] == "update_display_data"]
    lines = [line for u in shown for line in u.splitlines() if line.startswith("running demo__sleep · ")]
    times = {line.split(" · ")[1] for line in lines}
    assert len(times) >= 3, times  # the time moved on while the tool ran, without any event from the agent
    assert "rested" in run.text()


def test_interrupt_cancels_the_turn_and_the_next_cell_works(kernel: Kernel) -> None:
    model = script(kernel, "sleepy", [{"match": "sleep", "tool": "sleep", "arguments": {"seconds": 60},
                                       "answer": "slept"}, "still here"])
    pid_before = kernel.ok("%mcp list").final_outputs()[0]["text/plain"]
    sent: list[bool] = []

    def interrupt_when_the_call_shows(msg: dict[str, Any]) -> None:
        plain = msg["content"].get("data", {}).get("text/plain", "")
        if not sent and "running demo__sleep" in plain:
            sent.append(True)
            kernel.km.interrupt_kernel()

    run = kernel.execute(f"%%synapse --model {model}\nplease sleep", on_message=interrupt_when_the_call_shows)
    assert sent
    assert run.status == "error"
    assert run.error is not None
    assert run.error["ename"] == "CellInterrupted"
    assert run.error["traceback"] == [
        "\x1b[0;31mKeyboardInterrupt\x1b[0m: the turn was cancelled; servers stay connected and the transcript so "
        "far is kept (see _synapse)"
    ]
    assert "■ cancelled" in run.text()
    # The same server process, still connected, answers the next call. (Whether the server saw an MCP
    # cancellation depends on whether the request was already written when the interrupt came; the
    # hub's own tests cover that.)
    assert kernel.ok("%mcp list").final_outputs()[0]["text/plain"] == pid_before
    assert kernel.ok("%mcp call demo.echo text=after").text().endswith("\nafter")
    assert kernel.ok("print(_synapse.status, _synapse.tool_calls.error.tolist())").stdout.strip() == (
        "cancelled ['cancelled']"
    )
    again = kernel.ok(f"%%synapse --model {model}\nanything else?")
    assert again.text().startswith("still here")
    turns = kernel.ok("import synapse_nb\nprint(synapse_nb.history().turns().status.tolist()[-2:])")
    assert turns.stdout.strip() == "['cancelled', 'finished']"


def test_approval_through_stdin_yes_and_no(kernel: Kernel) -> None:
    model = script(kernel, "echoer", [{"match": "echo", "tool": "echo", "arguments": {"text": "hi"},
                                       "answer": "echo said: {result}"}])
    yes = kernel.ok(f"%%synapse --model {model} --approve ask --session approvals\nplease echo",
                    allow_stdin=True, answer=lambda prompt: "y")
    assert len(yes.prompts) == 1
    assert yes.prompts[0] == "allow demo__echo? [y/n/a]: "  # short: the card above the box says the rest
    card = next(d["data"] for d in yes.displays if "snb-approval-card" in d["data"].get("text/html", ""))
    assert "on server demo" in card["text/plain"]
    assert '"text": "hi"' in card["text/plain"]
    assert "echo said: hi" in yes.text()
    no = kernel.ok(f"%%synapse --model {model} --approve ask --session approvals\nplease echo",
                   allow_stdin=True, answer=lambda prompt: "n")
    assert "echo said: denied by user" in no.text()
    assert "⊘ denied" in no.text()
    no_stdin = kernel.ok(f"%%synapse --model {model} --approve ask --session approvals\nplease echo")
    assert no_stdin.prompts == []
    assert "cannot answer prompts (no stdin)" in no_stdin.text()
    calls = kernel.ok("import synapse_nb\nprint(synapse_nb.history().tool_calls().approval.tolist()[-3:])")
    assert calls.stdout.strip() == "['approved', 'denied', 'denied']"


def test_approval_verdict_stays_on_the_tools_line(kernel: Kernel) -> None:
    """The text before the tool, the card with its verdict and the echo of the answer, then the tool's line and
    the answer: in the order they happened, not the verdict and echo above the whole turn."""
    model = script(kernel, "chatty_echoer", [{"match": "echo", "text": "Let me echo that first.", "tool": "echo",
                                              "arguments": {"text": "hi"}, "answer": "echo said: {result}"}])
    run = kernel.ok(f"%%synapse --model {model} --approve ask --session approvals\nplease echo",
                    allow_stdin=True, answer=lambda prompt: "y")
    outputs = run.final_outputs(stdin=True)
    text = [o["stdin"] if "stdin" in o else o.get("text/plain", "") for o in outputs]
    said = next(i for i, t in enumerate(text) if "Let me echo that first." in t)
    card = next(i for i, o in enumerate(outputs) if "snb-approval-card" in o.get("text/html", ""))
    echo = next(i for i, o in enumerate(outputs) if "stdin" in o)
    tool = next(i for i, t in enumerate(text) if "demo__echo" in t and "approved" in t and i != card)
    answer = next(i for i, t in enumerate(text) if "echo said: hi" in t)
    assert said < card < echo < tool <= answer, text
    assert "allowed" in text[card] or "approved" in text[card], text[card]
    assert sum("Let me echo that first." in t for t in text) == 1  # the head is not shown again below


def test_background_run_is_awaited_in_a_later_cell(kernel: Kernel) -> None:
    model = script(kernel, "slowpoke", [{"match": "wait", "tool": "sleep", "arguments": {"seconds": 0.5},
                                         "answer": "waited: {result}"}])
    start = kernel.ok(f"%%synapse --model {model} --background --out job --session bg\nplease wait")
    kinds = [list(d["data"]) for d in start.displays if d["kind"] == "display_data"]
    assert any("application/vnd.jupyter.widget-view+json" in k for k in kinds)  # the Stop / approve controls
    done = kernel.ok("result = await job\nprint(result.text, '|', job.status, '|', _synapse is job)")
    assert done.stdout.strip() == "waited: slept 0.5 s | finished | True"


def test_a_real_http_provider_from_a_magic(kernel: Kernel) -> None:
    with LlmServer() as server:
        server.queue(text("Hello over **HTTP**."))
        kernel.ok(f"import os\nos.environ['OPENAI_BASE_URL'] = {server.openai_base_url!r}\n"
                  "os.environ['OPENAI_API_KEY'] = 'sk-fake-key-for-tests'")
        try:
            run = kernel.ok("%%synapse --model openai:test --session http\nsay hello")
        finally:
            kernel.ok("del os.environ['OPENAI_BASE_URL'], os.environ['OPENAI_API_KEY']")
        assert run.text().startswith("Hello over **HTTP**.")
        assert "openai:test" in run.text()
        assert "offline" not in run.text()
        [request] = server.requests
        assert request.body["model"] == "test"
        assert request.body["messages"][-1] == {"role": "user", "content": "say hello"}
        assert "sk-fake-key-for-tests" not in json.dumps([m["content"] for m in run.messages])


def test_top_level_await_on_the_same_objects(kernel: Kernel) -> None:
    run = kernel.ok(
        "import synapse_nb.notebook\n"
        "state = synapse_nb.notebook.current()\n"
        "result = await state.hub.call('demo__echo', {'text': 'awaited'})\n"
        "print(result.text, state.runner.loop is __import__('asyncio').get_running_loop())"
    )
    assert run.stdout.strip() == "awaited True"


def test_run_all_queues_cells_behind_a_blocking_magic(kernel: Kernel) -> None:
    """JupyterLab's Run All sends every cell at once; the ones queued behind a blocking %mcp / %%synapse
    cell must run afterwards (ipykernel starts their tasks while the nested run is going)."""
    runs = kernel.run_all([
        "%mcp restart demo",
        "%%synapse --session run-all\nWhat tables are there?",
        "%mcp call demo.echo text=queued",
        "print('last cell ran')",
    ])
    assert [r.status for r in runs] == ["ok", "ok", "ok", "ok"]
    assert all("cannot enter context" not in r.stderr + r.stdout for r in runs)
    assert "orders" in runs[1].text()
    assert runs[2].text().endswith("\nqueued")
    assert runs[3].stdout == "last cell ran\n"


# ---- awaited cells (DESIGN section 3): interrupts, Run All, and an unpatched asyncio ---------------------------

WATCH_FOR_SLEEP = (
    "import pathlib as _pl, threading as _th, time as _tm\n"
    "import synapse_nb.notebook as _snb\n"
    "def _watch(marker, seen):\n"
    "    hub, deadline = _snb.current().hub, _tm.monotonic() + 60\n"
    "    while hub.server('demo').stderr_tail.count('sleep started') <= seen:\n"
    "        if _tm.monotonic() > deadline:\n"
    "            return\n"
    "        _tm.sleep(0.01)\n"
    "    _pl.Path(marker).write_text('started')\n"
    "_th.Thread(target=_watch, args=({marker!r}, _snb.current().hub.server('demo').stderr_tail.count('sleep started')),"
    " daemon=True).start()"
)


def interrupt_once_the_sleep_runs(kernel: Kernel, marker: Path) -> tuple[threading.Thread, list[float]]:
    """Interrupt the kernel (as a frontend's Stop does) once the demo server has started its sleep; the
    kernel-side watcher thread signals that through a file. Returns the thread and the interrupt's time."""
    marker.unlink(missing_ok=True)
    kernel.ok(WATCH_FOR_SLEEP.format(marker=str(marker)))
    sent: list[float] = []

    def interrupt() -> None:
        deadline = time.monotonic() + 60
        while not marker.exists():  # a condition under a deadline: the server has started sleeping
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)
        sent.append(time.monotonic())
        kernel.km.interrupt_kernel()
        # jupyter_client ran that on an event loop of its own for this thread: close it with the thread.
        ensure_event_loop().close()

    thread = threading.Thread(target=interrupt, daemon=True)
    thread.start()
    return thread, sent


def cancellations(kernel: Kernel) -> int:
    return int(kernel.ok("%mcp call demo.cancellations").text().rsplit("\n", 1)[-1])


def one_line(run: Any) -> str:
    assert run.status == "error"
    assert run.error is not None
    assert run.error["ename"] == "CellInterrupted"
    [line] = run.error["traceback"]
    return str(line)


def test_interrupting_an_awaited_synapse_cell_during_a_20_s_tool(kernel: Kernel, tmp_path: Path) -> None:
    model = script(kernel, "sleep20", [{"match": "sleep", "tool": "sleep", "arguments": {"seconds": 20},
                                        "answer": "slept"}, "awake"])
    before = cancellations(kernel)
    thread, sent = interrupt_once_the_sleep_runs(kernel, tmp_path / "sleep-started")
    run = kernel.execute(f"%%synapse --model {model} --session stop20\nplease sleep", timeout=60)
    ended = time.monotonic()
    thread.join(5)
    assert sent, "the sleep never started"
    print(f"\n[kernel] %%synapse interrupted mid-tool: cell ended {ended - sent[0]:.2f} s after the interrupt")
    assert ended - sent[0] < 15  # well before the 20 s tool would have ended on its own
    assert one_line(run) == ("\x1b[0;31mKeyboardInterrupt\x1b[0m: the turn was cancelled; servers stay connected and "
                             "the transcript so far is kept (see _synapse)")
    assert cancellations(kernel) == before + 1  # the server got the MCP cancellation
    assert kernel.ok("print(_synapse.status, _synapse.tool_calls.error.tolist())").stdout.strip() == (
        "cancelled ['cancelled']"
    )
    assert kernel.ok(f"%%synapse --model {model} --session stop20\nanything else?").text().startswith("awake")
    turns = kernel.ok("import synapse_nb\nprint(synapse_nb.history().turns().status.tolist()[-2:])")
    assert turns.stdout.strip() == "['cancelled', 'finished']"


def test_interrupting_an_awaited_mcp_call_during_a_20_s_tool(kernel: Kernel, tmp_path: Path) -> None:
    before = cancellations(kernel)
    thread, sent = interrupt_once_the_sleep_runs(kernel, tmp_path / "sleep-started")
    run = kernel.execute("%mcp call demo.sleep seconds=20", timeout=60)
    ended = time.monotonic()
    thread.join(5)
    assert sent, "the sleep never started"
    print(f"\n[kernel] %mcp call interrupted mid-tool: cell ended {ended - sent[0]:.2f} s after the interrupt")
    assert ended - sent[0] < 15
    assert one_line(run) == (
        "\x1b[0;31mKeyboardInterrupt\x1b[0m: the call of demo.sleep was cancelled; the server stays connected"
    )
    assert cancellations(kernel) == before + 1
    calls = kernel.ok("import synapse_nb\nc = synapse_nb.history().tool_calls()\n"
                      "print(c[c.tool == 'sleep'].sort_values('started_at').iloc[-1][['approval', 'error']].tolist())")
    assert calls.stdout.strip() == "['manual', 'cancelled']"
    assert kernel.ok("%mcp call demo.echo text=next").text().endswith("\nnext")


def test_run_all_of_a_30_cell_notebook(kernel: Kernel) -> None:
    """JupyterLab's Run All sends every execute_request at once; 10 %%synapse, 10 %mcp call and 10 plain cells."""
    cells = []
    for i in range(10):
        cells += [f"%%synapse --session run-all-30\nWhat tables are there? ({i})",
                  f"%mcp call demo.echo text=cell{i}", f"print('plain', {i})"]
    runs = kernel.run_all(cells, timeout=240)
    assert [r.status for r in runs] == ["ok"] * 30
    for i in range(10):
        assert "orders" in runs[3 * i].text()
        assert runs[3 * i + 1].text().endswith(f"\ncell{i}")
        assert runs[3 * i + 2].stdout == f"plain {i}\n"
    assert all("cannot enter context" not in r.stderr + r.stdout for r in runs)


def test_awaited_cells_leave_asyncio_unpatched(kernel: Kernel) -> None:
    """After %load_ext, %mcp connect (the fixture), a %%synapse cell and a whole-cell %mcp call (and every
    test above, interrupts and Run All included) asyncio is as the kernel made it."""
    kernel.ok("%%synapse --session plain-asyncio\nWhat tables are there?")
    kernel.ok("%mcp call demo.echo text=plain")
    run = kernel.ok(
        "import asyncio, _asyncio\n"
        "async def _one():\n    return 1\n"
        "_c = _one()\n"
        "try:\n    asyncio.run(_c)\nexcept RuntimeError as _e:\n    print('asyncio.run refused:', _e)\n"
        "_c.close()\n"
        "print(asyncio.Task is _asyncio.Task, asyncio.Future is _asyncio.Future, hasattr(asyncio, '_nest_patched'))"
    )
    assert run.stdout.splitlines() == [
        "asyncio.run refused: asyncio.run() cannot be called from a running event loop", "True True False"
    ]
