"""`%mcp` against the real demo server: the connect time the user waited, "already connected", the ticking
`calling SERVER.TOOL`, interrupts, `CallOutput.df`, `%mcp read` / `%mcp prompt`, and the shop-only tool list."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError

import synapse_nb
from synapse_nb.mcp_client import loaded
from synapse_nb.notebook.commands import mcp as mcp_cmd
from synapse_nb.notebook.commands.ask import CellInterrupted
from synapse_nb.notebook.commands.mcp_read import PromptOutput, ReadOutput
from tests.support import tools_server

SHOP = "{sys.executable} -m synapse_nb.mcp_client.demo_server"
DEMO = f"demo -- {tools_server.COMMAND}"
SHOP_TOOLS = {"list_tables", "describe_table", "query", "summarize_column", "drop_table"}


def connect_demo(ip: Any) -> None:
    ip.run("import sys")
    ip.line("mcp", f"connect {DEMO}")


def final_line(ip: Any) -> str:
    text: str = ip.published.final[-1]["text/plain"]
    return text


@pytest.mark.process
def test_connect_reports_the_time_the_user_waited(ip: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The hub's connect_ms starts after the process and the SDK are up; the user waited for all of it.
    # A fake wall clock makes the command's own measure visible: 2.5 s, whatever connect_ms is.
    # The MCP client is loaded first: a connect that waits for that says it apart (test_nb_connect_cost.py).
    ip.state.runner.run(loaded())
    ticks = iter([100.0, 102.5])
    monkeypatch.setattr(mcp_cmd, "clock", lambda: next(ticks))
    connect_demo(ip)
    assert re.fullmatch(r"✓ demo: connected, \d+ tools \(stdio, pid \d+\) in 2\.5 s", final_line(ip))
    assert ip.state.hub.server("demo").connect_ms != 2500.0


@pytest.mark.process
def test_a_duplicate_connect_says_already_connected(ip: Any) -> None:
    connect_demo(ip)
    pid = ip.state.hub.server("demo").pid
    ip.published.clear()
    ip.line("mcp", f"connect {DEMO}")
    assert re.fullmatch(rf"✓ demo: already connected, \d+ tools \(stdio, pid {pid}\)", final_line(ip))
    assert ip.state.hub.server("demo").pid == pid
    ip.published.clear()
    ip.line("mcp", "connect demo -- {sys.executable} -m synapse_nb.mcp_client.demo_server")  # another config
    assert final_line(ip).startswith("✓ demo: connected, 5 tools (stdio, pid ")
    assert ip.state.hub.server("demo").pid != pid


@pytest.mark.process
def test_connect_from_config_reports_the_wait_and_already_connected(
    ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {
        "shop": {"command": sys.executable, "args": ["-m", "synapse_nb.mcp_client.demo_server"]},
    }}))
    ticks = iter([10.0, 13.25, 20.0, 20.5])
    monkeypatch.setattr(mcp_cmd, "clock", lambda: next(ticks))
    ip.line("mcp", f"connect --config {config}")
    assert re.fullmatch(r"shop: ✓ connected, 5 tools \(stdio, pid \d+\) in .+\nall done in 3\.2 s", final_line(ip))
    pid = ip.state.hub.server("shop").pid
    ip.published.clear()
    ip.line("mcp", f"connect --config {config}")
    assert final_line(ip) == f"shop: ✓ already connected, 5 tools (stdio, pid {pid})\nall done in 500 ms"


@pytest.mark.process
def test_the_quickstart_server_offers_only_the_shop(ip: Any) -> None:
    ip.run("import sys")
    ip.line("mcp", f"connect shop -- {SHOP}")
    assert set(ip.line("mcp", "tools shop").tool) == SHOP_TOOLS
    with pytest.raises(UsageError, match="server 'shop' has no tool 'sleep'"):
        ip.line("mcp", "call shop.sleep seconds=1")


@pytest.fixture
def interrupt_after_ticks(ip: Any) -> Iterator[list[str]]:
    """Presses Stop once `calling demo.sleep` has shown two different elapsed times; yields what it showed."""
    shown: list[str] = []
    publish = ip.state.port.publish

    def watch(bundle: dict[str, Any], display_id: str | None, update: bool) -> None:
        publish(bundle, display_id, update)
        text = bundle.get("text/plain", "")
        if text.startswith("calling demo.sleep … ") and text not in shown:
            shown.append(text)
            if len(shown) == 2:
                os.kill(os.getpid(), signal.SIGINT)

    ip.state.port.publish = watch
    yield shown
    ip.state.port.publish = publish


@pytest.mark.process
def test_call_ticks_while_it_runs_and_an_interrupt_is_one_line(ip: Any, interrupt_after_ticks: list[str]) -> None:
    connect_demo(ip)
    with pytest.raises(CellInterrupted) as caught:
        ip.line("mcp", "call demo.sleep seconds=60")
    assert str(caught.value) == "the call of demo.sleep was cancelled; the server stays connected"
    assert caught.value._render_traceback_() == [f"\x1b[0;31mKeyboardInterrupt\x1b[0m: {caught.value}"]
    first, second = interrupt_after_ticks
    assert re.fullmatch(r"calling demo\.sleep … \d+ ms", first)  # shown once the call has run SHOW_AFTER
    assert re.fullmatch(r"calling demo\.sleep … \d+(\.\d)? m?s", second)
    assert not any("calling" in b.get("text/plain", "") for b in ip.published.final)  # the live line is gone
    assert ip.line("mcp", "list").state.tolist() == ["connected"]
    assert ip.line("mcp", "call demo.cancellations").result.structured_content == {"result": 1}
    recorded = synapse_nb.history().tool_calls()
    assert recorded.set_index("tool").loc["sleep", "error"] == "cancelled"


def test_no_emoji_in_the_mcp_commands() -> None:
    source = Path(mcp_cmd.__file__).read_text(encoding="utf-8")
    assert not re.search("[\U0001f300-\U0001faff\u23e9-\u23fa\u2b50\u2705]", source)


@pytest.mark.process
def test_call_output_df_gives_a_table_or_structured_content(ip: Any) -> None:
    connect_demo(ip)
    rows = ip.line("mcp", "call demo.query sql='SELECT name, unit_price FROM products ORDER BY name LIMIT 3'")
    frame = rows.df
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["name", "unit_price"]
    assert len(frame) == 3
    structured = ip.line("mcp", "call demo.env name=PATH").df
    assert structured.to_dict("records") == [{"name": "PATH", "set": True}]
    with pytest.raises(ValueError, match="holds no table and no structured content"):
        _ = ip.line("mcp", "call demo.echo text=hi").df


@pytest.mark.process
def test_read_and_prompt(ip: Any) -> None:
    connect_demo(ip)
    schema = ip.line("mcp", "read demo demo://schema")
    assert isinstance(schema, ReadOutput)
    assert "## orders" in schema.text
    assert "## orders" in schema._repr_mimebundle_()["text/html"]
    prompt = ip.line("mcp", "prompt demo explore_table table=orders")
    assert isinstance(prompt, PromptOutput)
    assert [m.role for m in prompt.messages] == ["user"]
    assert "table orders" in prompt.text
    assert repr(prompt).startswith("demo.explore_table — Explore one table of the demo shop\nuser: ")


@pytest.mark.process
@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("read demo", "%mcp read: name a server and a resource URI, e.g. %mcp read demo demo://schema"),
        ("read nowhere demo://schema", "unknown server 'nowhere'; connected servers: demo"),
        ("read demo demo://nothing", "demo://nothing"),
        ("prompt demo", "%mcp prompt: name a server and a prompt"),
        ("prompt demo nope", "server 'demo' has no prompt 'nope'; its prompts: explore_table"),
        ("prompt demo explore_table", "explore_table needs table; e.g. %mcp prompt demo explore_table table=VALUE"),
        ("prompt demo explore_table orders", "'orders' is not KEY=VALUE"),
    ],
)
def test_read_and_prompt_bad_input_is_one_line(ip: Any, line: str, needle: str) -> None:
    connect_demo(ip)
    with pytest.raises(UsageError) as caught:
        ip.line("mcp", line)
    assert needle in str(caught.value)
    assert "\n" not in str(caught.value)


def test_help_lists_read_and_prompt(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.line("mcp", "help")
    out = capsys.readouterr().out
    assert "read SERVER URI" in out
    assert "prompt SERVER NAME [k=v ...]" in out
    assert sys.executable  # the help shows {sys.executable} literally, for the user's kernel to expand


@pytest.mark.process
def test_an_env_value_that_is_no_secret_stays_readable_and_one_that_is_is_masked(ip: Any) -> None:
    # --env DOCUMENT_ID=notebook.ipynb blanked every later mention of notebook.ipynb: every env value of six
    # characters or more was a secret. Now secret names, key-like values and URL passwords are; the rest is not.
    ip.run("import sys")
    ip.line("mcp", "connect demo --env DOCUMENT_ID=notebook.ipynb --env API_TOKEN=plain-words-here "
                   "--env RANDOM_ID=a9F3kQ7zL2mX8vB4nR6t "
                   f"--env DATABASE_URL=postgresql://reader:pw4db55@db/shop -- {tools_server.COMMAND}")
    text = "open notebook.ipynb with plain-words-here, a9F3kQ7zL2mX8vB4nR6t and pw4db55"
    out = ip.line("mcp", f"call demo.echo text='{text}'")
    assert out.text == text  # what the server answered, as it answered
    frame = synapse_nb.history().tool_calls()
    recorded = frame.result_text.iloc[-1] + json.dumps(frame.arguments.iloc[-1])
    assert "open notebook.ipynb with [REDACTED], [REDACTED] and [REDACTED]" in recorded
