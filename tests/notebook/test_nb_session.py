"""`%synapse` subcommands and `%%synapse_sql`: status, model, sessions, history, SQL, reset, help, errors."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError

from synapse_nb.notebook.commands.session import Status

Script = Callable[[Any], str]


def test_status_before_anything_happened(ip: Any, clean_env: Any) -> None:
    status = ip.line("synapse", "status")
    assert isinstance(status, Status)
    text = repr(status)
    assert "scripted:demo (offline scripted model" in text
    assert re.search(r"^session +main \(new\)$", text, re.M)
    assert re.search(r"^MCP servers +none \(%mcp connect \.\.\.\)$", text, re.M)
    assert str(clean_env / "history.duckdb") in text
    assert "| **model** |" in status._repr_markdown_()
    assert isinstance(ip.line("synapse"), Status)  # bare %synapse is status


def test_model_shows_and_switches_with_early_checks(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.line("synapse", "model")
    assert capsys.readouterr().out.startswith("scripted:demo (offline scripted model")
    with pytest.raises(UsageError, match="set OPENAI_API_KEY"):
        ip.line("synapse", "model openai:gpt-4.1-mini")
    with pytest.raises(UsageError, match="PROVIDER:MODEL"):
        ip.line("synapse", "model claude")
    ip.line("synapse", "model scripted:demo")
    assert ip.state.models.model == "scripted:demo"


def test_config_traitlets_are_validated_and_used(
    ip: Any, script: Script, caplog: pytest.LogCaptureFixture
) -> None:
    ip.run("%config SynapseMagics.max_iterations = 3")
    assert ip.state.settings().max_iterations == 3
    ip.run("%config SynapseMagics.approve = 'sometimes'")  # %config logs the error and keeps the old value
    assert "SynapseMagics.approve must be auto, ask, deny or empty, not 'sometimes'" in caplog.text
    assert ip.magics.approve == ""
    ip.run(f"%config SynapseMagics.model = '{script(['configured model'])}'")
    ip.cell("synapse", "hi")
    assert ip.ns["_synapse"].text == "configured model"


def test_sessions_new_list_switch(ip: Any, script: Script, capsys: pytest.CaptureFixture[str]) -> None:
    model = script(["a", "b", "c"])
    ip.cell(f"synapse --model {model}", "q1")
    ip.line("synapse", "session new")
    assert "new session main-2" in capsys.readouterr().out
    ip.cell(f"synapse --model {model}", "q2")
    ip.line("synapse", "session")
    assert "session main-2 (2 messages" in capsys.readouterr().out
    sessions = ip.line("synapse", "session list")
    assert sessions.name.tolist() == ["main", "main-2"]
    assert sessions.current.tolist() == [False, True]
    assert sessions.turns.tolist() == [1, 1]
    ip.line("synapse", "session switch main")
    assert "switched to session main (2 messages so far)" in capsys.readouterr().out
    with pytest.raises(UsageError, match="unknown action 'delete'"):
        ip.line("synapse", "session delete main")
    with pytest.raises(UsageError, match="name one session"):
        ip.line("synapse", "session switch")


def test_history_and_sql(ip: Any, script: Script) -> None:
    model = script(["one", "two", "three"])
    for prompt in ("first", "second", "third"):
        ip.cell(f"synapse --model {model}", prompt)
    recent = ip.line("synapse", "history -n 2")
    assert isinstance(recent, pd.DataFrame)
    assert recent.prompt.tolist() == ["second", "third"]
    assert set(recent.columns) >= {"session", "status", "tool_calls", "tokens", "duration_ms"}
    assert len(ip.line("synapse", "history")) == 3
    # shown for people: durations to 0.1 ms, times to the second, an unknown cost or no error left blank
    assert all(round(ms, 1) == ms for ms in recent.duration_ms)
    assert all(t.microsecond == 0 for t in recent.started_at)
    shown = repr(recent) + str(recent._repr_html_())
    for blank in ("NaN", "None", "<NA>", "NaT"):
        assert blank not in shown, blank
    frame = ip.line("synapse", "sql SELECT role, count(*) AS n FROM messages GROUP BY role ORDER BY role")
    assert frame.to_dict("records") == [{"role": "assistant", "n": 3}, {"role": "user", "n": 3}]
    cell = ip.cell("synapse_sql --out turns_df", "SELECT prompt\nFROM turns\nORDER BY started_at")
    assert cell.prompt.tolist() == ["first", "second", "third"]
    assert ip.ns["turns_df"] is cell


def test_synapse_sql_shows_long_cells_whole(ip: Any) -> None:
    prompt = "Which of our customers in the north region bought more than three kettles last spring?"  # 87 chars
    frame = ip.line("synapse", f"sql SELECT '{prompt}' AS prompt, repeat('y', 2500) AS big")
    shown, html = repr(frame), frame._repr_html_()
    assert prompt in shown
    assert prompt in html
    assert "y" * 1_990 in shown  # a generous cap (2,000 characters), said with pandas' "..."
    assert "y" * 2_000 not in shown
    assert "y..." in shown
    cell = ip.cell("synapse_sql", f"SELECT '{prompt}' AS prompt")
    assert prompt in repr(cell)


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("history -n x", "-n: needs a whole number"),
        ("history -n 0", "-n must be at least 1"),
        ("history --all", "unknown option --all"),
        ("sql", "missing query"),
        ("sql SELEC 1", "history query failed: Parser Error"),
        ("sql SELECT * FROM nowhere", "history query failed: Catalog Error"),
        ("--frobnicate", "unknown option --frobnicate"),  # a plain word is a question (test_nb_ask)
        ("inspect", "has no turns yet"),
        ("reset now", "unexpected 'now'"),
    ],
)
def test_bad_subcommands(ip: Any, line: str, needle: str) -> None:
    with pytest.raises(UsageError) as caught:
        ip.line("synapse", line)
    assert needle in str(caught.value)


def test_synapse_sql_option_errors(ip: Any) -> None:
    """`%%synapse_sql`'s options are an OptionSet (declared once: the parser, the errors and `%synapse help`)."""
    for line, message in [
        ("synapse_sql --limit 3", "%%synapse_sql: unknown option --limit; see %synapse help"),
        ("synapse_sql --out", "%%synapse_sql: --out needs a value; see %synapse help"),
        ("synapse_sql --out 1x", "%%synapse_sql: --out: needs a Python name, not '1x'; see %synapse help"),
        ("synapse_sql --out df extra", "%%synapse_sql: unexpected 'extra'; options are --out NAME and --lake LAKE, "
                                       "e.g. %%synapse_sql --out df"),
    ]:
        with pytest.raises(UsageError) as caught:
            ip.cell(line, "SELECT 1")
        assert str(caught.value) == message


def test_reset_forgets_the_conversation(ip: Any, script: Script) -> None:
    model = script(["first", "second"])
    ip.cell(f"synapse --model {model}", "q")
    before = ip.ns["_synapse"].session_id
    ip.line("synapse", "reset")
    ip.cell(f"synapse --model {model}", "q again")
    assert ip.ns["_synapse"].text == "first"
    assert ip.ns["_synapse"].session_id != before


def test_inspect_gives_the_session_trace_widget(ip: Any, script: Script) -> None:
    ip.cell(f"synapse --model {script(['hello'])}", "q")
    widget = ip.line("synapse", "inspect")
    assert type(widget).__name__ == "SessionTrace"


def test_help_texts(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from synapse_nb.notebook.magics import SYNAPSE_HELP

    ip.line("synapse", "help")
    out = capsys.readouterr().out
    for usage in ("status", "model [ID]", "session new [NAME]", "session list", "session switch NAME", "history [-n N]",
                  "cost [--by B] [--since WHEN]", "sql QUERY", "sql --lake LAKE QUERY", "inspect", "reset",
                  "record PATH | off", "replay PATH [--live-tools] | off", "ask PROMPT", "help", "QUESTION",
                  "--by B", "--since WHEN", "-n N", "--out NAME", "--lake LAKE"):
        assert f"  {usage} " in out or out.count(f"  {usage}\n"), usage
    ip.line("synapse", "--help")  # IPython refuses a cell magic with an empty body, so the line form too
    out = capsys.readouterr().out
    for option in ("--model", "--session", "--system", "--tools", "--no-tools", "--max-iterations", "--approve",
                   "--format", "--out", "--background", "--no-history", "--help"):
        assert option in out
    ip.line("mcp", "help")
    out = capsys.readouterr().out
    from synapse_nb.notebook.magics import MCP_TABLE, SYNAPSE_TABLE

    for table, shown in ((MCP_TABLE, out), (SYNAPSE_TABLE, SYNAPSE_HELP)):
        for entry in table.entries:  # every subcommand and each of its forms, with its help's first words
            assert f"  {entry.name} {entry.usage}".rstrip() in shown, entry.name
            assert entry.help.split()[0] in shown
            for usage, _ in entry.forms:
                assert f"  {entry.name} {usage}".rstrip() in shown, (entry.name, usage)
    for usage in ("connect NAME URL [--header K=V]", "connect --config PATH", "list", "tools [SERVER]",
                  'call SERVER.TOOL {"key": "value"}', "call SERVER.TOOL key=value ...", "disconnect NAME | --all",
                  "restart NAME", "inspect [NAME]", "read SERVER URI", "prompt SERVER NAME [k=v ...]",
                  "logs NAME [-n N] [--level LEVEL | --stderr]", "roots NAME [PATH...]", "subscribe NAME URI",
                  "unsubscribe NAME URI", "auth NAME", "logout NAME", "--stderr", "--level LEVEL", "--env K=V"):
        assert f"  {usage}" in out, usage


def test_switch_resumes_a_session_recorded_by_another_kernel(
    ip: Any, script: Script, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(["first answer", "second answer"])
    ip.cell(f"synapse --model {model} --session alpha", "first question")
    session_id = ip.ns["_synapse"].session_id
    ip.state.sessions.agents.clear()  # what a new kernel on the same history file knows of it: nothing
    ip.line("synapse", "session new")
    capsys.readouterr()
    ip.line("synapse", "session switch alpha")
    assert "resumed session alpha from the history file (2 messages)" in capsys.readouterr().out
    agent = ip.state.sessions["alpha"]
    assert agent.session_id == session_id
    assert [m.content for m in agent.messages] == ["first question", "first answer"]  # the model sees them
    ip.cell(f"synapse --model {model}", "second question")
    assert ip.ns["_synapse"].session_id == session_id
    rows = ip.line("synapse", f"sql SELECT seq, content FROM messages WHERE session_id = '{session_id}' ORDER BY seq")
    assert rows.content.tolist() == ["first question", "first answer", "second question", "second answer"]
    assert rows.seq.is_unique
    assert len(ip.line("synapse", f"sql SELECT * FROM sessions WHERE session_id = '{session_id}'")) == 1


def test_switch_by_id_prefix_and_unknown_names_start_fresh(
    ip: Any, script: Script, capsys: pytest.CaptureFixture[str]
) -> None:
    ip.cell(f"synapse --model {script(['x'])} --session beta", "q")
    prefix = ip.ns["_synapse"].session_id[:8]
    ip.state.sessions.agents.clear()
    ip.line("synapse", f"session switch {prefix}")
    assert "resumed session beta from the history file (2 messages)" in capsys.readouterr().out
    ip.line("synapse", "session switch gamma")
    assert "switched to session gamma (new)" in capsys.readouterr().out


def test_a_notebook_opened_twice_records_each_kernel_under_its_own_name(
    ip: Any, script: Script, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(["one", "two", "three"])
    ip.state.port.kernel_id = "11111111-aaaa-4bbb-8ccc-000000000001"
    ip.cell(f"synapse --model {model}", "first kernel")
    first = ip.ns["_synapse"]
    assert first.session == "main"
    # The same notebook in a second kernel: the same default name, the same history file.
    ip.state.sessions.agents.clear()
    ip.state.sessions.current = "main"
    ip.state.port.kernel_id = "22222222-dddd-4eee-8fff-000000000002"
    ip.cell(f"synapse --model {model}", "second kernel")
    second = ip.ns["_synapse"]
    assert second.session == "main-22222222"
    assert second.session_id != first.session_id
    rows = ip.line("synapse", "sql SELECT name, kernel_id FROM sessions ORDER BY created_at")
    assert rows.values.tolist() == [
        ["main", "11111111-aaaa-4bbb-8ccc-000000000001"], ["main-22222222", "22222222-dddd-4eee-8fff-000000000002"],
    ]
    capsys.readouterr()
    ip.line("synapse", "session switch main")  # the first kernel's conversation stays reachable by its name
    assert "resumed session main from the history file (2 messages)" in capsys.readouterr().out
    ip.cell(f"synapse --model {model}", "back to the first")
    assert ip.ns["_synapse"].session_id == first.session_id


def test_status_says_tracing_budget_and_lake_only_when_on(
    ip: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED",
                "OTEL_TRACES_EXPORTER", "SYNAPSE_OTEL_CONTENT"):
        monkeypatch.delenv(var, raising=False)
    header = "hdr-otel-secret-5e2b9c"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"authorization=Bearer%20{header}")
    text = repr(ip.line("synapse", "status"))
    for word in ("tracing", "session budget", "lake"):
        assert not re.search(rf"^{word} ", text, re.M), text

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel:qtoken-77@127.0.0.1:4318")
    lake = tmp_path / "lake"
    ip.run("%config SynapseMagics.session_budget = 2.5")
    ip.run(f"%config SynapseMagics.publish_to = {str(lake)!r}")
    status = ip.line("synapse", "status")
    text = repr(status)
    assert re.search(r"^tracing +on: OTLP/HTTP to http://127\.0\.0\.1:4318/v1/traces$", text, re.M)
    assert re.search(r"^session budget +\$2\.50 per session \(SynapseMagics\.session_budget\)$", text, re.M)
    assert re.search(rf"^lake +publishes to {re.escape(str(lake))} after each turn$", text, re.M)
    shown = text + status._repr_markdown_()
    assert header not in shown
    assert "qtoken-77" not in shown

    ip.run("%config SynapseMagics.otel = False")  # the setting wins over the variables
    ip.run("%config SynapseMagics.session_budget = 0.0")
    ip.run("%config SynapseMagics.publish_to = ''")
    text = repr(ip.line("synapse", "status"))
    for word in ("tracing", "session budget", "lake"):
        assert not re.search(rf"^{word} ", text, re.M), text


def test_session_option_in_a_new_kernel_continues_the_recorded_session(ip: Any, script: Script) -> None:
    model = script(["first answer", "second answer"])
    ip.cell(f"synapse --model {model} --session w1", "first question")
    session_id = ip.ns["_synapse"].session_id
    ip.state.sessions.agents.clear()  # a new kernel on the same history file
    ip.cell(f"synapse --model {model} --session w1", "second question")
    assert ip.ns["_synapse"].session_id == session_id  # the same w1, not a second session of that name
    assert ip.ns["_synapse"].session == "w1"
    rows = ip.line("synapse", "sql SELECT session_id FROM sessions WHERE name = 'w1'")
    assert len(rows) == 1
    contents = ip.line("synapse", f"sql SELECT content FROM messages WHERE session_id = '{session_id}' ORDER BY seq")
    assert contents.content.tolist() == ["first question", "first answer", "second question", "second answer"]
