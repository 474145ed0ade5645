"""Awaited cells: the input transformer rewrites whole-cell magics into a top-level `await` of the same command."""

from __future__ import annotations

import ast
import os
import signal
import threading
import time
from typing import Any

import pytest
from IPython.core.error import UsageError

import synapse_nb
from synapse_nb.notebook.commands.ask import CellInterrupted
from synapse_nb.notebook.commands.mcp_call import CallOutput
from synapse_nb.notebook.kernel.awaited import InputTransformer, rewrite
from tests.support import tools_server

DEMO = f"demo -- {tools_server.COMMAND}"


def awaited_args(ip: Any, cell: str) -> list[Any] | None:
    """The arguments the transformed cell passes to awaited.run (after the shell), or None when not awaited."""
    code = ip.shell.transform_cell(cell)
    if not code.startswith("await "):
        return None
    assert ip.shell.should_run_async(cell, transformed_cell=code)
    [statement] = ast.parse(code).body
    assert isinstance(statement, ast.Expr)
    assert isinstance(statement.value, ast.Await)
    call = statement.value.value
    assert isinstance(call, ast.Call)
    return [ast.literal_eval(arg) for arg in call.args[1:]]


TRICKY_BODY = 'He said "hi" and \'bye\'\n"""triple""" \'\'\' C:\\temp\\new {braces} {{x}} $HOME\n\\'


def test_whole_cell_magics_become_awaited_calls_with_line_and_body_exactly_as_typed(ip: Any) -> None:
    assert awaited_args(ip, "%mcp list") == ["mcp", "list"]
    assert awaited_args(ip, f"%mcp connect {DEMO}") == ["mcp", f"connect {DEMO}"]  # expanded later, by the magic
    quoted = "call demo.echo text='a \"b\"'"
    assert awaited_args(ip, f"# servers\n%mcp {quoted}\n") == ["mcp", quoted]
    assert awaited_args(ip, "%synapse status") == ["synapse", "status"]
    assert awaited_args(ip, "%synapse What tables are there?") == ["synapse", "What tables are there?"]
    assert awaited_args(ip, "%%synapse --model {m} --out r\n" + TRICKY_BODY) == [
        "synapse", "--model {m} --out r", TRICKY_BODY + "\n"
    ]
    assert awaited_args(ip, "%%synapse\n") == ["synapse", "", ""]


@pytest.mark.parametrize(
    "cell",
    ["%mcp?", "%synapse?", "%synapse??", "%%synapse?\nbody", "%%synapse_sql\nSELECT 1",
     "for i in range(2):\n    %mcp list", "def f():\n    return %mcp list", "print('%mcp list')",
     's = """\n%mcp list\n"""', "%time %mcp list"],
)
def test_help_blocks_strings_and_other_code_are_left_to_ipython(ip: Any, cell: str) -> None:
    assert awaited_args(ip, cell) is None
    assert "synapse_nb.notebook.kernel.awaited" not in ip.shell.transform_cell(cell)


def test_top_level_magics_in_a_mixed_cell_are_awaited_one_by_one(ip: Any) -> None:
    cell = "import sys\n%mcp list\nx = %mcp tools\nfor i in range(2):\n    %mcp list\n%synapse status\n"
    code = ip.shell.transform_cell(cell)
    assert ip.shell.should_run_async(cell, transformed_cell=code)
    lines = code.splitlines()
    call = "__import__('synapse_nb.notebook.kernel.awaited', fromlist=['run']).run(get_ipython(), "
    assert lines == [
        "import sys",
        f"await {call}'mcp', 'list')",
        f"x = await {call}'mcp', 'tools')",
        "for i in range(2):",
        "    get_ipython().run_line_magic('mcp', 'list')",  # inside a block: the runner's bridge
        f"await {call}'synapse', 'status')",
    ]
    ip.run(cell)
    assert list(ip.ns["x"].columns)[:2] == ["name", "server"]


def test_nothing_is_rewritten_when_the_shell_cannot_await(ip: Any) -> None:
    ip.shell.autoawait = False
    try:
        assert awaited_args(ip, "%mcp list") is None
    finally:
        ip.shell.autoawait = True
    assert rewrite(["%mcp list\n"]) is not None


def test_unload_removes_the_transformer_and_load_adds_it_once(ip: Any) -> None:
    ip.line("load_ext", "synapse_nb")
    assert sum(isinstance(t, InputTransformer) for t in ip.shell.input_transformers_cleanup) == 1
    ip.line("unload_ext", "synapse_nb")
    assert not any(isinstance(t, InputTransformer) for t in ip.shell.input_transformers_cleanup)
    assert ip.shell.transform_cell("%mcp list\n") == "get_ipython().run_line_magic('mcp', 'list')\n"


@pytest.mark.process
def test_awaited_cells_run_the_same_commands(ip: Any) -> None:
    ip.run("import sys")
    assert ip.run(f"%mcp connect {DEMO}") is None
    assert ip.published.final[-1]["text/plain"].startswith("✓ demo: connected")
    out = ip.run("%mcp call demo.echo text='it''s {not expanded}'")
    assert isinstance(out, CallOutput)
    assert out.text == "its {not expanded}"
    assert ip.run("%mcp list").state.tolist() == ["connected"]
    ip.run("server = 'demo'")
    assert set(ip.run("%mcp tools $server").server) == {"demo"}  # IPython's $name expansion, as before
    with pytest.raises(UsageError, match="has no tool 'nope'"):
        ip.run("%mcp call demo.nope")
    ip.run("%%synapse --out answer\nWhat tables are there?")
    assert ip.ns["answer"] is ip.ns["_synapse"]
    assert "orders" in ip.ns["answer"].text


def test_a_one_line_question_keeps_its_question_mark(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run("%synapse What tables are there?")
    result = ip.ns["_synapse"]
    assert result.messages[0].content == "What tables are there?"
    assert "not found" not in capsys.readouterr().out  # not IPython's `?` help
    ip.line("synapse", "ask What tables are there?")  # the same from code, through the runner
    assert ip.ns["_synapse"].messages[0].content == "What tables are there?"
    with pytest.raises(UsageError, match="missing question"):
        ip.run("%synapse ask")
    assert [t for t in synapse_nb.history().turns().prompt] == ["What tables are there?"] * 2


def test_help_still_works(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run("%%synapse --help\n")
    assert "--background" in capsys.readouterr().out
    ip.run("%mcp help")
    assert "connect NAME [--env K=V] [--cwd DIR] -- COMMAND" in capsys.readouterr().out  # options before --
    ip.shell.run_cell("%synapse?", store_history=False)
    assert "Ask the agent" in capsys.readouterr().out
    ip.shell.run_cell("%%synapse?\n", store_history=False)
    assert "Ask the agent" in capsys.readouterr().out


@pytest.mark.process
def test_interrupting_an_awaited_mcp_call_cancels_it_in_one_line(ip: Any) -> None:
    ip.run("import sys")
    ip.run(f"%mcp connect {DEMO}")
    server = ip.state.hub.server

    def shows_the_call() -> bool:
        return any(str(bundle.get("text/plain", "")).startswith("calling demo.sleep … ")
                   for bundle, _, _ in list(ip.published.items))

    def interrupt_when_the_sleep_started() -> None:
        deadline = time.monotonic() + 30
        while "sleep started (20 s)" not in server("demo").stderr_tail or not shows_the_call():
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)  # polling the server's stderr and the cell's outputs, under a deadline
        os.kill(os.getpid(), signal.SIGINT)

    watcher = threading.Thread(target=interrupt_when_the_sleep_started, daemon=True)
    watcher.start()
    with pytest.raises(CellInterrupted) as caught:
        ip.run("%mcp call demo.sleep seconds=20")
    watcher.join(5)
    assert caught.value._render_traceback_() == [
        "\x1b[0;31mKeyboardInterrupt\x1b[0m: the call of demo.sleep was cancelled; the server stays connected"
    ]
    assert shows_the_call()  # the awaited cell shows the call while it runs ...
    assert not any("calling" in b.get("text/plain", "") for b in ip.published.final)  # ... and not after
    assert ip.run("%mcp call demo.cancellations").text == "1"  # the server saw the MCP cancellation
    calls = synapse_nb.history().tool_calls()
    assert calls.error.tolist()[:1] == ["cancelled"]
