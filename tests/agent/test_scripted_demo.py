"""The built-in "demo" script, driven by the Agent against a fake source offering demo-server-like tools."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tools import ToolRegistry, tool
from synapse_nb.events import LlmCallFinished, ToolCallStarted
from synapse_nb.providers.scripted import OFFLINE_ANSWER, ScriptedProvider
from synapse_nb.types import ContentBlock, ToolResult

TABLES = {"customers": (50, ["customer_id", "name", "country"]), "orders": (300, ["order_id", "quantity"]),
          "products": (20, ["product_id", "name", "unit_price"])}


def text(value: str, *, is_error: bool = False) -> ToolResult:
    return ToolResult(content=(ContentBlock("text", text=value),), is_error=is_error)


def list_tables(args: Mapping[str, Any]) -> ToolResult:
    return text("\n".join(f"- {t} ({rows} rows): {', '.join(cols)}" for t, (rows, cols) in TABLES.items()))


def describe_table(args: Mapping[str, Any]) -> ToolResult:
    if args["table"] not in TABLES:
        return text(f"unknown table {args['table']!r}", is_error=True)
    rows, cols = TABLES[args["table"]]
    return text(f"Table {args['table']}: {rows} rows\n\n" + "\n".join(f"- {c} (TEXT)" for c in cols)
                + "\n\nSample rows:\n| a |\n|---|\n| 1 |")


def query(args: Mapping[str, Any]) -> ToolResult:
    return text("| product | revenue |\n|---|---|\n| Espresso Machine Mini | 2988.0 |\n| Burr Grinder | 1388.4 |")


def demo_like(source: Any, server: str = "demo") -> ToolRegistry:
    source.add(server, "list_tables", list_tables)
    source.add(server, "describe_table", describe_table)
    source.add(server, "query", query)
    source.add(server, "summarize_column", lambda args: text("type: REAL\ncount: 20\nmin: 4.9\nmax: 249.0"))
    source.add(server, "echo", lambda args: text(str(args.get("text"))))
    return ToolRegistry(source)


@pytest.mark.anyio
async def test_what_tables_lists_then_describes_every_table_in_one_reply(source: Any, recorder: Any) -> None:
    agent = Agent(ScriptedProvider("demo"), demo_like(source), sinks=[recorder])
    result = await agent.ask("What tables are there?")
    assert result.status == "finished"
    assert result.iterations == 3
    assert [c.call.name for c in result.tool_calls] == [
        "demo__list_tables", "demo__describe_table", "demo__describe_table", "demo__describe_table",
    ]
    replies = [m for m in result.messages if m.role == "assistant"]
    assert len(replies[1].tool_calls) == 3  # all describe calls in ONE reply, so they run concurrently
    assert sorted(c.arguments["table"] for c in replies[1].tool_calls) == sorted(TABLES)
    assert "**3 tables**" in result.text
    for table, (rows, cols) in TABLES.items():
        assert f"| `{table}` | {rows:,} | " in result.text
        assert cols[0] in result.text
    assert all(e.usage.input_tokens > 0 for e in recorder.of(LlmCallFinished))


@pytest.mark.anyio
async def test_top_products_runs_one_query_and_answers_with_a_markdown_table(source: Any) -> None:
    result = await Agent(ScriptedProvider(), demo_like(source)).ask("top products by revenue")
    assert [c.call.name for c in result.tool_calls] == ["demo__query"]
    sql = result.tool_calls[0].call.arguments["sql"]
    assert "ORDER BY revenue DESC" in sql
    assert "JOIN products" in sql
    assert result.text.startswith("**Top products by revenue**")
    assert "| Espresso Machine Mini | 2988.0 |" in result.text
    assert "```sql" in result.text


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("prompt", "tool", "arguments"),
    [
        ("Describe the orders table", "describe_table", {"table": "orders"}),
        ("summarize unit_price in products", "summarize_column", {"table": "products", "column": "unit_price"}),
        ("How many customers do we have?", "query", {"sql": "SELECT COUNT(*) AS customers FROM customers"}),
        ("run `select 1 from orders`", "query", {"sql": "select 1 from orders"}),
    ],
)
async def test_questions_pick_the_matching_tool(source: Any, prompt: str, tool: str, arguments: Any) -> None:
    result = await Agent(ScriptedProvider(), demo_like(source, server="shop")).ask(prompt)
    assert result.status == "finished"
    assert [(c.call.name, dict(c.call.arguments)) for c in result.tool_calls] == [(f"shop__{tool}", arguments)]
    assert result.text


@pytest.mark.anyio
async def test_the_demo_server_is_preferred_among_several(source: Any) -> None:
    source.add("other", "query", query)
    registry = demo_like(source)
    result = await Agent(ScriptedProvider(), registry).ask("revenue by category")
    assert result.tool_calls[0].call.name == "demo__query"


@pytest.mark.anyio
async def test_a_tool_error_is_reported_in_the_answer(source: Any) -> None:
    registry = demo_like(source)
    source.handlers["demo__query"] = lambda args: text("SQL error: no such column: x", is_error=True)
    result = await Agent(ScriptedProvider(), registry).ask("revenue by country")
    assert result.status == "finished"
    assert "reported an error: SQL error: no such column: x" in result.text


@pytest.mark.anyio
async def test_without_matching_tools_it_explains_how_to_use_a_real_model(source: Any) -> None:
    @tool
    def unrelated() -> str:
        return "x"

    registry = ToolRegistry(source)
    registry.register(unrelated)
    result = await Agent(ScriptedProvider("demo"), registry).ask("What tables are there?")
    assert result.tool_calls == ()
    assert result.text == OFFLINE_ANSWER
    assert "SYNAPSE_MODEL" in result.text


@pytest.mark.anyio
async def test_other_questions_get_help_and_the_session_goes_on(source: Any, recorder: Any) -> None:
    agent = Agent(ScriptedProvider(), demo_like(source), sinks=[recorder])
    first = await agent.ask("hello, who are you?")
    assert first.tool_calls == ()
    assert "offline **scripted** model" in first.text
    assert "`demo__query`" in first.text
    second = await agent.ask("and the top customers?")
    assert [c.call.name for c in second.tool_calls] == ["demo__query"]
    assert "Top customers by spend" in second.text
    assert len(recorder.of(ToolCallStarted)) == 1


@pytest.mark.anyio
async def test_with_many_tools_connected_the_offline_demo_finds_the_shops_tools_by_search(source: Any) -> None:
    from synapse_nb.agent.tool_search import SEARCH_TOOL, ToolSearch
    from tests.support.catalog_servers import catalog_specs

    registry = demo_like(source, server="shop")
    source.specs.extend(s for s in catalog_specs() if s.server != "demo")  # 154 other tools of nine real servers
    result = await Agent(ScriptedProvider(), registry, tool_search=ToolSearch(40)).ask("revenue by category")
    assert result.status == "finished", result.error
    assert [c.call.name for c in result.tool_calls] == [SEARCH_TOOL, "shop__query"]
    assert "Espresso Machine Mini" in result.text
