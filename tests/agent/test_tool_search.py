"""Tool search (issue 35, item 2): above the budget the model is offered `tools__search` and the tools it loaded,
not every tool; below it nothing changes. Over the real catalogs of ten servers (the snapshots of
tests/agent/tool_search_eval), through the real wire-format model server."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tool_index import PastUse, ToolIndex, asked
from synapse_nb.agent.tool_search import SEARCH_TOOL, ToolSearch, loaded_tools
from synapse_nb.agent.tools import ToolRegistry
from synapse_nb.agent.turn import TurnOptions
from synapse_nb.providers.openai import OpenAIProvider
from synapse_nb.types import Message, ToolSpec
from tests.agent.agent_fakes import FakeSource, text_result
from tests.support.catalog_servers import catalog_about, catalog_specs
from tests.support.llm_server import LlmServer, call, text, tool_calls

pytestmark = pytest.mark.anyio


def _offered(request: Any) -> list[str]:
    return [t["function"]["name"] for t in request.body.get("tools", [])]


@contextlib.asynccontextmanager
async def _agent(
    server: LlmServer, budget: int, servers: dict[str, bool] | None = None,
) -> AsyncIterator[tuple[Agent, FakeSource]]:
    source = FakeSource()
    for spec in catalog_specs():
        source.specs.append(spec)
        source.handlers[spec.name] = lambda args, name=spec.name: text_result(f"{name} answered")
    about = catalog_about()
    registry = ToolRegistry(source)
    provider = OpenAIProvider("gpt-test", api_key="k", base_url=server.openai_base_url)
    opts = TurnOptions(provider, tool_search=ToolSearch(budget, servers or {}, about=lambda: about))
    try:
        yield Agent(opts, registry), source
    finally:
        await provider.aclose()
        registry.close()


async def test_over_the_budget_the_model_gets_the_search_then_the_tools_it_loaded(llm_server: LlmServer) -> None:
    async with _agent(llm_server, budget=40) as (agent, source):
        llm_server.queue(
            tool_calls(call(SEARCH_TOOL, {"query": "what time is it in Tokyo right now"})),
            tool_calls(call("time__get_current_time", {"timezone": "Asia/Tokyo"})),
            text("It is noon."),
        )
        result = await agent.ask("what time is it in Tokyo?")

        assert result.status == "finished", result.error
        first, second, third = llm_server.requests
        assert _offered(first) == [SEARCH_TOOL]  # one definition instead of 159
        assert len(source.specs) == len(catalog_specs()) >= 150
        loaded = _offered(second)
        assert loaded[-1] == SEARCH_TOOL
        assert "time__get_current_time" in loaded
        assert 2 <= len(loaded) <= 6
        answer = next(m["content"] for m in second.body["messages"] if m["role"] == "tool")
        assert "- time__get_current_time: Get current time in a specific timezone" in answer
        assert source.calls == [("time__get_current_time", {"timezone": "Asia/Tokyo"}, None)]
        # the search is recorded like any tool call: a tool call with its result
        assert [c.tool for c in result.tool_calls] == ["search", "get_current_time"]
        assert result.tool_calls[0].server == "tools"
        assert set(_offered(third)) == set(loaded)

        # the next turn of the session still has what it loaded, from its first request on
        llm_server.queue(text("still noon"))
        await agent.ask("and now?")
        assert set(_offered(llm_server.requests[3])) == set(loaded)


async def test_at_or_below_the_budget_every_tool_is_offered_as_before(llm_server: LlmServer) -> None:
    every = len(catalog_specs())
    async with _agent(llm_server, budget=every) as (agent, _):
        llm_server.queue(text("hi"))
        await agent.ask("hello")
        offered = _offered(llm_server.requests[0])
        assert len(offered) == every
        assert SEARCH_TOOL not in offered
    async with _agent(llm_server, budget=0) as (agent, _):  # 0: no budget
        llm_server.clear()
        llm_server.queue(text("hi"))
        await agent.ask("hello")
        assert len(_offered(llm_server.requests[0])) == every


async def test_a_tool_not_loaded_is_refused_with_the_way_to_load_it_and_a_bad_search_is_an_error(
    llm_server: LlmServer,
) -> None:
    async with _agent(llm_server, budget=10) as (agent, source):
        llm_server.queue(
            tool_calls(call("excel__read_range", {"filepath": "a.xlsx"}), call(SEARCH_TOOL, {"query": ""}),
                       call(SEARCH_TOOL, {"query": "excel", "limit": 99})),
            text("ok"),
        )
        await agent.ask("read a.xlsx")
        messages = [m["content"] for m in llm_server.requests[1].body["messages"] if m["role"] == "tool"]
        assert "no tool named 'excel__read_range' is loaded; find and load tools with tools__search" in messages[0]
        assert "takes query" in messages[1]
        assert "limit must be a whole number from 1 to 10" in messages[2]
        assert source.calls == []
        assert _offered(llm_server.requests[1]) == [SEARCH_TOOL]  # errors load nothing


async def test_a_server_may_choose_to_be_offered_up_front_or_to_be_searched_for(llm_server: LlmServer) -> None:
    async with _agent(llm_server, budget=40, servers={"time": False}) as (agent, _):
        llm_server.queue(text("hi"))
        await agent.ask("hello")
        assert _offered(llm_server.requests[0]) == ["time__convert_time", "time__get_current_time", SEARCH_TOOL]
    async with _agent(llm_server, budget=0, servers={"everything": True, "git": True}) as (agent, source):
        llm_server.clear()
        llm_server.queue(text("hi"))
        await agent.ask("hello")
        offered = _offered(llm_server.requests[0])
        assert SEARCH_TOOL in offered
        assert not [n for n in offered if n.startswith(("everything__", "git__"))]
        assert len(offered) == len(source.specs) - 16 - 12 + 1


def test_loaded_tools_are_read_from_the_search_answers_of_the_transcript() -> None:
    answer = "Loaded 2 tools; they are offered from your next request:\n- git__git_log: Shows the commit logs\n- a: b"
    messages = [
        Message.user("- not__this: a user line"),
        Message.tool("c1", answer, name=SEARCH_TOOL),
        Message.tool("c2", "- other__tool: not a search", name="other__tool"),
        Message.tool("c3", "- bad__tool: x", name=SEARCH_TOOL, is_error=True),
    ]
    assert loaded_tools(messages) == {"git__git_log", "a"}


def _spec(server: str, name: str, description: str) -> ToolSpec:
    return ToolSpec(name=f"{server}__{name}", description=description, input_schema={}, server=server,
                    original_name=name)


def test_what_worked_before_breaks_a_tie_and_never_overrules_the_text() -> None:
    specs = [_spec("a", "lookup", "Look up a record by key"), _spec("b", "lookup", "Look up a record by key"),
             _spec("c", "fetch_customer", "Fetch a customer record by key")]
    cold = ToolIndex(specs)
    assert [h.name for h in cold.search("look up the record", 2)] == ["a__lookup", "b__lookup"]  # a tie: by name
    warm = ToolIndex(specs, past=[PastUse("look up the invoice record for March", "b", "lookup")])
    assert [h.name for h in warm.search("look up the record", 2)] == ["b__lookup", "a__lookup"]
    # a past use of a tool whose text does not match much stays behind the tools that do
    other = ToolIndex(specs, past=[PastUse("look up the record", "c", "fetch_customer")])
    assert other.search("look up the record", 3)[-1].name == "c__fetch_customer"


def test_the_index_reads_titles_parameters_and_what_a_server_says_about_itself() -> None:
    by_title = ToolSpec(name="s__t1", description="Runs it.", input_schema={}, server="s", original_name="t1",
                        title="Convert currency")
    by_param = ToolSpec(name="s__t2", description="Runs it.", server="s", original_name="t2", input_schema={
        "type": "object", "properties": {"celsius": {"type": "number", "description": "a temperature to convert"}}})
    plain = _spec("u", "t3", "Runs it.")
    index = ToolIndex([by_title, by_param, plain], about={"u": "A weather station: forecasts and rainfall"})
    assert index.search("currency", 1)[0].name == "s__t1"
    assert index.search("temperature in celsius", 1)[0].name == "s__t2"
    assert index.search("rainfall forecasts", 1)[0].name == "u__t3"
    assert index.search("zzz qqq") == []


@pytest.mark.parametrize(("request_", "left"), [
    ("Put a note on B7 of plan.xlsx saying 'estimate from the Q3 call'.", "Put a note on B7 of  xlsx  saying  ."),
    ('rename "old name" to `new_name`', "rename   to  "),
    ("it\u2019s \u201cQ3 plan\u201d, the user's", "it\u2019s  , the user's"),
    ("Open http://localhost:8050/app?x=1 in the browser", "Open  url  in the browser"),
    ("Which files does PR #412 in acme/forecasting touch?", "Which files does PR   in   touch?"),
    ("sum 50,000 and 12.5", "sum   and  "),
    ("what's in ~/data/raw/customers.csv", "what's in  csv "),
    ("'just quoted'", "'just quoted'"),  # nothing would be left: the request as it is
])
def test_what_a_request_names_is_left_out_of_what_it_asks(request_: str, left: str) -> None:
    assert asked(request_) == left


def test_a_request_is_ranked_by_what_it_asks_not_by_the_text_it_quotes() -> None:
    specs = [_spec("sheet", "set_note", "Add a note to a cell"), _spec("phone", "log_call", "Log a phone call"),
             _spec("files", "read_file", "Read a file of the data folder"),
             _spec("sheet", "read_range", "Read cells of a workbook (xlsx)")]
    index = ToolIndex(specs)
    assert index.search("put a note on B7 saying 'estimate from the Q3 call'", 1)[0].name == "sheet__set_note"
    assert index.search("read data/budget.xlsx", 1)[0].name == "sheet__read_range"  # a workbook, not "the data"
    # the history is read the same way: what a past request quoted does not make it similar to this one
    past = [PastUse("log 'the note on B7' as a call", "phone", "log_call")]
    assert ToolIndex(specs, past=past).search("note on a cell", 1)[0].name == "sheet__set_note"


SCRIPT = [{"tool_calls": [{"name": SEARCH_TOOL, "arguments": {"query": "add two numbers"}}]},
          {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
          "2 + 3 = {result}"]


def _native(ran: list[str]) -> ToolRegistry:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append("add")
        return a + b

    def shout(text: str) -> str:
        """Say a text in capitals."""
        return text.upper()

    tools = ToolRegistry()
    tools.register(add)
    tools.register(shout)
    return tools


async def test_a_turn_that_searched_replays_from_its_cassette_loading_the_same_tools(tmp_path: Any) -> None:
    from synapse_nb.cassette import CassetteWriter
    from synapse_nb.cassette_reader import Cassette
    from synapse_nb.events import Event, ToolCallFinished
    from synapse_nb.masking import SecretMask
    from synapse_nb.providers.replay import RecordingProvider, ReplayProvider
    from synapse_nb.providers.scripted import ScriptedProvider
    from synapse_nb.types import ToolCall, ToolResult

    path, mask, ran = tmp_path / "c.jsonl", SecretMask(environ={}), []
    writer = CassetteWriter(path, mask)

    def tape(event: Event) -> None:
        if isinstance(event, ToolCallFinished):
            writer.tool(event.call.name, event.call.arguments, event.result, event.error, event.duration_ms)

    search = ToolSearch(1)  # two native tools, a budget of one: the model searches
    live = Agent(RecordingProvider(ScriptedProvider(SCRIPT), writer), _native(ran), sinks=[tape], tool_search=search)
    recorded = await live.ask("add 2 and 3")
    writer.close()
    assert recorded.status == "finished", recorded.error
    assert recorded.text == "2 + 3 = 5"
    assert ran == ["add"]
    assert [s.name for s in live.offered_tools()] == ["add", SEARCH_TOOL]

    cassette = Cassette.load(path, mask)

    async def answer(call: ToolCall) -> tuple[ToolResult | None, str | None, float] | None:
        found = cassette.tool(call.name, call.arguments)
        return None if found is None else (found.result, found.error, found.duration_ms)

    again = Agent(ReplayProvider("scripted", ScriptedProvider(SCRIPT).model, cassette), _native(ran),
                  tool_answer=answer, tool_search=search)
    replayed = await again.ask("add 2 and 3")
    assert replayed.status == "finished", replayed.error
    assert ran == ["add"]  # nothing ran again, the search neither
    assert [m.to_dict() for m in again.messages] == [m.to_dict() for m in live.messages]
    assert [s.name for s in again.offered_tools()] == ["add", SEARCH_TOOL]
