"""`%mcp` with the bundled demo server (a real subprocess): connect, list, tools, call, errors, secrets, interrupts."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError

import synapse_nb
from synapse_nb.notebook.commands.ask import CellInterrupted
from synapse_nb.notebook.commands.mcp_call import CallOutput
from tests.support import tools_server

Script = Callable[[Any], str]
DEMO = f"demo -- {tools_server.COMMAND}"


def connect_demo(ip: Any) -> None:
    ip.run("import sys")
    assert ip.line("mcp", f"connect {DEMO}") is None


@pytest.mark.process
def test_connect_list_tools_call_disconnect(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    connect_demo(ip)
    first = ip.published.items[0][0]
    assert first["text/plain"] == ""  # nbval sees this first, and the same in the saved notebook
    progress = ip.published.items[1][0]["text/plain"]
    command = tools_server.COMMAND
    assert progress.startswith(f"connecting demo (stdio: {command}) …")  # no emoji: DejaVu has no ⏳
    [done] = ip.published.final
    assert done["text/plain"].startswith("✓ demo: connected, ")
    assert " tools (stdio, pid " in done["text/plain"]

    servers = ip.line("mcp", "list")
    assert servers[["server", "transport", "state"]].to_dict("records") == [
        {"server": "demo", "transport": "stdio", "state": "connected"}
    ]
    assert servers.pid.iloc[0] > 0

    tools = ip.line("mcp", "tools demo")
    assert isinstance(tools, pd.DataFrame)
    row = tools.set_index("tool").loc["query"]
    assert (row["name"], row["server"], row["read_only"]) == ("demo__query", "demo", True)
    assert row["parameters"] == "sql"
    assert tools.set_index("tool").loc["drop_table", "destructive"]

    out = ip.line("mcp", "call demo.echo text='hello there'")
    assert isinstance(out, CallOutput)
    assert out.text == "hello there"
    assert "hello there" in out._repr_mimebundle_()["text/html"]
    assert ip.line("mcp", 'call demo.echo {"text": "from json"}').text == "from json"
    failed = ip.line("mcp", "call demo__fail message=broken")
    assert failed.result.is_error
    assert repr(failed).startswith("demo.fail → error")
    image = ip.line("mcp", "call demo.image")
    assert "image/png" in image._repr_mimebundle_()
    recorded = ip.line(
        "synapse", "sql SELECT tool, approval, is_error, origin, session_id FROM tool_calls ORDER BY started_at")
    assert recorded[["tool", "approval", "is_error", "origin"]].values.tolist() == [  # calls by hand are history too
        ["echo", "manual", False, "manual"], ["echo", "manual", False, "manual"], ["fail", "manual", True, "manual"],
        ["image", "manual", False, "manual"],
    ]
    assert recorded.session_id.isna().all()  # before any turn there is no session to file them under

    for line, needle in [
        ("call nowhere.echo text=x", "unknown server 'nowhere'; connected servers: demo"),
        ("call demo.nothing", "server 'demo' has no tool 'nothing'; its tools: list_tables"),
        ('call demo.echo {"text": ', "malformed JSON arguments"),
        ("call demo.echo text", "is not KEY=VALUE"),
        ("tools nowhere", "unknown server 'nowhere'"),
        ("inspect nowhere", "unknown server 'nowhere'"),
        ("frobnicate", "unknown subcommand 'frobnicate'"),
        ("disconnect", "name one server or use --all"),
    ]:
        with pytest.raises(UsageError) as caught:
            ip.line("mcp", line)
        assert needle in str(caught.value), line

    assert type(ip.line("mcp", "inspect demo")).__name__ == "Inspector"
    capsys.readouterr()
    ip.line("mcp", "restart demo")
    assert capsys.readouterr().out.startswith("demo restarted: connected,")
    ip.line("mcp", "disconnect demo")
    assert capsys.readouterr().out == "demo disconnected\n"
    assert ip.line("mcp", "list") is None
    assert "no MCP servers" in capsys.readouterr().out
    events = synapse_nb.history().server_events()
    assert {"connected", "restarted", "disconnected"} <= set(events.event)


@pytest.mark.process
def test_the_agent_uses_the_demo_server(ip: Any) -> None:
    connect_demo(ip)
    ip.cell("synapse", "What tables are there?")
    result = ip.ns["_synapse"]
    assert result.status == "finished"
    assert "list_tables" in result.tool_calls.tool.tolist()
    assert "orders" in result.text
    calls = synapse_nb.history().tool_calls()
    assert set(calls.server) == {"demo"}
    assert len(calls) == len(result.tool_calls)


@pytest.mark.process
def test_interrupt_during_a_tool_call_cancels_it_and_keeps_the_server(ip: Any, script: Script) -> None:
    connect_demo(ip)
    model = script([{"match": "sleep", "tool": "sleep", "arguments": {"seconds": 60}, "answer": "slept"}, "ok"])
    publish = ip.state.port.publish

    def interrupt_when_the_call_shows(bundle: dict[str, Any], display_id: str | None, update: bool) -> None:
        publish(bundle, display_id, update)
        if "running demo__sleep" in bundle.get("text/plain", ""):
            os.kill(os.getpid(), signal.SIGINT)  # the user presses Stop while the tool runs

    ip.state.port.publish = interrupt_when_the_call_shows
    with pytest.raises(CellInterrupted):
        ip.cell(f"synapse --model {model}", "please sleep")
    ip.state.port.publish = publish
    assert ip.ns["_synapse"].status == "cancelled"
    assert ip.line("mcp", "list").state.tolist() == ["connected"]
    assert ip.line("mcp", "call demo.echo text=still-here").text == "still-here"
    ip.cell(f"synapse --model {model}", "anything else")
    assert ip.ns["_synapse"].text == "ok"
    assert synapse_nb.history().turns().status.tolist() == ["cancelled", "finished"]


@pytest.mark.process
def test_a_server_that_fails_to_start_says_why_and_shows_its_stderr(ip: Any) -> None:
    ip.run("import sys")
    line = "connect bad -- {sys.executable} -c \"import sys; print('no config here', file=sys.stderr); sys.exit(3)\""
    with pytest.raises(UsageError, match="bad failed to start"):
        ip.line("mcp", line)
    assert "no config here" in ip.published.text()
    assert ip.line("mcp", "list").state.tolist() == ["failed — %mcp restart bad to retry"]
    assert "bad (failed — %mcp restart bad to retry, 0 tools)" in repr(ip.line("synapse", "status"))


@pytest.mark.process
def test_a_failed_server_says_so_once_and_a_call_to_it_says_how_to_restart(ip: Any) -> None:
    """Issue 22, section 4: `/bin/false` printed its failure twice (a "did not start" line, then the error),
    and `%mcp call bad.foo {}` said "has no tool 'foo'; its tools: none" of a server that is not running."""
    ip.run("import sys")
    with pytest.raises(UsageError, match="bad failed to start: the server exited with status 3 during the handshake"
                       ) as caught:
        ip.line("mcp", 'connect bad -- {sys.executable} -c "raise SystemExit(3)"')
    assert "did not start" not in ip.published.text()  # the error is the one place it is said
    assert "\n" not in str(caught.value)
    with pytest.raises(UsageError) as caught:
        ip.line("mcp", "call bad.foo {}")
    message = str(caught.value)
    assert message.startswith("%mcp call: server 'bad' is not running (failed: the server exited with status 3")
    assert message.endswith("start it again with %mcp restart bad")
    assert "has no tool" not in message


@pytest.mark.process
def test_bin_false_says_its_exit_status(ip: Any) -> None:
    """Issue 22, section 4: `%mcp connect x -- /bin/false` said the connection closed, not how the process ended
    (the SDK's stdio client reaps the process and drops its return code)."""
    with pytest.raises(UsageError) as caught:
        ip.line("mcp", "connect x -- /bin/false")
    assert "the server exited with status 1 during the handshake" in str(caught.value)
    assert "(did it exit?)" not in str(caught.value)


@pytest.mark.process
def test_a_server_killed_by_a_signal_says_which(ip: Any) -> None:
    ip.run("import sys")
    with pytest.raises(UsageError) as caught:
        ip.line("mcp", 'connect sig -- {sys.executable} -c "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"')
    assert "the server was killed by signal 15 (SIGTERM) during the handshake" in str(caught.value)


def test_header_secrets_are_never_shown_or_recorded(ip: Any) -> None:
    token = "Bearer sk-planted-7f3a9c1e5b2d4f60"
    with pytest.raises(UsageError) as caught:
        ip.line("mcp", f"connect api http://127.0.0.1:9/mcp --header 'Authorization={token}' --timeout 5")
    assert token not in str(caught.value)
    assert "sk-planted" not in ip.published.text()
    assert ip.state.store.redactor.redact(f"x {token} y") != f"x {token} y"
    recorded = synapse_nb.history().server_events().to_json(date_format="iso")
    assert "sk-planted" not in recorded


@pytest.mark.process
def test_connect_from_a_config_file(ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEMO_TOKEN", "tok-secret-value-123456")
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {
        "demo": {"command": sys.executable, "args": list(tools_server.ARGS),
                 "env": {"DEMO_TOKEN": "${env:DEMO_TOKEN}"}, "approve": {"drop_table": "deny"}},
        "broken": {"command": sys.executable, "args": ["-c", "raise SystemExit(2)"]},
        "off": {"command": "nothing", "disabled": True},
    }}))
    ip.line("mcp", f"connect --config {config}")
    text = ip.published.text()
    assert "demo: ✓ connected," in text
    assert "broken: ✗ failed:" in text
    assert "off" not in text
    assert ip.line("mcp", "call demo.env name=DEMO_TOKEN").result.structured_content == {
        "name": "DEMO_TOKEN", "set": True,
    }
    assert "tok-secret-value-123456" not in synapse_nb.history().server_events().to_json(date_format="iso")
    assert ip.state.policy.decide(ip.state.hub.tool("demo__drop_table")) == "deny"
    monkeypatch.setenv("SYNAPSE_MCP_CONFIG", str(config))
    # one entry by name (issue 21, defect 3), even a disabled one; a name the file lacks lists what it has
    ip.line("mcp", "disconnect demo")
    ip.line("mcp", "connect demo")
    assert [s.name for s in ip.state.hub.servers if s.state == "connected"] == ["demo"]
    with pytest.raises(UsageError, match=r"no server 'nope' in .*servers.json \(its servers: demo, broken, off\)"):
        ip.line("mcp", "connect nope")
    monkeypatch.setenv("SYNAPSE_MCP_CONFIG", str(tmp_path / "missing.json"))
    with pytest.raises(UsageError, match="does not exist"):
        ip.line("mcp", "connect")


@pytest.mark.process
def test_connect_options_after_the_command_are_the_servers_and_the_cell_says_so(ip: Any) -> None:
    """Issue 21, defect 1: `--env K=V` after `--` went to the server silently (server-memory then wrote its
    graph into its own folder). Every word after `--` stays the server's, and the cell says so in one line."""
    ip.run("import sys")
    with pytest.raises(UsageError, match="bad failed to start"):
        ip.line("mcp", 'connect bad -- {sys.executable} -c "raise SystemExit(3)" --env MEMORY_FILE_PATH=/x --timeout 5')
    notes = [line for line in ip.published.text().splitlines() if line.startswith("note:")]
    assert notes == ["note: --env, --timeout after the command go to the server, not to %mcp connect; connect "
                     "options go before `--`: %mcp connect bad --env ... -- COMMAND ..."]


def test_listings_show_every_row_and_the_whole_text() -> None:
    """Issue 21, defect 4: with 9 servers (96 tools) `%mcp tools` showed 10 rows (pandas' max_rows) and cut
    descriptions, parameters and reasons at 50 characters."""
    import pandas as pd

    from synapse_nb.notebook.output.listing import Listing

    long = "a description that goes on and on " * 8
    frame = Listing([{"name": f"s__t{i}", "description": long.strip()} for i in range(96)])
    with pd.option_context("display.max_rows", 10, "display.max_colwidth", 50):
        html, text = frame._repr_html_(), repr(frame)
    assert "s__t95" in html
    assert "s__t50" in html
    assert long.strip() in html
    assert "s__t50" in text
    assert long.strip() in text
    assert type(frame[frame.name == "s__t1"]) is pd.DataFrame  # what code derives is an ordinary frame
