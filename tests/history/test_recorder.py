"""Each event becomes the right row: what a query sees after recording one conversation."""

from __future__ import annotations

import json

import pandas as pd

from synapse_nb import events as ev
from synapse_nb.history.recorder import Recorder
from synapse_nb.history.store import HistoryStore
from synapse_nb.types import Message, Usage
from tests.history.history_events import at, conversation


def _recorded(store: HistoryStore) -> dict[str, pd.DataFrame]:
    for event in conversation("s1"):
        store.record(event)
    h = store.history()
    return {
        "sessions": h.sessions(),
        "messages": h.messages(),
        "tool_calls": h.tool_calls(),
        "llm_calls": h.llm_calls(),
        "turns": h.turns(),
        "server_events": h.server_events(),
    }


def test_each_event_maps_to_its_row(store: HistoryStore) -> None:
    rel = _recorded(store)
    s = rel["sessions"].iloc[0]
    assert (s.session_id, s["name"], s.model, s.notebook, s.kernel_id) == (
        "s1",
        "demo",
        "scripted:demo",
        "a.ipynb",
        "k1",
    )
    assert s.created_at == at(0)

    m = rel["messages"]
    assert list(m.role) == ["user", "assistant", "tool", "assistant"]
    assert list(m.seq) == [0, 1, 2, 3]
    assistant = m.iloc[1]
    assert json.loads(assistant.tool_calls) == [
        {
            "id": "call_1",
            "name": "demo__query",
            "arguments": {"sql": "SELECT count(*) FROM orders", "table": "orders", "k": ""},
        }
    ]
    assert assistant.model == "scripted:demo"
    tool = m.iloc[2]
    assert tool.tool_call_id == "call_1"
    full = json.loads(tool.tool_results)  # the full result from event.result, image included
    assert full["structured_content"] == {"count": 42, "note": ""}
    assert [b["kind"] for b in full["content"]] == ["text", "image"]
    assert pd.isna(m.iloc[0].tool_calls)
    assert pd.isna(m.iloc[0].tool_results)

    (tc,) = rel["tool_calls"].itertuples()
    assert (tc.tool_call_id, tc.session_id, tc.message_id, tc.server, tc.tool, tc.approval) == (
        "call_1",
        "s1",
        "s1-m1",
        "demo",
        "query",
        "auto",
    )
    assert json.loads(tc.arguments)["table"] == "orders"
    assert json.loads(tc.result)["duration_ms"] == 12.5
    assert tc.result_text == "42 \n[image image/png]"
    assert not tc.is_error
    assert tc.duration_ms == 12.5
    assert tc.started_at == at(2)

    llm = rel["llm_calls"].set_index("llm_call_id")
    assert (llm.loc["s1-l1", "input_tokens"], llm.loc["s1-l1", "output_tokens"], llm.loc["s1-l1", "ttft_ms"]) == (
        120,
        30,
        5.0,
    )
    assert llm.loc["s1-l1", "stop_reason"] == "tool_use"
    assert llm.loc["s1-l2", "error"] == "boom "

    turns = rel["turns"].set_index("turn_id")
    assert list(turns.status) == ["finished", "failed", "cancelled"]
    assert turns.loc["s1-t1", "prompt"] == "how many orders? "
    assert turns.loc["s1-t1", "started_at"] == at(1)
    assert (turns.loc["s1-t1", "iterations"], turns.loc["s1-t1", "input_tokens"]) == (2, 120)
    assert turns.loc["s1-t2", "error"] == "provider failed "
    assert turns.loc["s1-t2", "error_type"] == "ProviderError"

    se = rel["server_events"]
    assert list(se.event) == ["connected", "crashed"]
    assert json.loads(se.iloc[0].detail)["pid"] == 4242
    assert json.loads(se.iloc[1].detail) == "exit 1 "


def test_tool_call_started_and_text_delta_write_nothing(store: HistoryStore) -> None:
    for event in conversation("s1"):
        store.record(event)
    h = store.history()
    assert len(h.tool_calls()) == 1  # ToolCallStarted + ToolCallFinished: one row, no duplicate
    assert h.sql("SELECT count(*) AS n FROM messages").n[0] == 4  # the TextDelta is not a message


def test_tool_message_without_full_result_records_what_the_model_saw(store: HistoryStore) -> None:
    store.record(
        ev.MessageAdded(
            session_id="s", message_id="m", seq=0, message=Message.tool("c9", "bounded text", is_error=True)
        )
    )
    tr = json.loads(store.history().messages().tool_results[0])
    assert tr["content"] == [{"kind": "text", "text": "bounded text"}]
    assert tr["is_error"] is True


def test_a_turn_whose_start_another_store_saw_derives_its_start() -> None:
    end = ev.TurnFinished(
        session_id="s", turn_id="t", text="x", iterations=1, usage=Usage(), duration_ms=2000.0, at=at(10)
    )
    ((relation, row),) = Recorder().rows(end)
    assert relation == "turns"
    assert row["prompt"] is None
    assert row["started_at"] == "2025-03-01 12:00:08"


def test_aware_timestamps_are_stored_as_naive_utc(store: HistoryStore) -> None:
    import datetime as dt

    when = dt.datetime(2025, 1, 1, 14, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    store.record(ev.ServerEvent(server="x", event="connected", at=when))
    assert store.history().server_events()["at"][0] == dt.datetime(2025, 1, 1, 12, 0)


def test_record_never_raises_and_ignores_unknown_objects(store: HistoryStore) -> None:
    store.record("not an event")  # type: ignore[arg-type]
    store.record(ev.ServerEvent(server="x", event="odd", detail={"v": float("nan"), "o": object(), "b": b"\xff"}))
    detail = json.loads(store.history().server_events().detail[0])
    assert detail["v"] is None
    assert detail["o"].startswith("<object")
    assert detail["b"] == "\ufffd"


def test_a_cancel_or_a_refusal_is_recorded_as_its_outcome_not_as_an_error(store: HistoryStore) -> None:
    """`outcome` says what became of each call; `is_error` stays true only for the tool's own failures."""
    from dataclasses import replace

    from synapse_nb.types import ContentBlock, ToolResult
    from tests.history.history_events import tool_call

    ok = tool_call("s1", 1)
    failed = replace(tool_call("s1", 2), result=ToolResult((ContentBlock("text", text="boom"),), is_error=True))
    raised = replace(tool_call("s1", 3), result=None, error="MCP server 'demo' crashed")
    cancelled = replace(tool_call("s1", 4), result=None, error="cancelled")
    denied = replace(tool_call("s1", 5), approval="denied",
                     result=ToolResult((ContentBlock("text", text="denied by user"),), is_error=True))
    for event in (ok, failed, raised, cancelled, denied):
        store.record(event)
    rows = store.history().sql("SELECT tool_call_id, outcome, is_error FROM tool_calls ORDER BY tool_call_id")
    assert [tuple(r) for r in rows.itertuples(index=False)] == [
        ("s1-c1", "ok", False),
        ("s1-c2", "error", True),
        ("s1-c3", "error", True),
        ("s1-c4", "cancelled", False),
        ("s1-c5", "denied", False),
    ]


def test_each_tool_call_is_recorded_with_who_asked_for_it(store: HistoryStore) -> None:
    """`origin`: the agent's calls, calls made by hand, and an MCP Apps View's calls (app:SERVER)."""
    from dataclasses import replace

    from tests.history.history_events import tool_call

    agent = tool_call("s1", 1)
    by_hand = replace(tool_call("s1", 2), approval="manual", origin="manual")
    by_view = replace(tool_call("s1", 3), approval="manual", origin="app:apps")
    for event in (agent, by_hand, by_view):
        store.record(event)
    rows = store.history().sql("SELECT tool_call_id, origin FROM tool_calls ORDER BY tool_call_id")
    assert [tuple(r) for r in rows.itertuples(index=False)] == [
        ("s1-c1", "agent"), ("s1-c2", "manual"), ("s1-c3", "app:apps"),
    ]


def test_a_one_block_results_text_is_spooled_once_and_read_back_as_result_text(store: HistoryStore) -> None:
    """A large result is encoded, masked and written once; the ingest fills result_text from its one block."""
    from dataclasses import replace

    from synapse_nb.types import ContentBlock, ToolResult
    from tests.history.history_events import tool_call

    big = "".join(f"row {i:07d}\n" for i in range(100_000))  # 1.2 MB
    one = replace(tool_call("s1", 1), result=ToolResult((ContentBlock("text", text=big),)))
    two = replace(tool_call("s1", 2),
                  result=ToolResult((ContentBlock("text", text="a"), ContentBlock("text", text="b"))))
    structured = replace(tool_call("s1", 3), result=ToolResult((), structured_content={"n": 1}))
    for event in (one, two, structured):
        store.record(event)
    spool = store.spool_path
    assert spool is not None
    assert spool.stat().st_size < 1.5 * len(big)  # the text once, not twice
    rows = store.history().sql("SELECT tool_call_id, result_text FROM tool_calls ORDER BY tool_call_id")
    assert [tuple(r) for r in rows.itertuples(index=False)] == [
        ("s1-c1", big), ("s1-c2", "a\nb"), ("s1-c3", '{"n": 1}')]
