"""A `%%synapse --background` run whose tool asks the user, in a real kernel: answered through the widget by the
comm messages a browser sends, and declined with a note when nbclient runs the notebook (nobody to answer)."""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import synapse_nb
from tests.support import tools_server
from tests.support.kernel_session import Kernel, kernel_env, running_kernel
from tests.support.npm_servers import EVERYTHING, node_for

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.kernel]

ROOT = Path(synapse_nb.__file__).resolve().parents[1]
# the server child gets only a safe environment: point it at this checkout's package explicitly
DEMO = (f"%mcp connect demo --env PYTHONPATH={ROOT} -- {tools_server.COMMAND} --legacy")
ASKER = [{"match": "my name", "tool": "demo__question", "arguments": {"message": "Who are you?"},
          "answer": "the server said: {result}"}]


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    tmp = tmp_path_factory.mktemp("kernel")
    (tmp / "asker.json").write_text(json.dumps(ASKER))
    with running_kernel(tmp) as k:
        k.ok("%load_ext synapse_nb")
        assert k.ok(DEMO, timeout=120).text().startswith("✓ demo: connected")
        yield k


def iopub_until(
    kernel: Kernel, done: Callable[[list[dict[str, Any]]], bool], timeout: float = 60
) -> list[dict[str, Any]]:
    """Every iopub message (whatever cell it belongs to) until `done(messages)` holds."""
    messages: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while not done(messages):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"not seen in {timeout} s; got {[m['msg_type'] for m in messages]}")
        try:
            messages.append(kernel.kc.get_iopub_msg(timeout=min(left, 1.0)))
        except queue.Empty:
            continue
    return messages


def widget_models(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(comm id, initial state) of every widget the kernel opened."""
    return [(m["content"]["comm_id"], m["content"]["data"].get("state", {})) for m in messages
            if m["msg_type"] == "comm_open" and m["content"].get("target_name") == "jupyter.widget"]


def send_comm(kernel: Kernel, comm_id: str, data: dict[str, Any]) -> None:
    """A comm_msg on the shell channel, as the browser's widget manager sends it."""
    kernel.kc.shell_channel.send(kernel.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data}))


def test_a_background_question_is_answered_through_the_widget(kernel: Kernel) -> None:
    # a browser runs cells with stdin allowed: someone is there to click
    start = kernel.ok("%%synapse --model scripted:asker.json --background --approve auto --out job --session bg\n"
                      "what is my name", allow_stdin=True)
    assert start.status == "ok"

    def form_shown(messages: list[dict[str, Any]]) -> bool:
        return any(s.get("_model_name") == "ButtonModel" and s.get("description") == "Submit"
                   for _, s in widget_models(messages))

    opened = widget_models(start.messages + iopub_until(kernel, form_shown))
    submit = next(c for c, s in opened if s.get("_model_name") == "ButtonModel" and s.get("description") == "Submit")
    (name,) = [c for c, s in opened if s.get("_model_name") == "TextModel"]  # the form's one field
    send_comm(kernel, name, {"method": "update", "state": {"value": "Ada"}, "buffer_paths": []})
    send_comm(kernel, submit, {"method": "custom", "content": {"event": "click"}})

    def answered(messages: list[dict[str, Any]]) -> bool:
        return any(m["msg_type"] == "comm_msg" and "accepted: name=Ada" in
                   str(m["content"]["data"].get("state", {}).get("value", "")) for m in messages)

    iopub_until(kernel, answered)  # the widget itself says what was sent
    done = kernel.ok("result = await job\nprint(result.text, '|', job.status)")
    assert done.stdout.strip() == "the server said: answer: accept name=Ada | finished"
    recorded = kernel.ok(
        "import json, synapse_nb\n_h = synapse_nb.history()\n"
        "print(json.dumps(_h.sql(\"SELECT detail FROM server_events WHERE event = 'elicitation'\").detail.tolist()))\n"
        "print(_h.sql(\"SELECT result_text FROM tool_calls WHERE tool = 'question'\").result_text.tolist())"
    )
    events, results = recorded.stdout.splitlines()
    assert [json.loads(d) for d in json.loads(events)] == [{
        "mode": "form", "message": "Who are you?", "action": "accept"}]
    assert results == "['answer: accept name=Ada']"


def test_nbclient_run_declines_background_questions_with_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    node = node_for(EVERYTHING)
    (tmp_path / "both.json").write_text(json.dumps([{
        "match": "ask them",
        "tool_calls": [{"name": "demo__question", "arguments": {"message": "Who are you?"}},
                       {"name": "everything__trigger-sampling-request",
                        "arguments": {"prompt": "write a haiku", "maxTokens": 20}}],
        "answer": "results: {results}",
    }]))
    for key, value in kernel_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "SYNAPSE_MODEL", "SYNAPSE_MCP_CONFIG", "MCP_URL"):
        monkeypatch.delenv(key, raising=False)
    import nbformat  # here, not at the top: `make quick` collects this module without paying for jsonschema
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("%load_ext synapse_nb"),
        nbformat.v4.new_code_cell(DEMO),
        nbformat.v4.new_code_cell(f"%mcp connect everything -- {node} {EVERYTHING} stdio"),
        # started and awaited in one cell: nbclient keeps only what arrives while a cell runs, so a note sent to
        # a cell that already finished (the run's question came before the next cell started) would be dropped
        nbformat.v4.new_code_cell("get_ipython().run_cell_magic('synapse', '--model scripted:both.json --background "
                                  "--approve auto --out job', 'ask them')\nresult = await job\nprint(result.text)"),
    ])
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    texts = [o.get("text", "") + o.get("data", {}).get("text/plain", "")
             for cell in nb.cells[3:] for o in cell.get("outputs", [])]
    shown = "\n".join(texts)
    assert "⊘ form from demo: declined: no one can answer here (the cell was run by a frontend without input, " \
           "e.g. nbclient or papermill); the server was told you declined" in shown
    assert "⊘ sampling request from everything: refused: no one can answer here" in shown
    answer = nb.cells[3].outputs[-1]["text"]
    assert "answer: decline" in answer  # the tool went on with the decline instead of waiting for a click
    assert "the user declined the sampling request" in answer  # what the server was told
