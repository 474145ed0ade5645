"""The session trace: LLM and tool calls on a timeline to scale, grouped by turn, each expandable."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest

from synapse_nb.events import (
    LlmCallFinished,
    MessageAdded,
    SessionStarted,
    ToolCallFinished,
    TurnFinished,
    TurnStarted,
)
from synapse_nb.notebook.widgets import session_trace
from synapse_nb.notebook.widgets.trace import build_timeline, read_trace, trace_html, trace_text
from synapse_nb.types import ContentBlock, Message, ToolCall, ToolResult, Usage
from tests.notebook.widgets.widget_fakes import FakeHistory
from tests.support.untrusted import unstyled

T0 = dt.datetime(2025, 3, 1, 9, 0, 0)


def at(ms: float) -> dt.datetime:
    return T0 + dt.timedelta(milliseconds=ms)


def llm(ms: float, dur: float, *, error: str | None = None, session: str = "s1") -> dict[str, Any]:
    return {"llm_call_id": f"l{ms}", "session_id": session, "provider": "scripted", "model": "demo",
            "started_at": at(ms), "duration_ms": dur, "ttft_ms": 12.0, "input_tokens": 100, "output_tokens": 20,
            "stop_reason": "tool_use", "error": error}


def tool(ms: float, dur: float, *, is_error: bool = False, session: str = "s1") -> dict[str, Any]:
    return {"tool_call_id": f"t{ms}", "session_id": session, "message_id": "m", "server": "demo",
            "tool": "describe_table", "arguments": '{"table": "<orders>"}', "result_text": "Table orders: 300 rows",
            "result": '{"structured_content": {"rows": 300}}', "is_error": is_error, "error": None,
            "approval": "auto", "started_at": at(ms), "duration_ms": dur}


def widths(html: str) -> list[float]:
    return [float(x) for x in re.findall(r"width:([\d.]+)%", html)]


def lefts(html: str) -> list[float]:
    return [float(x) for x in re.findall(r"left:([\d.]+)%", html)]


def test_calls_are_ordered_and_drawn_to_scale() -> None:
    history = FakeHistory(
        llm_calls=[llm(0, 250), llm(750, 250), llm(0, 999, session="other")],
        tool_calls=[tool(250, 500)],
        sessions=[{"session_id": "s1", "name": "analysis", "model": "scripted:demo"}],
    )
    html = trace_html(history, "s1")
    assert html.index("snb-span-llm") < html.index("snb-span-tool") < html.rindex("snb-span-llm")
    assert widths(html) == [25.0, 50.0, 25.0]  # 250/500/250 ms of a 1 s span
    assert lefts(html) == [0.0, 25.0, 75.0]
    assert "Session analysis" in html
    assert "scripted:demo" in html
    assert "2 LLM calls (500 ms) · 1 tool call (500 ms) · 200 → 40 tokens" in html
    assert "100→20 tok" in html


def test_rows_expand_to_escaped_arguments_and_results() -> None:
    history = FakeHistory(llm_calls=[llm(0, 10)], tool_calls=[tool(10, 5)])
    html = trace_html(history, "s1")
    assert html.count('<details class="snb-span') == 2
    assert "<details><summary" in html  # the structured content, folded beside the text result
    assert "&quot;table&quot;: &quot;&lt;orders&gt;&quot;" in html  # arguments pretty-printed and escaped
    assert "Table orders: 300 rows" in html
    assert "&quot;rows&quot;: 300" in html
    assert "<orders>" not in html


def test_errors_are_marked_red_and_counted() -> None:
    history = FakeHistory(llm_calls=[llm(0, 10, error="rate limited (429)")], tool_calls=[tool(10, 5, is_error=True)])
    html = trace_html(history, "s1")
    assert "2 errors" in html
    assert html.count("background:#cf222e\"></div>") == 2  # both bars red
    assert "rate limited (429)" in html


def test_turns_group_their_calls_with_status_and_prompt() -> None:
    turns = [
        {"turn_id": "a", "session_id": "s1", "prompt": "which tables?", "status": "finished", "started_at": at(0),
         "duration_ms": 100.0, "error": None},
        {"turn_id": "b", "session_id": "s1", "prompt": "describe orders", "status": "failed", "started_at": at(60_000),
         "duration_ms": 1000.0, "error": "MaxIterationsError: 10 iterations"},
    ]
    history = FakeHistory(turns=turns, llm_calls=[llm(0, 100), llm(60_000, 500)], tool_calls=[tool(60_500, 500)])
    html = trace_html(history, "s1")
    assert html.index("Turn 1") < html.index("which tables?") < html.index("Turn 2") < html.index("describe orders")
    assert "snb-b-green" in html
    assert "MaxIterationsError: 10 iterations" in html
    # each turn has its own scale: a minute of idle time between turns does not squash the bars
    assert widths(html) == [100.0, 50.0, 50.0]


def test_llm_rows_show_the_reply_written_after_them() -> None:
    messages = [
        {"session_id": "s1", "seq": 1, "role": "user", "content": "hi", "created_at": at(0), "tool_calls": None},
        {"session_id": "s1", "seq": 2, "role": "assistant", "content": "", "created_at": at(100),
         "tool_calls": '[{"id": "c1", "name": "demo__list_tables", "arguments": {}}]'},
        {"session_id": "s1", "seq": 4, "role": "assistant", "content": "There are 3 tables.", "created_at": at(400),
         "tool_calls": None},
    ]
    groups = build_timeline([llm(0, 100), llm(300, 100)], [], None, messages)
    first, second = (s for s in groups[0].spans if s.kind == "llm")
    assert [m["seq"] for m in first.reply] == [2]
    assert [m["seq"] for m in second.reply] == [4]
    html = trace_html(FakeHistory(llm_calls=[llm(0, 100), llm(300, 100)], messages=messages), "s1")
    assert "demo__list_tables" in html
    assert "There are 3 tables." in html


def test_an_empty_session_says_so() -> None:
    html = trace_html(FakeHistory(), "nothing")
    assert "No LLM or tool calls are recorded" in html


def test_the_widget_reloads_and_reports_a_broken_history(caplog: pytest.LogCaptureFixture) -> None:
    history = FakeHistory(llm_calls=[llm(0, 10)])
    trace = session_trace(history, "s1")
    assert "1 LLM call" in trace.view.value
    history.tables["tool_calls"] = [tool(10, 5)]
    trace.reload_button.click()
    assert "1 tool call" in trace.view.value

    class Broken(FakeHistory):
        def llm_calls(self, session_id: str | None = None) -> Any:
            raise RuntimeError("the file is locked")

    assert "The trace cannot be read: the file is locked" in session_trace(Broken(), "s1").view.value
    assert "reading the trace" in caplog.text


def test_a_recorded_session_from_the_real_history_store(clean_env: Path) -> None:
    from synapse_nb.history.store import HistoryStore

    store = HistoryStore.open(clean_env / "trace.duckdb", strict=True)
    try:
        call = ToolCall("c1", "demo__describe_table", {"table": "orders"})
        result = ToolResult((ContentBlock("text", text="Table orders: 300 rows"),), {"rows": 300}, duration_ms=40.0)
        events = [
            SessionStarted(session_id="s1", name="trace-test", model="scripted:demo", at=at(0)),
            TurnStarted(session_id="s1", turn_id="t1", prompt="describe orders", model="scripted:demo", at=at(0)),
            MessageAdded(session_id="s1", message_id="m1", seq=0, message=Message.user("describe orders"), at=at(0)),
            LlmCallFinished(session_id="s1", llm_call_id="l1", provider="scripted", model="demo", started_at=at(1),
                            duration_ms=50, usage=Usage(120, 30), stop_reason="tool_use"),
            MessageAdded(session_id="s1", message_id="m2", seq=1, message=Message.assistant("", (call,)), at=at(51)),
            ToolCallFinished(session_id="s1", call=call, server="demo", tool="describe_table", approval="auto",
                             started_at=at(60), duration_ms=40, result=result, message_id="m2"),
            LlmCallFinished(session_id="s1", llm_call_id="l2", provider="scripted", model="demo", started_at=at(110),
                            duration_ms=90, usage=Usage(300, 60), stop_reason="end_turn"),
            MessageAdded(session_id="s1", message_id="m4", seq=3, message=Message.assistant("Orders has 300 rows."),
                         at=at(200)),
            TurnFinished(session_id="s1", turn_id="t1", text="Orders has 300 rows.", iterations=2,
                         usage=Usage(420, 90), duration_ms=200, at=at(200)),
        ]
        for event in events:
            store.record(event)
        store.flush()
        trace = session_trace(store.history(), "s1")
    finally:
        store.close()
    html = trace.view.value
    assert "Session trace-test" in html
    assert "Turn 1" in html
    assert "describe orders" in html
    assert "2 LLM calls" in html
    assert "1 tool call" in html
    assert "420 → 90 tokens" in html
    assert html.count("snb-span-llm") == 2
    assert html.count("snb-span-tool") == 1
    assert "Table orders: 300 rows" in html
    assert "Orders has 300 rows." in html
    assert widths(html) == [25.0, 20.0, 45.0]  # 50, 40 and 90 ms of the 200 ms turn


def _tool_row(ms: float, **changes: Any) -> dict[str, Any]:
    return {**tool(ms, 5), **changes}


def test_only_real_errors_count_and_show_red() -> None:
    history = FakeHistory(
        llm_calls=[llm(0, 10, error="cancelled")],
        tool_calls=[
            _tool_row(10, approval="denied", is_error=True, result_text="denied by user"),
            _tool_row(20, error="cancelled", result_text=None),
            _tool_row(30, is_error=True, result_text="SQL error"),
        ],
    )
    html = trace_html(history, "s1")
    assert "1 error" in html
    assert "2 errors" not in html
    assert html.count('background:#cf222e"></div>') == 1  # only the real failure is red
    assert 'background:#afb8c1"></div>' in html  # denied: grey
    assert html.count('background:#6e7781"></div>') == 2  # cancelled LLM call and tool call: neutral
    text = trace_text(read_trace(history, "s1"))
    assert "1 error" in text
    assert "[denied]" in text
    assert "[cancelled]" in text


def test_manual_calls_are_their_own_group_not_part_of_the_previous_turn() -> None:
    turns = [{"turn_id": "a", "session_id": "s1", "prompt": "which tables?", "status": "finished",
              "started_at": at(0), "duration_ms": 100.0, "error": None}]
    history = FakeHistory(
        turns=turns, llm_calls=[llm(0, 100)],
        tool_calls=[tool(50, 10), _tool_row(5_000, approval="manual", tool="sleep")],
    )
    groups = build_timeline(
        history.llm_calls("s1").to_dict("records"), history.tool_calls("s1").to_dict("records"),
        history.turns("s1").to_dict("records"),
    )
    assert [g.label if g.turn is None else "turn" for g in groups] == ["turn", "Manual calls"]
    assert [s.row["tool"] for s in groups[0].spans if s.kind == "tool"] == ["describe_table"]
    assert [s.row["tool"] for s in groups[1].spans] == ["sleep"]
    html = trace_html(history, "s1")
    assert html.index("Turn 1") < html.index("Manual calls") < html.index("demo.sleep")
    assert "Turn 2" not in html


def test_the_widget_carries_a_static_snapshot_for_saved_notebooks() -> None:
    turns = [{"turn_id": "a", "session_id": "s1", "prompt": "which tables?", "status": "finished",
              "started_at": at(0), "duration_ms": 100.0, "error": None}]
    trace = session_trace(FakeHistory(turns=turns, llm_calls=[llm(0, 100)], tool_calls=[tool(50, 10)]), "s1")
    bundle = trace._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == trace.model_id
    assert bundle["text/html"].startswith("<style>")
    assert "Turn 1" in bundle["text/html"]
    assert "snb-span-tool" in bundle["text/html"]
    assert "SessionTrace(" not in bundle["text/plain"]
    assert bundle["text/plain"].splitlines()[:4] == [
        "Session s1: 1 LLM calls, 1 tool calls, 0 errors",
        "Turn 1 · finished · 100 ms · which tables?",
        "  LLM  scripted:demo 100 ms",
        "  tool demo.describe_table 10 ms",
    ]


def test_the_snapshot_is_styled_inline_so_its_timeline_reads_well_where_style_blocks_are_stripped() -> None:
    turns = [{"turn_id": "a", "session_id": "s1", "prompt": "which tables?", "status": "finished",
              "started_at": at(0), "duration_ms": 100.0, "error": None}]
    trace = session_trace(FakeHistory(turns=turns, llm_calls=[llm(0, 100)], tool_calls=[tool(50, 10)]), "s1")
    html = trace._repr_mimebundle_()["text/html"]
    assert unstyled(html) == []
    # the descendant rules too: each span is a flex row with its bar placed on a track
    assert re.search(r'<summary style="[^"]*display: flex', html)
    assert re.search(r'class="snb-bar" [^>]*style="[^"]*position: absolute', html)
    assert re.search(r'class="snb-track" style="[^"]*background: #f6f8fa', html)
