"""A held result is recorded whole in a cassette and held again when the cassette replays (issue 35): the same
summary reaches the (replayed) model, the same name holds the DataFrame, results__sql's answer replays too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.llm_server import LlmServer, call, text, tool_calls

FAKE_KEY = "sk-fake-held-replay-0123456789"
CELL = "synapse --model openai:gpt-test --session held --approve auto"
TOOL = '''
import synapse_nb
@synapse_nb.tool
def sales() -> list:
    """Every sale."""
    return [{"id": i, "region": ["north", "south"][i % 2], "amount": i} for i in range(500)]
'''
SQL = "SELECT region, sum(amount) AS total FROM sales_1 GROUP BY region ORDER BY region"


@pytest.fixture
def server(clean_env: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[LlmServer]:
    with LlmServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        yield server


def test_a_held_result_is_recorded_whole_and_held_again_on_replay(
    ip: Any, server: LlmServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "held.jsonl"
    ip.run(TOOL)
    ip.line("synapse", f"record {path}")
    server.queue(tool_calls(call("sales", {}, id="a")), tool_calls(call("results__sql", {"sql": SQL}, id="b")),
                 text("south sells more."))
    ip.cell(CELL, "Sales by region?")
    recorded = ip.ns["_synapse"]
    assert recorded.held == ("sales_1",)
    assert ip.ns["sales_1"].shape == (500, 3)
    ip.line("synapse", "record off")
    tools = [json.loads(line) for line in path.read_text().splitlines() if '"type": "tool"' in line]
    assert len(json.loads(tools[0]["result"]["content"][0]["text"])) == 500  # the whole result, not the summary

    server.stop()
    monkeypatch.delenv("OPENAI_API_KEY")
    ip.line("synapse", "results drop --all")  # as a fresh kernel has it
    ip.line("synapse", f"replay {path}")
    ip.cell(CELL.replace("held", "again"), "Sales by region?")
    replayed = ip.ns["_synapse"]
    assert replayed.status == "finished", replayed.error
    assert replayed.text == "south sells more."
    assert replayed.held == ("sales_1",)
    assert ip.ns["sales_1"].shape == (500, 3)
    assert [c.result.text for c in replayed.calls] == [c.result.text for c in recorded.calls]
