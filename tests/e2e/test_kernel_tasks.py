"""MCP tasks in a real kernel, against fastmcp-tasks (the 2026-07-28 extension) over streamable HTTP, a server
that outlives the kernel: a 20-second task survives a kernel restart and its result lands in the history; a turn
the restart left waiting on a task is resumed with its result (the model: the local wire-format server); an
interrupt cancels the task on the server before the cell ends."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import synapse_nb
from tests.support.kernel_session import Kernel, running_kernel
from tests.support.llm_server import LlmServer, call, text, tool_calls

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.kernel]


def _wait_for_row(db: Path, query: str, timeout: float) -> list[tuple[Any, ...]]:
    """Read the history file (as another program would) until `query` has rows, under a deadline."""
    deadline = time.monotonic() + timeout
    while True:
        with synapse_nb.history(db) as history:
            rows = history.rows(query)
        if rows or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def test_a_20_second_task_survives_a_kernel_restart_and_its_result_lands_in_the_history(
        tasks_url: str, tmp_path: Path) -> None:
    db = tmp_path / "history.duckdb"
    with running_kernel(tmp_path) as kernel:
        kernel.ok("%load_ext synapse_nb")
        kernel.ok(f"%mcp connect fm {tasks_url}")
        started = kernel.ok('%mcp call --detach fm.slow {"seconds": 20, "label": "outlived"}')
        assert "runs on the server; %mcp tasks result" in started.text()
        (task_id,) = [r[0] for r in _wait_for_row(db, "SELECT task_id FROM tasks", 10)]

        kernel.km.restart_kernel(now=True)  # the kernel dies with the task running on the server
        kernel.kc.wait_for_ready(timeout=60)
        kernel.ok("%load_ext synapse_nb")
        again = kernel.ok(f"%mcp connect fm {tasks_url}")
        assert f"following 1 MCP task still open from before ({task_id})" in again.text()
        listed = kernel.ok("%mcp tasks").text()
        assert task_id in listed

        rows = _wait_for_row(db, "SELECT tool, result_text, duration_ms, tool_call_id FROM tool_calls", 90)
    assert rows, "the task's result never reached the history"
    ((tool, text, took, call_id),) = rows
    assert (tool, text) == ("slow", "outlived done after 20 s")
    assert took >= 20_000  # the task's duration by the server's clock, not the last poll's
    (task,) = _wait_for_row(db, "SELECT status, tool_call_id, cell FROM tasks", 10)
    assert task[0] == "completed"
    assert task[1] == call_id  # the result landed under the tool call that started the task
    assert task[2].startswith("In[")


def test_an_interrupt_cancels_the_task_on_the_server(tasks_url: str, tmp_path: Path) -> None:
    with running_kernel(tmp_path) as kernel:
        kernel.ok("%load_ext synapse_nb")
        kernel.ok(f"%mcp connect fm {tasks_url}")
        sent: list[bool] = []

        def interrupt_once_the_task_shows(msg: dict[str, Any]) -> None:
            plain = msg["content"].get("data", {}).get("text/plain", "")
            if not sent and "task " in plain and "working" in plain:
                sent.append(True)
                kernel.km.interrupt_kernel()

        run = kernel.execute('%mcp call fm.slow {"seconds": 60}', on_message=interrupt_once_the_task_shows)
        assert sent
        assert run.status == "error"
        assert run.error is not None
        assert "cancelled" in run.error["evalue"]
        (task_id,) = kernel.ok("import synapse_nb\nprint(*synapse_nb.history().tasks().task_id)").stdout.split()
        # the server says cancelled: the interrupted cell sent tasks/cancel before it ended
        asked = kernel.execute(f"%mcp tasks result {task_id}")
        assert asked.status == "error"
        assert asked.error is not None
        assert asked.error["evalue"] == f"TaskError: task {task_id} of fm.slow was cancelled"
        assert len(asked.error["traceback"]) == 1  # one line, named as what it is (TaskError)
        assert "TaskError" in asked.error["traceback"][0]


PRICES = {"openai:gpt-test": {"input_per_mtok": 1000, "output_per_mtok": 2000}}  # $0.001 a prompt token


def _start(kernel: Kernel, llm: LlmServer, tasks_url: str, prices: Path) -> None:
    kernel.ok(f"import os\nos.environ['OPENAI_BASE_URL'] = {llm.openai_base_url!r}\n"
              f"os.environ['SYNAPSE_PRICES'] = {str(prices)!r}\n"
              "os.environ['OPENAI_API_KEY'] = 'sk-fake-key-for-task-tests'\n%load_ext synapse_nb")
    kernel.ok(f"%mcp connect fm {tasks_url}")


def test_a_turn_left_waiting_on_a_task_by_a_kernel_restart_is_resumed_with_its_result(
        tasks_url: str, tmp_path: Path) -> None:
    db = tmp_path / "history.duckdb"
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(PRICES))
    with LlmServer() as llm, running_kernel(tmp_path) as kernel:
        llm.queue(tool_calls(call("fm__slow", {"seconds": 12, "label": "waited"}, id="call-w"), usage=(100, 10)),
                  text("The task says: waited done after 12 s.", usage=(200, 12)))
        _start(kernel, llm, tasks_url, prices)
        kernel.kc.execute("%%synapse --model openai:gpt-test --approve auto --session research\nrun the slow task",
                          store_history=False)  # not awaited: the kernel restarts under it
        (task_id,) = [r[0] for r in _wait_for_row(db, "SELECT task_id FROM tasks WHERE tool_call_id = 'call-w'", 60)]

        # restarted as JupyterLab restarts it: jupyter_client interrupts the kernel, then asks it to shut down; the
        # interrupt must not cancel the task the turn waits on (mcp_client/departure.py)
        kernel.km.restart_kernel(now=False)
        kernel.kc.wait_for_ready(timeout=60)
        _start(kernel, llm, tasks_url, prices)
        resumed = kernel.ok("%%synapse --resume --model openai:gpt-test", timeout=90)

        assert "The task says: waited done after 12 s." in resumed.text()
        second = llm.requests[1].body["messages"]
        assert [m["role"] for m in second if m["role"] != "system"] == ["user", "assistant", "tool"]
        assert second[-1]["tool_call_id"] == "call-w"
        assert "waited done after 12 s" in second[-1]["content"]
        with synapse_nb.history(db) as history:
            roles = history.sql("SELECT role FROM messages WHERE session_id = (SELECT session_id FROM sessions "
                                "WHERE name = 'research') ORDER BY seq")["role"].tolist()
            calls = history.rows("SELECT tool_call_id, result_text FROM tool_calls")
            (status,) = history.rows(f"SELECT status FROM tasks WHERE task_id = '{task_id}'")
        assert roles == ["user", "assistant", "tool", "assistant"]  # one conversation, continued
        assert calls == [("call-w", "waited done after 12 s")]  # recorded once, under the turn's tool call
        assert status == ("completed",)

        # cost attribution: the task's result added 200 - 100 - 10 = 90 prompt tokens to the resumed turn's call
        # (prompt cost 200 x $0.001): 90 / 200 x $0.20 = $0.09, charged to the task's tool like any call's result
        by_tool = kernel.ok("cost = %synapse cost --by tool\nprint(cost.to_json(orient='records'))").stdout
        (row,) = json.loads(by_tool)
        assert (row["server"], row["tool"], row["result_tokens"]) == ("fm", "slow", 90)
        assert row["context_usd"] == pytest.approx(0.09)

        again = kernel.execute(f"%mcp tasks resume {task_id}")  # the task's turn: resumed already
        assert again.status == "error"  # a UsageError: one line, no traceback
        assert "session 'research' has no turn waiting on tool results" in again.stderr
        assert len(again.stderr.strip().splitlines()) == 1
