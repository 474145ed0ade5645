"""Cost in the notebook: the footer's cost, --budget / --max-tokens / session_budget, `%synapse cost`, and the
one-line errors for bad input, over the local OpenAI-compatible server with a test price file.

Prices: 1000 USD per million prompt tokens ($0.001 a token) and 2000 per million output tokens.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from traitlets import TraitError

import synapse_nb
from tests.support.llm_server import LlmServer, call, text, tool_calls

FAKE_KEY = "sk-fake-cost-test-0123456789"
PRICES = {"openai:gpt-test": {"input_per_mtok": 1000, "output_per_mtok": 2000, "cache_read_per_mtok": 100}}
TOOL = "import synapse_nb\n@synapse_nb.tool\ndef lookup(key: str) -> str:\n    '''Look up.'''\n    return 'v' * 40\n"


@pytest.fixture
def server(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LlmServer]:
    prices = clean_env / "prices.json"
    prices.write_text(json.dumps(PRICES))
    monkeypatch.setenv("SYNAPSE_PRICES", str(prices))
    with LlmServer() as s:
        monkeypatch.setenv("OPENAI_BASE_URL", s.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        yield s


def test_the_footer_and_result_show_the_turns_cost(ip: Any, server: LlmServer) -> None:
    server.queue(text("Hi.", usage=(1000, 100)).cached(400))
    ip.cell("synapse --model openai:gpt-test", "hello")
    result = ip.ns["_synapse"]
    # 600 uncached x 0.001 + 400 cached x 0.0001 + 100 out x 0.002
    assert result.usage.cost_usd == pytest.approx(0.6 + 0.04 + 0.2)
    assert result.usage.cached_input_tokens == 400
    footer = ip.published.text().splitlines()[-1]
    assert "$0.8400" in footer
    assert "400 cached" in footer
    assert "<span>&#36;</span>0.8400" in result._repr_markdown_()  # money as text, never a math delimiter
    assert "$0.8400" in repr(result)

    server.queue(text("Hi.", usage=(10, 1)))
    ip.cell("synapse --model openai:gpt-unlisted", "hello")
    assert ip.ns["_synapse"].usage.cost_usd is None
    assert "cost unknown" in ip.published.text().splitlines()[-1]

    ip.published.clear()
    ip.cell("synapse --model scripted:demo", "hello")
    assert ip.ns["_synapse"].usage.cost_usd == 0.0
    assert "$" not in ip.published.text().splitlines()[-1]  # a local model: no cost shown
    assert "cost unknown" not in ip.published.text()


def test_a_cell_budget_stops_between_iterations_and_keeps_the_transcript(ip: Any, server: LlmServer) -> None:
    ip.run(TOOL)
    server.queue(tool_calls(call("lookup", {"key": "a"}), usage=(1000, 100)), text("never sent"))
    ip.cell("synapse --model openai:gpt-test --budget 1.5", "look a up")  # no UsageError: the result is kept
    result = ip.ns["_synapse"]
    assert result.status == "budget_exceeded"
    assert len(server.requests) == 1
    assert [m.role for m in result.messages] == ["user", "assistant", "tool"]
    out = ip.published.text()
    lines = [line for line in out.splitlines() if "past --budget $1.5" in line]
    assert len(lines) == 1  # one clear line
    assert "this turn spent $1.20 and" in lines[0]
    assert "budget exceeded" in out.splitlines()[-1]
    turns = synapse_nb.history().turns()
    assert turns.status.tolist() == ["budget_exceeded"]
    assert turns.cost_usd.iloc[0] == pytest.approx(1.2)


def test_max_tokens_and_the_session_budget(ip: Any, server: LlmServer) -> None:
    ip.run(TOOL)
    server.queue(tool_calls(call("lookup", {"key": "a"}), usage=(1000, 100)), text("never sent"))
    ip.cell("synapse --model openai:gpt-test --max-tokens 2000", "look a up")
    assert ip.ns["_synapse"].status == "budget_exceeded"
    assert "--max-tokens 2,000" in ip.published.text()

    server.clear()  # drop the reply the stopped turn never asked for
    ip.line("synapse", "session new")
    ip.run("%config SynapseMagics.session_budget = 2.0")
    server.queue(text("One.", usage=(1000, 100)), text("never sent"))
    ip.cell("synapse --model openai:gpt-test", "one")
    assert ip.ns["_synapse"].status == "finished"
    ip.cell("synapse --model openai:gpt-test", "two")
    assert ip.ns["_synapse"].status == "budget_exceeded"
    assert "past session_budget $2" in ip.published.text()
    assert len(server.requests) == 1  # "one"; "two" never reached the server


def test_cost_by_server_and_model_as_dataframes(ip: Any, server: LlmServer) -> None:
    ip.run(TOOL)
    server.queue(
        tool_calls(call("lookup", {"key": "a"}, id="c1"), usage=(1000, 20)),
        text("Done.", usage=(1100, 30)),
    )
    ip.cell("synapse --model openai:gpt-test", "look a up")
    # The result (40 characters) added 1100 - 1000 - 20 = 80 prompt tokens to call 2 (prompt cost $1.10):
    # 80 / 1100 x 1.10 = $0.08, charged to the native tools.
    by_server = ip.line("synapse", "cost --by server")
    # one label for a @synapse_nb.tool function everywhere: the cost table, the turn's calls and %mcp tools
    assert by_server.server.tolist() == ["python"]
    assert ip.ns["_synapse"].tool_calls.server.tolist() == ["python"]
    assert ip.line("mcp", "tools").set_index("name").loc["lookup", "server"] == "python"
    assert by_server.cost_usd.iloc[0] == pytest.approx(0.08)
    by_model = ip.line("synapse", "cost")
    assert by_model.model.tolist() == ["openai:gpt-test"]
    assert by_model.cost_usd.iloc[0] == pytest.approx(1.0 + 0.04 + 1.1 + 0.06)
    assert ip.line("synapse", "cost --by day --since today").calls.tolist() == [2]
    assert ip.line("synapse", "cost --by=session --since 1h").name.tolist() == [ip.state.sessions.current]
    assert ip.line("synapse", "cost --since 2999-01-01").empty
    hist = ip.line("synapse", "history")
    assert hist.cost_usd.iloc[-1] == pytest.approx(2.2)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("cost --by colour", "%synapse cost: --by 'colour' is not one of model, server, tool, session, day"),
        ("cost --since soon", "%synapse cost: --since 'soon' is not a time"),
        ("cost --by", "%synapse cost: --by needs a value"),
        ("cost tools", "%synapse cost: unexpected 'tools'"),
    ],
)
def test_bad_cost_options_are_one_line(ip: Any, server: LlmServer, line: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        ip.line("synapse", line)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_bad_budget_options_and_unenforceable_budgets_are_one_line(
    ip: Any, server: LlmServer, clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for line, message in [
        ("synapse --budget abc", "--budget: 'abc' is not an amount in USD"),
        ("synapse --budget 0", "--budget: 0 must be more than 0"),
        ("synapse --max-tokens -3", "--max-tokens: -3 must be at least 1"),
    ]:
        with pytest.raises(UsageError, match=message):
            ip.cell(line, "hi")
    with pytest.raises(UsageError) as caught:
        ip.cell("synapse --model openai:gpt-unlisted --budget 0.25", "hi")
    assert str(caught.value).startswith("%%synapse: cost unknown for openai:gpt-unlisted (no price), so --budget 0.25")
    magics = ip.shell.magics_manager.registry["SynapseMagics"]
    with pytest.raises(TraitError, match="session_budget must be a USD amount >= 0"):
        magics.session_budget = -1.0
    bad = clean_env / "bad-prices.json"
    bad.write_text('{"openai:gpt-test": {"input_per_mtok": "cheap", "output_per_mtok": 1}}')
    monkeypatch.setenv("SYNAPSE_PRICES", str(bad))
    with pytest.raises(UsageError) as caught:
        ip.cell("synapse --model openai:gpt-test --budget 1", "hi")
    assert str(caught.value) == (
        f"%%synapse: {bad}: openai:gpt-test.input_per_mtok must be a number >= 0, not 'cheap'; "
        "--budget 1 USD cannot be enforced until it is fixed"
    )
    assert server.requests == []
    assert synapse_nb.history().turns().empty  # nothing recorded half-way
    # Without a budget the cell runs; the display says why costs are unknown.
    server.queue(text("Hi."))
    ip.cell("synapse --model openai:gpt-test", "hi")
    assert f"prices: {bad}: openai:gpt-test.input_per_mtok" in ip.published.text()
    assert math.isnan(synapse_nb.history().llm_calls().cost_usd.iloc[0])


def test_a_tiny_unenforceable_budget_is_written_out_not_as_an_exponent(ip: Any, server: LlmServer) -> None:
    with pytest.raises(UsageError) as caught:
        ip.cell("synapse --model openai:gpt-unlisted --budget 0.0000001", "hi")
    assert "so --budget 0.0000001 USD cannot be enforced" in str(caught.value)
    assert "e-0" not in str(caught.value)
