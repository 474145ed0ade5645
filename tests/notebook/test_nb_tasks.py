"""MCP tasks in the notebook (against fastmcp-tasks, the 2026-07-28 extension, over stdio): `%mcp call` of a task
shows it and ends with its result, `--detach` leaves it running and says how to come back, `%mcp tasks` lists the
history's tasks with `cancel` and `result`, and bad input is one line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from synapse_nb.notebook.commands.mcp_tasks import DetachedTask
from synapse_nb.notebook.recording.reader import reader
from tests.support.llm_server import LlmServer, text
from tests.support.task_servers import TASKS_SERVER, tasks_python

pytestmark = pytest.mark.process
TIMEOUT = 30


def _connect(ip: Any) -> None:
    ip.line("mcp", f"connect fm -- {tasks_python()} {TASKS_SERVER} stdio")


def test_a_task_call_shows_the_task_ends_with_its_result_and_is_listed(ip: Any) -> None:
    _connect(ip)
    out = ip.line("mcp", 'call fm.slow {"seconds": 1, "label": "nb"}')
    assert out.result.text == "nb done after 1 s"

    frame = ip.line("mcp", "tasks")
    assert list(frame.columns) == ["task_id", "server", "tool", "status", "message", "age", "cell", "tool_call_id"]
    (row,) = frame.to_dict("records")
    assert (row["server"], row["tool"], row["status"]) == ("fm", "slow", "completed")
    calls = reader(ip.state.store).sql("SELECT tool_call_id, tool, result_text FROM tool_calls").to_dict("records")
    assert calls == [{"tool_call_id": row["tool_call_id"], "tool": "slow", "result_text": "nb done after 1 s"}]
    task = reader(ip.state.store).tasks().to_dict("records")[0]
    assert json.loads(task["arguments"]) == {"seconds": 1, "label": "nb"}


def test_detach_then_result_records_the_call_once_under_its_id(ip: Any) -> None:
    _connect(ip)
    detached = ip.line("mcp", 'call --detach fm.slow {"seconds": 1, "label": "later"}')
    assert isinstance(detached, DetachedTask)
    assert f"%mcp tasks result {detached.task_id}" in str(detached)
    history = reader(ip.state.store)
    assert history.sql("SELECT count(*) AS n FROM tool_calls")["n"][0] == 0  # not yet: it runs on
    (row,) = ip.line("mcp", "tasks").to_dict("records")
    assert row["status"] in ("working", "completed")  # it may have finished meanwhile; nobody asked yet

    out = ip.line("mcp", f"tasks result {detached.task_id}")
    assert out.result.text == "later done after 1 s"
    calls = history.sql("SELECT tool_call_id, result_text FROM tool_calls").to_dict("records")
    assert calls == [{"tool_call_id": row["tool_call_id"], "result_text": "later done after 1 s"}]
    again = ip.line("mcp", f"tasks result {detached.task_id}")  # shown again, not recorded twice
    assert again.result.text == "later done after 1 s"
    assert history.sql("SELECT count(*) AS n FROM tool_calls")["n"][0] == 1


def test_tasks_cancel_cancels_on_the_server(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    _connect(ip)
    detached = ip.line("mcp", 'call --detach fm.slow {"seconds": 60}')
    ip.line("mcp", f"tasks cancel {detached.task_id}")
    assert f"asked fm to cancel task {detached.task_id}" in capsys.readouterr().out
    state = ip.state.runner.run(asyncio.wait_for(ip.state.hub.task_state("fm", detached.task_id), TIMEOUT))
    assert state.status == "cancelled"


@pytest.mark.parametrize(("line", "says"), [
    ("tasks result nope", "no task 'nope' in the history"),
    ("tasks frob", "%mcp tasks cancel ID / %mcp tasks result ID"),
    ("tasks --every", "%mcp tasks [--all]"),
    ("tasks cancel", "%mcp tasks cancel ID / %mcp tasks result ID"),
])
def test_bad_task_commands_are_one_line(ip: Any, line: str, says: str) -> None:
    with pytest.raises(UsageError) as caught:
        ip.line("mcp", line)
    assert says in str(caught.value)
    assert "\n" not in str(caught.value)


def test_two_tasks_and_a_plain_call_of_one_model_reply_run_side_by_side(ip: Any, tmp_path: Any) -> None:
    _connect(ip)
    script = tmp_path / "side.json"
    script.write_text(json.dumps({"rules": [{"match": "go", "steps": [
        {"tool_calls": [{"name": "fm__slow", "arguments": {"seconds": 1, "label": "a"}},
                        {"name": "fm__slow", "arguments": {"seconds": 1, "label": "b"}},
                        {"name": "fm__echo", "arguments": {"text": "c"}}]},
        "done: {results}"]}]}))
    ip.cell(f"synapse --model scripted:{script} --approve auto", "go")
    result = ip.ns["_synapse"]
    assert sorted(result.tool_calls["result_text"]) == ["a done after 1 s", "b done after 1 s", "echo: c"]
    events = reader(ip.state.store).sql(
        "SELECT event, status, \"at\" FROM task_events ORDER BY \"at\"").to_dict("records")
    created = [e["at"] for e in events if e["event"] == "created"]
    completed = [e["at"] for e in events if e["status"] == "completed"]
    assert len(created) == 2
    assert len(completed) == 2
    assert max(created) < min(completed)  # both tasks were running at once
    tasks = reader(ip.state.store).tasks().to_dict("records")
    calls = set(reader(ip.state.store).sql("SELECT tool_call_id FROM tool_calls WHERE tool = 'slow'")["tool_call_id"])
    assert {t["tool_call_id"] for t in tasks} == calls  # each task linked to its turn's tool call
    assert {t["session_id"] for t in tasks} == {result.session_id}
    assert all(str(t["cell"]).startswith("In[") for t in tasks)


def test_tasks_lists_this_notebooks_tasks_and_all_with_all(ip: Any) -> None:
    _connect(ip)
    ip.ns["__session__"] = "/work/first.ipynb"  # as JupyterLab tells the kernel its notebook
    ip.line("mcp", 'call fm.echo text=plain')  # no task: not listed
    ip.line("mcp", 'call fm.slow {"seconds": 0}')
    ip.ns["__session__"] = "/work/second.ipynb"
    ip.line("mcp", 'call fm.slow {"seconds": 0, "label": "other"}')
    mine = ip.line("mcp", "tasks").to_dict("records")
    assert [r["cell"].split()[0] for r in mine] == ["second.ipynb"]
    every = ip.line("mcp", "tasks --all").to_dict("records")
    assert sorted(r["cell"].split()[0] for r in every) == ["first.ipynb", "second.ipynb"]


def test_resume_without_a_waiting_turn_and_bad_resume_lines_are_one_line(ip: Any) -> None:
    _connect(ip)
    detached = ip.line("mcp", 'call --detach fm.slow {"seconds": 0}')
    cases = [
        (lambda: ip.line("synapse", "--resume"), "no turn of this notebook is waiting on an MCP task's result"),
        (lambda: ip.line("synapse", "--resume --session nobody"), "no session 'nobody' in the history"),
        (lambda: ip.cell("synapse --resume", "and then?"), "--resume continues the waiting turn with its tool "
                                                           "results and takes no prompt"),
        (lambda: ip.line("synapse", "--background --resume"), "--resume runs in the foreground"),
        (lambda: ip.line("mcp", f"tasks resume {detached.task_id}"), f"task {detached.task_id} was started by "
                                                                     "hand (%mcp call), not by a turn"),
        (lambda: ip.line("mcp", "tasks resume nope"), "no task 'nope' in the history"),
    ]
    for run, says in cases:
        with pytest.raises(UsageError) as caught:
            run()
        assert says in str(caught.value)
        assert "\n" not in str(caught.value)
    assert reader(ip.state.store).sql("SELECT count(*) AS n FROM turns")["n"][0] == 0  # nothing ran, nothing recorded


def test_a_followed_tasks_sampling_is_charged_to_its_tool(
        ip: Any, llm_server: LlmServer, clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A task followed later (`%mcp tasks result`, or after a restart) that asks the kernel's model: the sampling
    call's cost is the tool's, as for a call that asks while it runs (history/cost.py, by tool)."""
    prices = clean_env / "prices.json"
    prices.write_text(json.dumps({"openai:gpt-test": {"input_per_mtok": 1000, "output_per_mtok": 2000}}))
    monkeypatch.setenv("SYNAPSE_PRICES", str(prices))
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-key-for-task-tests")
    ip.line("synapse", "model openai:gpt-test")
    ip.line("mcp", f"connect fm --sampling auto -- {tasks_python()} {TASKS_SERVER} stdio")
    detached = ip.line("mcp", "call --detach fm.ask_model topic=tides")  # left before its question is asked
    llm_server.queue(text("tides come and go", usage=(100, 20)))

    out = ip.line("mcp", f"tasks result {detached.task_id}")

    assert out.result.text == "the model says: tides come and go"
    by_tool = ip.line("synapse", "cost --by tool").set_index(["server", "tool"])
    assert by_tool.loc[("fm", "ask_model"), "sampling_usd"] == pytest.approx(100 * 0.001 + 20 * 0.002)
    (sampled,) = reader(ip.state.store).sql("SELECT tool_call_id FROM llm_calls WHERE origin = 'sampling:fm'")[
        "tool_call_id"]
    (row,) = ip.line("mcp", "tasks").to_dict("records")
    assert sampled == row["tool_call_id"]
