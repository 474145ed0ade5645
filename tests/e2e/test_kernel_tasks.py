"""MCP tasks in a real kernel, against fastmcp-tasks (the 2026-07-28 extension) over streamable HTTP, a server
that outlives the kernel: a 20-second task survives a kernel restart and its result lands in the history; an
interrupt cancels the task on the server before the cell ends."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import synapse_nb
from tests.support.kernel_session import running_kernel

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
