"""Results held by the kernel (issue 35): a table of many rows or a text over the budget is kept whole under a
name, the model gets a bounded summary of it, and `results__sql` computes over every row, through the real
wire-format model server."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pandas as pd
import pytest

from synapse_nb.agent.held import HeldResults, HoldPolicy
from synapse_nb.agent.held_summary import SUMMARY_CHARS
from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.results_tool import SQL_TOOL, ResultsSql
from synapse_nb.agent.tools import ToolRegistry, tool
from synapse_nb.agent.turn import TurnOptions
from synapse_nb.errors import AgentError
from synapse_nb.history.frames_sql import query_frames
from synapse_nb.providers.openai import OpenAIProvider
from synapse_nb.tables import tables_of
from synapse_nb.types import ContentBlock, ToolResult
from tests.support.llm_server import LlmServer, call, text, tool_calls

pytestmark = pytest.mark.anyio
REGIONS = ("north", "south", "east", "west")
ROWS = 50_000


def _orders(n: int = ROWS) -> list[dict[str, Any]]:
    return [{"id": i, "region": REGIONS[i % 4], "total": (i % 97) + 0.25} for i in range(n)]


@tool
async def orders() -> str:
    """Every order, as JSON records."""
    return json.dumps(_orders())


@tool
async def report() -> str:
    """A long plain-text report."""
    return "\n".join(f"line {i}: nothing to see" for i in range(5000))


def _tool_messages(request: Any) -> list[str]:
    return [m["content"] for m in request.body["messages"] if m["role"] == "tool"]


@contextlib.asynccontextmanager
async def _agent(server: LlmServer, held: HeldResults, **hold: Any) -> AsyncIterator[tuple[Agent, TurnOptions]]:
    registry = ToolRegistry()
    registry.register(orders)
    registry.register(report)
    provider = OpenAIProvider("gpt-test", api_key="k", base_url=server.openai_base_url)
    opts = TurnOptions(provider, held=held, hold=HoldPolicy(**hold), agent_tools=(ResultsSql(held, query_frames),))
    try:
        yield Agent(opts, registry), opts
    finally:
        await provider.aclose()
        registry.close()


async def test_a_50000_row_result_reaches_the_model_as_a_summary_and_sql_answers_over_every_row(
    llm_server: LlmServer,
) -> None:
    namespace: dict[str, Any] = {}
    held = HeldResults(namespace)
    async with _agent(llm_server, held) as (agent, _):
        sql = "SELECT region, count(*) AS n, sum(total) AS total FROM orders_1 GROUP BY region ORDER BY region"
        llm_server.queue(tool_calls(call("orders", {})), tool_calls(call(SQL_TOOL, {"sql": sql})), text("done"))

        result = await agent.ask("total by region?")

        assert result.status == "finished", result.error
        first, second, third = llm_server.requests
        assert SQL_TOOL not in [t["function"]["name"] for t in first.body["tools"]]  # offered only while held
        assert SQL_TOOL in [t["function"]["name"] for t in second.body["tools"]]
        (summary,) = _tool_messages(second)
        assert len(summary) <= SUMMARY_CHARS
        assert "`orders_1`" in summary
        assert "50,000 rows x 3 columns" in summary
        assert SQL_TOOL in summary
        assert "region" in summary
        assert "total" in summary
        assert "float64" in summary
        # the SQL's answer is exact: computed over all 50,000 rows
        answer = _tool_messages(third)[1]
        expected = pd.DataFrame(_orders()).groupby("region")["total"].agg(["count", "sum"]).sort_index()
        got = pd.read_csv(pd.io.common.StringIO(answer)).set_index("region")
        assert got["n"].tolist() == expected["count"].tolist()
        assert got["total"].round(2).tolist() == expected["sum"].round(2).tolist()
        # the user gets the DataFrame by name; the turn's record keeps the whole result and says what it held
        assert namespace["orders_1"].shape == (ROWS, 3)
        assert result.tool_calls[0].held == "orders_1"
        assert result.tool_calls[1].held is None
        assert len(result.tool_calls[0].result.text) > 1_000_000  # type: ignore[union-attr]


async def test_a_big_text_is_held_as_text_and_the_summary_says_how_much_was_seen_and_how_to_read_on(
    llm_server: LlmServer,
) -> None:
    held = HeldResults({})
    async with _agent(llm_server, held) as (agent, _):
        llm_server.queue(tool_calls(call("report", {})),
                         tool_calls(call(SQL_TOOL, {"sql": "SELECT substr(value, 1201, 30) AS more FROM report_1"})),
                         text("done"))
        await agent.ask("read the report")
        (summary,) = _tool_messages(llm_server.requests[1])
        assert len(summary) <= SUMMARY_CHARS
        assert "`report_1`" in summary
        assert "its first 1,200 of 128,889 characters" in summary
        assert "substr(value, 1201" in summary
        answer = _tool_messages(llm_server.requests[2])[1]
        whole = held.get("report_1").value  # type: ignore[union-attr]
        assert whole[1200:1230] in answer


async def test_a_small_result_and_a_hold_budget_of_zero_go_to_the_model_as_they_are(llm_server: LlmServer) -> None:
    held = HeldResults({})
    async with _agent(llm_server, held, over_tokens=0) as (agent, opts):
        llm_server.queue(tool_calls(call("report", {})), text("done"))
        await agent.ask("read it", opts.replace(max_result_chars=1000))
        (seen,) = _tool_messages(llm_server.requests[1])
        assert len(held) == 0
        assert seen.startswith("line 0: nothing to see")
        assert "only the first 1,000 are shown" in seen  # cut, and it says so


async def test_an_sql_answer_that_is_big_is_held_too_and_a_bad_query_is_an_error_the_model_reads(
    llm_server: LlmServer,
) -> None:
    held = HeldResults({})
    async with _agent(llm_server, held) as (agent, _):
        llm_server.queue(tool_calls(call("orders", {})),
                         tool_calls(call(SQL_TOOL, {"sql": "SELECT * FROM orders_1 WHERE region = 'north'"}),
                                    call(SQL_TOOL, {"sql": "SELECT nope FROM orders_1"})),
                         text("done"))
        result = await agent.ask("north orders")
        big, bad = _tool_messages(llm_server.requests[2])[1:]
        assert "`sql_1`" in big
        assert "12,500 rows x 3 columns" in big
        assert "the SQL over held results failed" in bad
        assert "nope" in bad
        assert held.names == ["orders_1", "sql_1"]
        assert result.tool_calls[1].held == "sql_1"


def test_names_come_from_the_tool_and_skip_what_the_namespace_has_and_drop_removes_the_variable() -> None:
    namespace: dict[str, Any] = {"query_1": "mine"}
    held = HeldResults(namespace)
    result = ToolResult(content=(ContentBlock("text", text="a,b\n1,2\n3,4\n"),))
    first = held.hold(result, tool="pg__query", call_id="c1")
    assert first.name == "query_2"
    assert first.kind == "table"
    assert namespace["query_2"]["b"].tolist() == [2, 4]  # CSV numbers are numbers
    named = held.hold(result, tool="pg__query", call_id="c2", name="mine")
    assert named.name == "mine"
    assert "mine" in namespace
    held.drop("query_2")
    assert "query_2" not in namespace
    assert namespace["query_1"] == "mine"
    with pytest.raises(AgentError, match="no held result named 'query_2'"):
        held.drop("query_2")
    assert [h.name for h in held.clear()] == ["mine"]
    assert "mine" not in namespace
    with pytest.raises(AgentError, match="cannot name a held result"):
        held.hold(result, tool="x", call_id="c3", name="not a name")


def test_a_summary_stays_under_the_cap_however_wide_or_long_the_cells_and_says_what_it_left_out() -> None:
    wide = [{f"column_{c}_{'x' * 80}": "y" * 5000 for c in range(300)} for _ in range(30)]
    held = HeldResults({}).hold(ToolResult(content=(ContentBlock("text", text=json.dumps(wide)),)),
                                tool="srv__wide", call_id="c")
    from synapse_nb.agent.held_summary import summarize

    summary = summarize(held, sql_tool=SQL_TOOL)
    assert len(summary) <= SUMMARY_CHARS
    assert "`wide_1`" in summary
    assert "30 rows x 300 columns" in summary
    assert "more columns" in summary
    assert SQL_TOOL in summary


def test_a_held_tables_warning_is_on_its_frame_and_first_in_what_the_model_is_told() -> None:
    """motherduck's shape: rows cut by the server, saying so beside them. Held, the model saw only the rows and
    took 1,024 of them for all there is; the variable's DataFrame lost the warning `%mcp call`'s `.df` keeps."""
    sent = {"rows": _orders(1024), "truncated": True, "warning": "Results limited to 1,024 rows"}
    result = ToolResult(content=(ContentBlock("text", text=json.dumps(sent)),), structured_content=sent)
    namespace: dict[str, Any] = {}
    held = HeldResults(namespace).hold(result, tool="md__query", call_id="c")
    assert namespace["query_1"].attrs == {"truncated": True, "warning": "Results limited to 1,024 rows"}
    from synapse_nb.agent.held_summary import summarize

    summary = summarize(held, sql_tool=SQL_TOOL)
    assert "\nthe server sent beside the rows: truncated: true; warning: Results limited to 1,024 rows\n" in summary
    assert len(summary) <= SUMMARY_CHARS


def test_csv_and_markdown_tables_and_prose_are_told_apart() -> None:
    from synapse_nb.tables import csv_table, table_of

    assert csv_table("region,total\nnorth,1\nsouth,2\n") is not None
    assert csv_table("Hello, world. This is prose,\nwith commas, in it,\nand more, lines.") is None
    markdown = "| a | b |\n|---|---|\n| 1 | 2 |"
    assert table_of(ToolResult(content=(ContentBlock("text", text=markdown),))).rows == (("1", "2"),)  # type: ignore[union-attr]


def test_a_hold_budget_is_checked_and_a_server_may_have_its_own() -> None:
    policy = HoldPolicy(over_tokens=10, servers={"big": 0, "small": 1000})
    text_result = ToolResult(content=(ContentBlock("text", text="x" * 100),))
    assert policy.holds(text_result, None)
    assert policy.holds(text_result, "other")
    assert not policy.holds(text_result, "big")
    assert not policy.holds(text_result, "small")
    assert not policy.holds(ToolResult.error("x" * 100), None)  # an error is the model's to read whole
    with pytest.raises(AgentError, match="0 or more"):
        HoldPolicy(over_tokens=-1)


def test_a_result_is_read_once_however_many_parts_read_its_tables() -> None:
    # the kernel holding a result reads its table in a worker thread; the cell showing it and `.df` read it again
    rows = [{"id": i, "region": "north"} for i in range(1000)]
    result = ToolResult(content=(ContentBlock("text", text=json.dumps(rows)),))
    first = tables_of(result)
    again = tables_of(result)
    assert again == first
    assert again[0] is first[0]  # the same Table object: not read a second time
    other = tables_of(ToolResult(content=(ContentBlock("text", text=json.dumps(rows)),)))  # equal, yet another result
    assert other == first
    assert other[0] is not first[0]
