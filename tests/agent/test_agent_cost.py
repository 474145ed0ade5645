"""Cost and budgets in the agent, over real HTTP against tests/support/llm_server.py with a test price file.

Prices are chosen so hand computation is easy: 1000 USD per million prompt tokens is $0.001 a token.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.result import TurnResult
from synapse_nb.agent.spend import Budget
from synapse_nb.agent.tools import ToolRegistry
from synapse_nb.events import LlmCallFinished, TurnFailed
from synapse_nb.providers.anthropic import AnthropicProvider
from synapse_nb.providers.openai import OpenAIProvider
from synapse_nb.types import ContentBlock, ToolResult
from tests.support.llm_server import LlmServer, call, text, tool_calls

pytestmark = pytest.mark.anyio
TIMEOUT = 20.0

PRICES = {
    "openai:gpt-test": {"input_per_mtok": 1000, "output_per_mtok": 2000, "cache_read_per_mtok": 100},
    "anthropic:claude-test": {
        "input_per_mtok": 1000, "output_per_mtok": 2000, "cache_read_per_mtok": 100, "cache_write_per_mtok": 1250,
    },
}


@pytest.fixture
def prices(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = clean_env / "prices.json"
    path.write_text(json.dumps(PRICES))
    monkeypatch.setenv("SYNAPSE_PRICES", str(path))
    return path


def text_result(content: str) -> ToolResult:
    return ToolResult(content=(ContentBlock("text", text=content),))


def _provider(wire: str, server: LlmServer, model: str | None = None) -> Any:
    if wire == "openai":
        return OpenAIProvider(model or "gpt-test", api_key="k-test", base_url=server.openai_base_url)
    return AnthropicProvider(model or "claude-test", api_key="k-test", base_url=server.anthropic_base_url)


def _agent(provider: Any, source: Any, recorder: Any, budget: Budget | None = None) -> Agent:
    """An agent over `source` (the FakeSource fixture) reporting to `recorder` (the Recorder fixture), its turns
    checked against `budget`."""
    return Agent(provider, ToolRegistry(source), system="You look things up.", sinks=[recorder], budget=budget)


async def ask(agent: Agent, *questions: str) -> list[TurnResult]:
    """Each question asked in turn (each under TIMEOUT), then the provider's HTTP client closed, pass or fail."""
    try:
        return [await asyncio.wait_for(agent.ask(question), TIMEOUT) for question in questions]
    finally:
        await agent.provider.aclose()


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_each_call_is_priced_from_the_price_file_with_cached_tokens(
    wire: str, prices: Path, llm_server: LlmServer, source: Any, recorder: Any
) -> None:
    source.add("demo", "query", lambda args: text_result("42 rows"))
    llm_server.queue(
        tool_calls(call("demo__query", {"sql": "select 1"}), usage=(1000, 100)).cached(0, 600),
        text("Done.", usage=(1200, 50)).cached(600),
    )
    (result,) = await ask(_agent(_provider(wire, llm_server), source, recorder), "How many?")
    assert result.status == "finished", result.error
    first, second = recorder.of(LlmCallFinished)
    # Call 1: 1000 prompt tokens, of which 600 written to the cache (Anthropic bills writes at 1250/M;
    # OpenAI reports no writes), and 100 output tokens.
    if wire == "anthropic":
        assert (first.usage.cached_input_tokens, first.usage.cache_write_tokens) == (0, 600)
        expected_first = 400 * 0.001 + 600 * 0.00125 + 100 * 0.002
    else:
        assert (first.usage.cached_input_tokens, first.usage.cache_write_tokens) == (0, 0)
        expected_first = 1000 * 0.001 + 100 * 0.002
    # Call 2: 1200 prompt tokens, 600 read from the cache at 100/M, 50 output tokens.
    assert (second.usage.input_tokens, second.usage.cached_input_tokens) == (1200, 600)
    expected_second = 600 * 0.001 + 600 * 0.0001 + 50 * 0.002
    assert first.usage.cost_usd == pytest.approx(expected_first)
    assert second.usage.cost_usd == pytest.approx(expected_second)
    assert second.input_cost_usd == pytest.approx(600 * 0.001 + 600 * 0.0001)
    assert first.price_source == second.price_source == f"file:{prices}"
    assert result.usage.cost_usd == pytest.approx(expected_first + expected_second)
    assert result.usage.cached_input_tokens == 600


async def test_an_unpriced_model_costs_unknown_and_local_models_cost_nothing(
    prices: Path, llm_server: LlmServer, source: Any, recorder: Any
) -> None:
    llm_server.queue(text("Hi.", usage=(100, 10)))
    (result,) = await ask(_agent(_provider("openai", llm_server, model="gpt-unlisted"), source, recorder), "hi")
    (call,) = recorder.of(LlmCallFinished)
    assert call.usage.cost_usd is None
    assert call.price_source is None
    assert result.usage.cost_usd is None  # never a guess

    from synapse_nb.providers.scripted import ScriptedProvider

    scripted = ScriptedProvider()
    local: list[Any] = []
    result = await asyncio.wait_for(Agent(scripted, sinks=[local.append]).ask("hello"), TIMEOUT)
    assert result.usage.cost_usd == 0.0
    assert {e.price_source for e in local if isinstance(e, LlmCallFinished)} == {"local"}


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_a_usd_budget_stops_the_turn_between_iterations(
    wire: str, prices: Path, llm_server: LlmServer, source: Any, recorder: Any
) -> None:
    source.add("demo", "query", lambda args: text_result("42 rows"))
    llm_server.queue(
        tool_calls(call("demo__query", {"sql": "select 1"}), usage=(1000, 100)),
        text("never sent", usage=(10, 1)),
    )
    provider = _provider(wire, llm_server)
    # The first call's projection is ~30 prompt tokens (< $0.05): it runs and costs 1000 x 0.001 + 100 x 0.002
    # = $1.20. The second could cost (1000 + 100 + a few) x 0.001 + 100 x 0.002 > $1.30: 1.20 + 1.30 > 1.50.
    agent = _agent(provider, source, recorder, budget=Budget(turn_usd=1.5))
    (result,) = await ask(agent, "How many?")
    assert result.status == "budget_exceeded"
    assert result.error_type == "BudgetExceededError"
    assert result.error is not None
    assert "\n" not in result.error
    assert "this turn spent $1.20 and" in result.error
    assert "past --budget $1.5" in result.error
    assert result.iterations == 1
    assert len(llm_server.requests) == 1  # the second call was never made
    assert llm_server.pending == 1
    # The partial transcript is kept: the user prompt, the reply asking for the tool and its result.
    assert [m.role for m in agent.messages] == ["user", "assistant", "tool"]
    assert agent.messages[-1].content == "42 rows"
    assert result.usage.cost_usd == pytest.approx(1.2)
    (failed,) = recorder.of(TurnFailed)
    assert failed.error_type == "BudgetExceededError"


async def test_the_session_budget_counts_earlier_turns(
    prices: Path, llm_server: LlmServer, source: Any, recorder: Any
) -> None:
    llm_server.queue(text("One.", usage=(1000, 100)), text("Two.", usage=(1000, 100)))
    provider = _provider("openai", llm_server)
    agent = _agent(provider, source, recorder, budget=Budget(session_usd=2.0))
    first, second = await ask(agent, "one", "two")
    assert first.status == "finished"
    assert first.usage.cost_usd == pytest.approx(1.2)
    # spent 1.20 in the session; the next call's projection is > 1100 prompt tokens ($1.10) + 100 output ($0.20).
    assert second.status == "budget_exceeded"
    assert second.error is not None
    assert "this session spent $1.20 and" in second.error
    assert second.iterations == 0
    assert len(llm_server.requests) == 1


async def test_max_tokens_counts_the_turns_prompt_and_output_tokens(
    llm_server: LlmServer, source: Any, recorder: Any, clean_env: Path
) -> None:
    source.add("demo", "query", lambda args: text_result("42 rows"))
    llm_server.queue(
        tool_calls(call("demo__query", {}), usage=(1000, 100)),
        text("never sent"),
    )
    provider = _provider("openai", llm_server, model="gpt-unlisted")  # a token budget needs no price
    # 1100 used + at least 1100 + 100 projected > 2000
    agent = _agent(provider, source, recorder, budget=Budget(max_tokens=2000))
    (result,) = await ask(agent, "How many?")
    assert result.status == "budget_exceeded"
    assert result.error is not None
    assert "1,100 tokens" in result.error
    assert "--max-tokens 2,000" in result.error
    assert len(llm_server.requests) == 1


async def test_a_usd_budget_for_an_unpriced_model_says_so_before_any_call(
    prices: Path, llm_server: LlmServer, source: Any, recorder: Any
) -> None:
    llm_server.queue(text("never sent"))
    provider = _provider("anthropic", llm_server, model="claude-unlisted")
    agent = _agent(provider, source, recorder, budget=Budget(turn_usd=0.25))
    (result,) = await ask(agent, "hi")
    assert result.status == "budget_exceeded"
    assert result.error is not None
    assert result.error.startswith("cost unknown for anthropic:claude-unlisted")
    assert "prices.json" in result.error
    assert "\n" not in result.error
    assert llm_server.requests == []


async def test_tool_result_tokens_are_measured_from_the_prompt_growth(
    prices: Path, llm_server: LlmServer, source: Any, recorder: Any
) -> None:
    source.add("alpha", "big", lambda args: text_result("a" * 300))
    source.add("beta", "small", lambda args: text_result("b" * 100))
    llm_server.queue(
        tool_calls(call("alpha__big", id="c1"), call("beta__small", id="c2"),
                              usage=(1000, 20)),
        text("Done.", usage=(1420, 20)),
    )
    await ask(_agent(_provider("openai", llm_server), source, recorder), "go")
    first, second = recorder.of(LlmCallFinished)
    assert dict(first.tool_result_tokens) == {}
    # The prompt grew by 1420 - 1000 - 20 = 400 tokens: 300 : 100 by the results' lengths.
    assert dict(second.tool_result_tokens) == {"c1": 300, "c2": 100}


async def test_a_tiny_budget_line_keeps_its_digits_and_adds_up(
    prices: Path, llm_server: LlmServer, source: Any, recorder: Any
) -> None:
    llm_server.queue(text("never sent"))
    agent = _agent(_provider("openai", llm_server), source, recorder, budget=Budget(turn_usd=0.0000001))
    (result,) = await ask(agent, "hello")
    assert result.status == "budget_exceeded"
    assert result.error is not None
    assert "e-0" not in result.error  # never `$1e-07`
    found = re.search(r"spent \$(\S+) and the next call could cost up to \$(\S+), past --budget \$(\S+);", result.error)
    assert found is not None, result.error
    spent, bound, limit = (float(v) for v in found.groups())
    assert (spent, limit) == (0.0, 0.0000001)
    assert spent + bound > limit  # the line shows why it stopped: no amount rounded to $0.0000
    assert len(llm_server.requests) == 0
