"""`%synapse record` / `%synapse replay` in a shell: a real OpenAI-wire provider over HTTP to the local server,
recorded with secrets planted, then replayed with the server stopped and no key; history marks and export."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

import synapse_nb
from synapse_nb.notebook.commands.ask import TurnError
from tests.support.llm_server import LlmServer, call, text, tool_calls

FAKE_KEY = "sk-fake-replay-test-0123456789abcdef"
HEADER = "hdr-secret-value-7c1f0e9a"  # as `%mcp connect ... --header` registers it
ENV_SECRET = "env-token-value-3b8d2a6f"
SECRETS = (FAKE_KEY, HEADER, ENV_SECRET)
RECORD = "synapse --model openai:gpt-test --session rec --approve auto"
REPLAY = "synapse --model openai:gpt-test --session rep"
FIRST = "Look up x."
SECOND = "And then?"

TOOL = '''
import os, synapse_nb
lookups = []
@synapse_nb.tool(annotations={"destructiveHint": True})  # asks approval before it runs
def lookup(q: str) -> str:
    """Look something up."""
    lookups.append(q)
    return f"found {q}: token {os.environ['MY_SERVICE_TOKEN']} header HEADER"
'''.replace("HEADER", HEADER)


@pytest.fixture
def server(clean_env: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[LlmServer]:
    with LlmServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        monkeypatch.setenv("MY_SERVICE_TOKEN", ENV_SECRET)
        yield server


def record(ip: Any, server: LlmServer, path: Path) -> list[str]:
    """Two turns recorded (one calls the notebook tool); their answers."""
    ip.run(TOOL)
    ip.state.add_secret(HEADER)
    ip.line("synapse", f"record {path}")
    server.queue(tool_calls(call("lookup", {"q": "x"})), text(f"x is there (key {FAKE_KEY})."), text("Nothing else."))
    answers = []
    for prompt in (FIRST, SECOND):
        ip.cell(RECORD, prompt)
        answers.append(ip.ns["_synapse"].text)
    assert "recorded to c.jsonl" in ip.published.text()
    return answers


def test_a_recorded_notebook_replays_offline_with_the_same_answers(
    ip: Any, server: LlmServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "c.jsonl"
    answers = record(ip, server, path)
    ip.line("synapse", "record off")
    assert "stopped recording" in capsys.readouterr().out
    assert ip.ns["lookups"] == ["x"]
    recorded = path.read_text()
    for secret in SECRETS:
        assert secret not in recorded
    assert [json.loads(line).get("type") for line in recorded.splitlines()[1:]] == ["exchange", "tool", "exchange",
                                                                                    "exchange"]
    served = len(server.requests)
    server.stop()
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")

    ip.line("synapse", f"replay {path}")
    assert "replaying" in capsys.readouterr().out
    ip.published.clear()
    replayed = []
    for prompt in (FIRST, SECOND):
        ip.cell(REPLAY, prompt)
        replayed.append(ip.ns["_synapse"].text)
    assert [a.replace(FAKE_KEY, "[REDACTED]") for a in answers] == replayed
    assert ip.ns["lookups"] == ["x"]  # answered from the cassette, not run ...
    assert ip.prompts == []  # ... so no one was asked to approve it
    assert "replayed from c.jsonl" in ip.published.text()
    assert len(server.requests) == served

    h = synapse_nb.history()
    turns = h.sql("SELECT s.name, t.replayed FROM turns t JOIN sessions s USING (session_id) ORDER BY t.started_at")
    assert turns.values.tolist() == [["rec", False], ["rec", False], ["rep", True], ["rep", True]]
    assert h.sql("SELECT count(*) AS n FROM llm_calls WHERE replayed").n[0] == 3
    assert h.tool_calls().approval.tolist() == ["auto", "replayed"]

    with pytest.raises(TurnError) as caught:
        ip.cell(REPLAY, "Something I never asked.")
    message = str(caught.value)
    assert message.startswith("ReplayMismatchError: replay: this request is not in the cassette c.jsonl: message #6")
    assert "\n" not in message

    ip.line("synapse", f"replay {path} --live-tools")
    ip.cell(REPLAY.replace("rep", "live") + " --approve auto", FIRST)
    assert ip.ns["lookups"] == ["x", "x"]  # run live; its result masks to what was recorded
    assert ip.ns["_synapse"].text == replayed[0]
    ip.line("synapse", "replay off")
    assert "replay is off" in capsys.readouterr().out


def test_a_session_exports_from_the_history_as_the_cassette_it_recorded(
    ip: Any, server: LlmServer, tmp_path: Path,
) -> None:
    path = tmp_path / "c.jsonl"
    record(ip, server, path)
    ip.line("synapse", "record off")
    exported = synapse_nb.history().export_cassette("rec", tmp_path / "exported.jsonl")
    text_ = exported.read_text()
    for secret in SECRETS:
        assert secret not in text_

    def fingerprints(p: Path) -> list[str]:
        return [json.loads(line)["fingerprint"] for line in p.read_text().splitlines() if '"exchange"' in line]

    assert fingerprints(exported) == fingerprints(path)
    tools = [json.loads(line) for line in text_.splitlines() if '"type": "tool"' in line]
    assert [(t["name"], t["arguments"]) for t in tools] == [("lookup", {"q": "x"})]
    server.stop()
    ip.line("synapse", f"replay {exported}")
    ip.cell(REPLAY, FIRST)
    assert ip.ns["_synapse"].text == "x is there (key [REDACTED])."
    with pytest.raises(synapse_nb.HistoryError, match="no session named 'nope'"):
        synapse_nb.history().export_cassette("nope", tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()


def test_bad_record_and_replay_lines_are_one_line_errors(ip: Any, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="name the cassette file"):
        ip.line("synapse", "replay")
    with pytest.raises(UsageError, match=r"cannot read the cassette .*missing\.jsonl"):
        ip.line("synapse", f"replay {tmp_path / 'missing.jsonl'}")
    with pytest.raises(UsageError, match="one cassette file, not 2 words"):
        ip.line("synapse", "record a.jsonl b.jsonl")
    with pytest.raises(UsageError, match="unknown option --fast"):
        ip.line("synapse", "replay a.jsonl --fast")
    (tmp_path / "x.jsonl").write_text("{}\n")
    with pytest.raises(UsageError, match="not a synapse_nb cassette"):
        ip.line("synapse", f"replay {tmp_path / 'x.jsonl'}")
    assert ip.state.tape is None


def test_synapse_replay_in_the_environment_turns_replay_on_at_load(
    ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "c.jsonl"
    ip.line("synapse", f"record {path}")
    ip.cell("synapse --session s", "What tables are there?")
    ip.line("synapse", "record off")
    answer = ip.ns["_synapse"].text
    ip.line("unload_ext", "synapse_nb")
    monkeypatch.setenv("SYNAPSE_REPLAY", str(path))
    capsys.readouterr()
    ip.line("load_ext", "synapse_nb")
    assert capsys.readouterr().out.startswith(f"synapse_nb: replaying {path}: 1 model exchanges")
    from synapse_nb.notebook.extension import get_state

    state = get_state(ip.shell)
    assert state is not None
    assert state.tape is not None
    assert state.tape.mode == "replay"
    state.port.publish = ip.published
    ip.cell("synapse --session s", "What tables are there?")
    assert ip.ns["_synapse"].text == answer
    monkeypatch.setenv("SYNAPSE_RECORD", str(tmp_path / "other.jsonl"))
    ip.line("unload_ext", "synapse_nb")
    ip.line("load_ext", "synapse_nb")
    assert "set SYNAPSE_RECORD or SYNAPSE_REPLAY, not both" in capsys.readouterr().out


def test_status_says_what_is_recorded_or_replayed(ip: Any, tmp_path: Path) -> None:
    assert "record/replay" not in repr(ip.line("synapse", "status"))
    ip.line("synapse", f"record {tmp_path / 'c.jsonl'}")
    assert f"record/replay  record: {tmp_path / 'c.jsonl'} (recorded to c.jsonl)" in repr(ip.line("synapse", "status"))
    ip.line("synapse", "record off")
    assert "record/replay" not in repr(ip.line("synapse", "status"))


def replay_offline(ip: Any, server: LlmServer, path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Stop recording, stop the server, drop the key, replay `path`; how many requests the server had."""
    ip.line("synapse", "record off")
    served = len(server.requests)
    server.stop()
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")
    ip.line("synapse", f"replay {path}")
    ip.published.clear()
    return served


def test_a_background_run_replays_from_the_cassette_offline(
    ip: Any, server: LlmServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "c.jsonl"
    answers = record(ip, server, path)
    served = replay_offline(ip, server, path, monkeypatch)

    ip.cell(REPLAY + " --background --out job", FIRST)
    result = ip.ns["job"].result(timeout=60)
    assert result.status == "finished"
    assert result.text == answers[0].replace(FAKE_KEY, "[REDACTED]")
    assert ip.ns["lookups"] == ["x"]  # the tool call was answered from the cassette
    assert len(server.requests) == served
    # a background run's footer is its controls' status line (one footer, see test_nb_ask.py)
    _html, controls = ip.ns["job"].controls.snapshot()
    footer = [line for line in controls.splitlines() if "replayed from c.jsonl" in line]
    assert footer
    assert "running" not in footer[-1]  # the final footer, not the one shown while it ran
    assert "replayed from c.jsonl" not in ip.published.text()  # said once
    h = synapse_nb.history()
    turns = h.sql("SELECT t.replayed FROM turns t JOIN sessions s USING (session_id) WHERE s.name = 'rep'")
    assert turns.replayed.tolist() == [True]
    calls = h.sql("SELECT count(*) AS n FROM llm_calls c JOIN sessions s USING (session_id) "
                  "WHERE s.name = 'rep' AND c.replayed")
    assert calls.n[0] == 2


def test_replayed_calls_cost_nothing_and_budgets_do_not_count_them(
    ip: Any, server: LlmServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai:gpt-test": {"input_per_mtok": 1000.0, "output_per_mtok": 2000.0}}))
    monkeypatch.setenv("SYNAPSE_PRICES", str(prices))
    path = tmp_path / "c.jsonl"
    record(ip, server, path)
    spent = float(ip.line("synapse", "cost").cost_usd.sum())
    assert spent > 0.001
    replay_offline(ip, server, path, monkeypatch)

    # Live, a budget this small stops the turn before its first call; a replayed call costs nothing.
    ip.cell(REPLAY + " --budget 0.000001", FIRST)
    result = ip.ns["_synapse"]
    assert result.status == "finished"
    assert result.usage.cost_usd == 0
    assert result.usage.total_tokens > 0  # the recorded tokens are still shown
    ip.run("%config SynapseMagics.session_budget = 0.000001")
    ip.cell(REPLAY, SECOND)
    assert ip.ns["_synapse"].status == "finished"
    footers = [line for line in ip.published.text().splitlines() if "replayed from c.jsonl" in line]
    assert len(footers) == 2
    for footer in footers:
        assert "tokens" in footer
        assert "$" not in footer
        assert "cost unknown" not in footer

    h = synapse_nb.history()
    replayed = h.sql("SELECT cost_usd, input_cost_usd, price_source FROM llm_calls WHERE replayed")
    assert replayed.values.tolist() == [[0.0, 0.0, "replay"]] * 3
    assert h.sql("SELECT cost_usd FROM turns WHERE replayed").cost_usd.tolist() == [0.0, 0.0]
    assert float(ip.line("synapse", "cost").cost_usd.sum()) == pytest.approx(spent)

    monkeypatch.delenv("SYNAPSE_PRICES")  # gpt-test has no price now: live, a USD budget could not be enforced
    ip.cell(REPLAY.replace("rep", "unpriced") + " --budget 0.01", FIRST)
    assert ip.ns["_synapse"].status == "finished"
