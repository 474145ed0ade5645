"""The turn display: events fold into text and tool blocks in order; updates are throttled; outputs end plain."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from typing import Any

import pytest

from synapse_nb.events import (
    LlmCallFinished,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnCancelled,
    TurnFailed,
    TurnFinished,
    TurnStarted,
)
from synapse_nb.notebook.display import TurnDisplay, TurnView, render
from synapse_nb.notebook.output import EMPTY, LiveOutput
from synapse_nb.types import ContentBlock, ToolCall, ToolResult, Usage

S, T = "s1", "t1"
NOW = dt.datetime(2026, 1, 1)


def _call(name: str = "demo__query", **arguments: object) -> ToolCall:
    return ToolCall(id=f"c-{name}", name=name, arguments=arguments)


def _turn(view: TurnView) -> None:
    call = _call(sql="SELECT 1")
    for event in [
        TurnStarted(session_id=S, turn_id=T, prompt="q", model="scripted:demo"),
        TextDelta(session_id=S, turn_id=T, text="Let me look.\n"),
        LlmCallFinished(session_id=S, llm_call_id="l1", provider="scripted", model="demo", started_at=NOW,
                        duration_ms=5, usage=Usage(10, 5)),
        ToolCallStarted(session_id=S, call=call, server="demo", tool="query", approval="auto"),
        ToolCallFinished(session_id=S, call=call, server="demo", tool="query", approval="auto", started_at=NOW,
                         duration_ms=12.4, result=ToolResult((ContentBlock("text", text="1\n\n2 <b>"),))),
        TextDelta(session_id=S, turn_id=T, text="The answer is **1**."),
        LlmCallFinished(session_id=S, llm_call_id="l2", provider="scripted", model="demo", started_at=NOW,
                        duration_ms=5, usage=Usage(20, 8)),
        TurnFinished(session_id=S, turn_id=T, text="The answer is **1**.", iterations=2, usage=Usage(30, 13),
                     duration_ms=1534),
    ]:
        view.apply(event)


def test_text_and_tool_calls_keep_their_order() -> None:
    view = TurnView(model="scripted:demo", model_note="offline scripted model", session="main")
    _turn(view)
    kinds = [type(p).__name__ for p in view.parts]
    assert kinds == ["str", "ToolCallView", "str"]
    assert view.text == "Let me look.\nThe answer is **1**."
    assert view.status == "finished"
    assert view.iterations == 2
    assert view.usage == Usage(30, 13)


def test_markdown_has_one_line_details_blocks_and_a_footer() -> None:
    view = TurnView(model="scripted:demo", model_note="offline scripted model", session="main")
    _turn(view)
    md = render(view)["text/markdown"]
    blocks = md.split("\n\n")
    details = [b for b in blocks if b.startswith("<details>")]
    assert len(details) == 1
    assert "\n" not in details[0]
    assert "demo__query(sql=&quot;SELECT 1&quot;)" in details[0]
    assert "✓ 12 ms" in details[0]
    assert "1&#10;&#10;2 &lt;b&gt;" in details[0]  # escaped, newlines kept inside <pre>
    assert "<b>arguments</b><pre>sql: SELECT 1</pre>" in details[0]
    assert blocks.index(details[0]) == 1
    assert blocks[2] == "The answer is **1**."
    footer = blocks[-1]
    assert footer.startswith("<sub>✓ scripted:demo (offline scripted model)")
    assert "2 iterations" in footer
    assert "43 tokens (30 in, 13 out)" in footer
    assert "1.5 s" in footer


def test_plain_text_rendering_for_non_html_frontends() -> None:
    view = TurnView(model="openai:gpt-test", session="main")
    _turn(view)
    text = render(view)["text/plain"]
    assert text.splitlines()[0] == "Let me look."
    assert '[tool] demo__query(sql="SELECT 1") ✓ 12 ms' in text
    assert "→ 1" in text
    assert text.splitlines()[-1].startswith("-- ✓ openai:gpt-test · 2 iterations")


def test_text_format_has_no_markdown() -> None:
    view = TurnView(model="m", format="text")
    assert set(render(view)) == {"text/plain"}


def test_json_format_pretty_prints_the_answer() -> None:
    view = TurnView(model="m", format="json")
    view.apply(TextDelta(session_id=S, turn_id=T, text='{"a": [1, 2]}'))
    view.apply(TurnFinished(session_id=S, turn_id=T, text='{"a": [1, 2]}', iterations=1, usage=Usage(), duration_ms=1))
    assert '```json\n{\n  "a": [\n    1,' in render(view)["text/markdown"]


def test_running_view_closes_an_open_code_fence_and_shows_progress() -> None:
    view = TurnView(model="m")
    assert "*thinking…*" in render(view)["text/markdown"]
    view.apply(TextDelta(session_id=S, turn_id=T, text="Here:\n```python\nprint(1)"))
    md = render(view)["text/markdown"]
    assert "print(1)\n```" in md
    assert "⏳ running" in md


def test_errors_denials_and_cancellation_show() -> None:
    view = TurnView(model="m")
    call = _call("demo__fail")
    view.apply(ToolCallStarted(session_id=S, call=call, server="demo", tool="fail", approval="denied"))
    view.apply(ToolCallFinished(session_id=S, call=call, server="demo", tool="fail", approval="denied",
                                started_at=NOW, duration_ms=0, result=ToolResult.error("denied by user")))
    other = _call("demo__crash")
    view.apply(ToolCallStarted(session_id=S, call=other, server="demo", tool="crash", approval="auto"))
    view.apply(ToolCallFinished(session_id=S, call=other, server="demo", tool="crash", approval="auto",
                                started_at=NOW, duration_ms=3, error="ServerCrashedError: gone"))
    view.apply(TurnFailed(session_id=S, turn_id=T, error="boom", error_type="StreamError", iterations=1,
                          usage=Usage(), duration_ms=3))
    md = render(view)["text/markdown"]
    assert "⊘ denied" in md
    assert "ServerCrashedError: gone" in md
    assert "StreamError: boom" in md
    assert "✗ failed" in view.footer
    view.apply(TurnCancelled(session_id=S, turn_id=T, iterations=1, usage=Usage(), duration_ms=3))
    assert view.footer.startswith("⏹ cancelled")


def test_streaming_updates_are_throttled(published: Any) -> None:
    now = [0.0]
    display = TurnDisplay(TurnView(model="m"), LiveOutput(publish=published), interval=0.1, clock=lambda: now[0])
    display.start()
    for i in range(10_000):
        now[0] = i * 0.0001  # 10,000 tokens in one second
        display(TextDelta(session_id=S, turn_id=T, text="tok "))
    display.view.apply(TurnFinished(session_id=S, turn_id=T, text="", iterations=1, usage=Usage(), duration_ms=1000))
    display.finish()
    updates = [item for item in published.items if item[2]]
    assert 5 <= len(updates) <= 15
    assert published.final[-1]["text/plain"].count("tok") == 10_000


def test_live_output_ends_as_one_plain_output(published: Any) -> None:
    out = LiveOutput(publish=published)
    out.start({"text/plain": "working"})
    out.update({"text/plain": "still working"})
    out.finish({"text/plain": "done"})
    first, *_, last = published.items
    assert first == (EMPTY, first[1], False)  # what a tool that ignores updates (nbval) sees first
    assert published.items[-2] == (EMPTY, first[1], True)  # the live output ends empty ...
    assert last == ({"text/plain": "done"}, None, False)  # ... and the result is a plain output
    assert published.final == [{"text/plain": "done"}]


def test_background_output_keeps_its_final_state_in_place(published: Any) -> None:
    out = LiveOutput(keep=True, publish=published)
    out.start({"text/plain": "running"})
    out.finish({"text/plain": "done"})
    assert [item[2] for item in published.items] == [False, True]
    assert published.final == [{"text/plain": "done"}]


def test_not_live_shows_only_the_final_state(published: Any) -> None:
    out = LiveOutput(live=False, publish=published)
    out.start({"text/plain": "x"})
    out.update({"text/plain": "y"})
    out.finish({"text/plain": "z"})
    assert published.items == [({"text/plain": "z"}, None, False)]


def test_durations_are_the_only_varying_text() -> None:
    view = TurnView(model="scripted:demo", session="main")
    _turn(view)
    md = render(view)["text/markdown"]
    masked = re.sub(r"\d+(\.\d+)? (ms|s)\b", "<t>", md)
    assert re.search(r"\d+ ms|\d\.\d s", masked) is None


def test_the_first_token_of_each_answer_segment_shows_at_once(published: Any) -> None:
    now = [0.0]
    display = TurnDisplay(TurnView(model="m"), LiveOutput(publish=published), interval=0.1, clock=lambda: now[0])
    display.start()
    display(TextDelta(session_id=S, turn_id=T, text="First"))  # same instant as start: still shown
    assert "First" in published.items[-1][0]["text/plain"]
    call = _call()
    display(ToolCallStarted(session_id=S, call=call, server="demo", tool="query", approval="auto"))
    display(TextDelta(session_id=S, turn_id=T, text="After the tool"))  # a new segment: shown at once
    assert "After the tool" in published.items[-1][0]["text/plain"]


@pytest.mark.anyio
async def test_held_text_is_flushed_when_the_stream_pauses(published: Any) -> None:
    shown = asyncio.Event()

    def publish(bundle: dict[str, Any], display_id: str | None, update: bool) -> None:
        published(bundle, display_id, update)
        if "two" in bundle.get("text/plain", ""):
            shown.set()

    display = TurnDisplay(TurnView(model="m"), LiveOutput(publish=publish), interval=0.05)
    display.start()
    display(TextDelta(session_id=S, turn_id=T, text="one "))
    display(TextDelta(session_id=S, turn_id=T, text="two"))  # held: within the interval
    assert not shown.is_set()
    await asyncio.wait_for(shown.wait(), 5)  # no further event comes: only the timer can show it
