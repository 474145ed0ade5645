"""Cost queries over a recorded history: a real agent turn over HTTP (tests/support/llm_server.py), recorded by a real
HistoryStore, then `History.cost(by=...)` checked against values computed by hand from the test's own data.

Prices: 1000 USD per million prompt tokens ($0.001 a token), 2000 per million output tokens ($0.002).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tools import ToolRegistry
from synapse_nb.errors import HistoryError
from synapse_nb.history.store import HistoryStore
from synapse_nb.providers.openai import OpenAIProvider
from synapse_nb.types import ContentBlock, ToolResult, ToolSpec
from tests.support.llm_server import LlmServer, call, text, tool_calls

TIMEOUT = 20.0


class Tools:
    """A minimal ToolSource: `SERVER__TOOL` specs answering with fixed text."""

    def __init__(self, answers: Mapping[str, str]) -> None:
        self.answers = dict(answers)

    @property
    def tools(self) -> Sequence[ToolSpec]:
        return [
            ToolSpec(name, f"{name} tool", {"type": "object", "properties": {}}, server=name.split("__")[0],
                     original_name=name.split("__")[1], annotations={"readOnlyHint": True})
            for name in self.answers
        ]

    async def call(
        self, qualified_name: str, arguments: Mapping[str, Any], timeout: float | None = None,
        *, on_progress: Callable[[float, float | None, str | None], None] | None = None,
    ) -> ToolResult:
        return ToolResult(content=(ContentBlock("text", text=self.answers[qualified_name]),))


@pytest.fixture
def recorded(clean_env: Path, monkeypatch: pytest.MonkeyPatch, store: HistoryStore) -> HistoryStore:
    prices = clean_env / "prices.json"
    prices.write_text(json.dumps({"openai:gpt-test": {"input_per_mtok": 1000, "output_per_mtok": 2000}}))
    monkeypatch.setenv("SYNAPSE_PRICES", str(prices))
    tools = Tools({"alpha__big": "a" * 300, "beta__small": "b" * 100})
    with LlmServer() as server:
        server.queue(
            tool_calls(call("alpha__big", id="c1"), call("beta__small", id="c2"), usage=(1000, 20)),
            tool_calls(call("alpha__big", id="c3"), usage=(1420, 20)),
            text("Done.", usage=(1720, 30)),
            text("Unpriced.", usage=(500, 5)),
        )

        async def run() -> None:
            priced = OpenAIProvider("gpt-test", api_key="k", base_url=server.openai_base_url)
            unpriced = OpenAIProvider("gpt-unlisted", api_key="k", base_url=server.openai_base_url)
            try:
                agent = Agent(priced, ToolRegistry(tools), session_name="priced", sinks=[store.record])
                assert (await agent.ask("go")).status == "finished"
                other = Agent(unpriced, session_name="unpriced", sinks=[store.record])
                assert (await other.ask("hi")).status == "finished"
            finally:
                await priced.aclose()
                await unpriced.aclose()

        asyncio.run(asyncio.wait_for(run(), TIMEOUT))
    store.flush()
    return store


def test_cost_by_server_and_tool_charges_each_result_for_every_later_prompt(recorded: HistoryStore) -> None:
    h = recorded.history()
    # Call 1: 1000 prompt tokens. Call 2: 1420 = 1000 + 20 (reply) + 400 added by c1 (300 chars) and c2 (100):
    # c1 300 tokens, c2 100. Call 3: 1720 = 1420 + 20 + 280 added by c3.
    # Call 2 (prompt cost $1.42): c1 300/1420 x 1.42 = 0.30, c2 0.10.
    # Call 3 (prompt cost $1.72): c1 0.30, c2 0.10, c3 280/1720 x 1.72 = 0.28.
    servers = h.cost(by="server").set_index("server")
    assert list(servers.index) == ["alpha", "beta"]  # the most expensive first
    assert servers.loc["alpha", "cost_usd"] == pytest.approx(0.30 + 0.30 + 0.28)
    assert servers.loc["beta", "cost_usd"] == pytest.approx(0.10 + 0.10)
    assert servers.loc["alpha", "tool_calls"] == 2
    assert servers.loc["alpha", "result_tokens"] == 300 + 280
    assert servers.loc["alpha", "resent_tokens"] == 300 + 300 + 280
    assert servers.loc["beta", "resent_tokens"] == 100 + 100
    assert servers.loc["alpha", "unpriced_calls"] == 0

    tools = h.cost(by="tool")
    assert list(zip(tools.server, tools.tool, strict=True)) == [("alpha", "big"), ("beta", "small")]
    assert tools.cost_usd.tolist() == pytest.approx([0.88, 0.20])


def test_cost_by_model_session_and_day(recorded: HistoryStore) -> None:
    h = recorded.history()
    models = h.cost(by="model").set_index("model")
    # 1000 + 1420 + 1720 prompt tokens at $0.001 and 20 + 20 + 30 output tokens at $0.002.
    assert models.loc["openai:gpt-test", "cost_usd"] == pytest.approx(4.14 + 0.14)
    assert models.loc["openai:gpt-test", "calls"] == 3
    assert models.loc["openai:gpt-test", "input_tokens"] == 4140
    # no priced call at all: the known sum (0) with the unpriced calls counted beside it, never NaN
    assert models.loc["openai:gpt-unlisted", "cost_usd"] == 0.0
    assert models.loc["openai:gpt-unlisted", "unpriced_calls"] == 1
    assert not models.cost_usd.isna().any()
    assert next(iter(models.index)) == "openai:gpt-unlisted"  # unknown first: it could be the largest

    sessions = h.cost(by="session").set_index("name")
    assert sessions.loc["priced", "cost_usd"] == pytest.approx(4.28)
    assert sessions.loc["unpriced", "cost_usd"] == 0.0
    assert sessions.loc["unpriced", "unpriced_calls"] == 1

    days = h.cost(by="day")
    assert len(days) == 1
    assert days.calls.iloc[0] == 4
    # one unpriced call does not hide what the priced ones cost: the known sum, with the unpriced ones counted
    assert days.cost_usd.iloc[0] == pytest.approx(4.28)
    assert days.unpriced_calls.iloc[0] == 1

    llm = h.llm_calls()
    assert llm.price_source.isna().sum() == 1  # the unpriced call
    assert all(str(s).startswith("file:") and str(s).endswith("prices.json") for s in llm.price_source.dropna())
    turns = h.turns().set_index("prompt")
    assert turns.loc["go", "cost_usd"] == pytest.approx(4.28)


def test_cost_since_a_later_time_is_empty_and_a_bad_grouping_is_one_line(recorded: HistoryStore) -> None:
    h = recorded.history()
    assert h.cost(by="model", since="2999-01-01").empty
    assert h.cost(by="server", since="2999-01-01").empty
    with pytest.raises(HistoryError, match="cost by 'colour': expected one of model, server, tool, session, day"):
        h.cost(by="colour")


def test_a_servers_sampling_calls_are_charged_to_it(recorded: HistoryStore) -> None:
    from synapse_nb.events import LlmCallFinished, utcnow
    from synapse_nb.types import Usage

    session = recorded.history().sessions().set_index("name").loc["priced", "session_id"]
    recorded.record(LlmCallFinished(
        session_id=session, llm_call_id="s1", provider="openai", model="gpt-test", started_at=utcnow(),
        duration_ms=1.0, usage=Usage(100, 50, cost_usd=0.2), origin="sampling:alpha", tool_call_id="c3",
        price_source="file:x",
    ))
    recorded.flush()
    servers = recorded.history().cost(by="server").set_index("server")
    assert servers.loc["alpha", "sampling_usd"] == pytest.approx(0.2)
    assert servers.loc["alpha", "context_usd"] == pytest.approx(0.88)
    assert servers.loc["alpha", "cost_usd"] == pytest.approx(1.08)
    assert servers.loc["beta", "sampling_usd"] == 0
    tools = recorded.history().cost(by="tool").set_index(["server", "tool"])
    assert tools.loc[("alpha", "big"), "sampling_usd"] == pytest.approx(0.2)
