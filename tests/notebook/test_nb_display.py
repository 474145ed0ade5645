"""The turn display: events fold into text and tool blocks in order; updates are throttled; outputs end plain."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from typing import Any

import pytest

from synapse_nb.events import (
    LlmCallFinished,
    MessageAdded,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    TurnCancelled,
    TurnFailed,
    TurnFinished,
    TurnStarted,
)
from synapse_nb.notebook.output.live import EMPTY, LiveOutput
from synapse_nb.notebook.turns.display import TurnDisplay, TurnView, render
from synapse_nb.types import ContentBlock, Message, ToolCall, ToolResult, Usage

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


def test_markdown_has_one_line_tool_blocks_and_a_footer() -> None:
    view = TurnView(model="scripted:demo", model_note="offline scripted model", session="main")
    _turn(view)
    md = render(view)["text/markdown"]
    blocks = md.split("\n\n")
    assert blocks[0].startswith("<style>")
    assert "\n" not in blocks[0]
    tools = [b for b in blocks if b.startswith('<div class="snb-turn-tool')]
    assert len(tools) == 1
    assert "\n" not in tools[0]
    assert "demo__query(sql=&quot;SELECT 1&quot;)" in tools[0]
    assert "✓ 12 ms" in tools[0]
    assert "1&#10;&#10;2 &lt;b&gt;" in tools[0]  # escaped, newlines kept inside <pre>
    assert ">sql: SELECT 1</pre>" in tools[0]
    assert blocks.index(tools[0]) == 2
    assert blocks[3] == "The answer is **1**."
    footer = blocks[-1]
    assert "✓ scripted:demo (offline scripted model)" in footer
    assert "2 iterations" in footer
    assert "43 tokens (30 in, 13 out)" in footer
    assert "1.5 s" in footer


def test_the_expanded_tool_block_is_a_bordered_tinted_box_with_a_gap_before_the_answer() -> None:
    view = TurnView(model="m")
    _turn(view)
    block = next(b for b in render(view)["text/markdown"].split("\n\n") if b.startswith('<div class="snb-turn-tool'))
    body = re.search(r'<div class="snb-tool-body" style="([^"]*)"', block)
    assert body is not None
    assert "border:1px solid" in body.group(1)
    assert "background:rgba(" in body.group(1)
    assert "margin:6px 0 14px 0" in body.group(1)  # the gap before the answer
    assert "<svg" in block  # the tool icon is drawn, not an emoji


def test_no_glyph_needs_an_emoji_font() -> None:
    """Every character outside ASCII in any state's rendering is one DejaVu Sans has (no emoji)."""
    allowed = set("✓✗⊘■…→·≥≤—")
    view = TurnView(model="m")
    _turn(view)
    texts = [render(view)["text/markdown"], render(view)["text/plain"]]
    running = TurnView(model="m")
    running.apply(ToolCallStarted(session_id=S, call=_call("demo__sleep", seconds=5), server="demo", tool="sleep",
                                  approval="auto"))
    texts += list(render(running).values())
    for cancelled_or_failed in (
        TurnCancelled(session_id=S, turn_id=T, iterations=1, usage=Usage(), duration_ms=3),
        TurnFailed(session_id=S, turn_id=T, error="x", error_type="E", iterations=1, usage=Usage(), duration_ms=3),
    ):
        v = TurnView(model="m")
        v.apply(cancelled_or_failed)
        texts += list(render(v).values())
    for text in texts:
        assert {c for c in text if ord(c) > 127} <= allowed, {c for c in text if ord(c) > 127} - allowed
    for emoji in "🔧⏳⏹":
        assert all(emoji not in t for t in texts)


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
    assert "waiting for the model · " in render(view)["text/markdown"]
    view.apply(TextDelta(session_id=S, turn_id=T, text="Here:\n```python\nprint(1)"))
    md = render(view)["text/markdown"]
    assert "print(1)\n```" in md
    assert "running m" in md
    assert "waiting for the model" not in md  # the streaming text shows progress itself


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
    assert re.search(r'snb-outcome snb-denied" style="color:var\(--snb-faint,#6e7781\)[^>]*>⊘ denied<', md)  # grey
    # only errors are red
    assert re.search(r'snb-outcome snb-error" style="color:var\(--snb-error,#cf222e\)[^>]*>✗ 3 ms<', md)
    assert "ServerCrashedError: gone" in md
    assert "StreamError: boom" in md
    assert "✗ failed" in view.footer
    view.apply(TurnCancelled(session_id=S, turn_id=T, iterations=1, usage=Usage(), duration_ms=3))
    assert view.footer.startswith("■ cancelled")
    assert 'snb-footer snb-cancelled" style="color:var(--snb-muted,#57606a)' in render(view)["text/markdown"]  # neutral


def test_a_cancelled_tool_call_is_neutral_not_an_error() -> None:
    view = TurnView(model="m")
    call = _call("demo__sleep", seconds=20)
    view.apply(ToolCallStarted(session_id=S, call=call, server="demo", tool="sleep", approval="auto"))
    view.apply(ToolCallFinished(session_id=S, call=call, server="demo", tool="sleep", approval="auto",
                                started_at=NOW, duration_ms=2100, error="cancelled"))
    md = render(view)["text/markdown"]
    outcome = r'snb-outcome snb-cancelled" style="color:var\(--snb-muted,#57606a\)[^>]*>■ cancelled after 2.1 s<'
    assert re.search(outcome, md)
    assert "#cf222e" not in md.split("</style>", 2)[2]
    assert "■ cancelled after 2.1 s" in render(view)["text/plain"]


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


def _holding_first_last(published: Any) -> tuple[TurnDisplay, int]:
    """A display whose answer "first last" is partly held by the throttle; how many outputs it had published."""
    display = TurnDisplay(TurnView(model="m"), LiveOutput(publish=published), interval=10.0)
    display.start()
    display(TextDelta(session_id=S, turn_id=T, text="first "))
    display(TextDelta(session_id=S, turn_id=T, text="last"))  # held by the throttle
    return display, len(published.items)


REPLY_END = LlmCallFinished(session_id=S, llm_call_id="l1", provider="p", model="m", started_at=NOW,
                            duration_ms=5, usage=Usage(10, 5))
TURN_END = TurnFinished(session_id=S, turn_id=T, text="first last", iterations=1, usage=Usage(10, 5), duration_ms=20)


def test_the_end_of_a_turn_publishes_only_what_changed(published: Any) -> None:
    """Without a running loop (a synchronous caller) the reply's end shows the held text at once, then the
    turn ends (live output emptied, final output); no identical update."""
    display, before = _holding_first_last(published)
    display(REPLY_END)
    display.refresh()  # nothing new to show
    display(TURN_END)
    display.finish()
    end = published.items[before:]
    assert [(update, "first last" in bundle.get("text/plain", "")) for bundle, _, update in end] == [
        (True, True), (True, False), (False, True)]  # the held text; the live output emptied; the final output
    assert "✓" in end[-1][0]["text/plain"]


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


def test_a_withdrawn_live_output_is_not_emptied_first(published: Any) -> None:
    asked: list[tuple[str, bool]] = []

    def withdraw(display_id: str, wait: bool) -> bool:  # the kernel port's: the live output was the cell's only one
        asked.append((display_id, wait))
        return True

    out = LiveOutput(publish=published, withdraw=withdraw)
    out.start({"text/plain": "working"})
    out.finish({"text/plain": "done"})
    first = published.items[0]
    assert asked == [(first[1], True)]  # cleared once the final rendering comes (no flicker) ...
    assert published.items[1:] == [({"text/plain": "working"}, first[1], True), ({"text/plain": "done"}, None, False)]


def test_a_live_output_beside_others_ends_empty(published: Any) -> None:
    out = LiveOutput(publish=published, withdraw=lambda display_id, wait: False)  # the cell showed something else
    out.start({"text/plain": "working"})
    out.clear()
    assert published.items[-1] == (EMPTY, published.items[0][1], True)


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


def _clocked() -> tuple[TurnView, list[float]]:
    now = [100.0]
    return TurnView(model="m", clock=lambda: now[0]), now


def test_a_running_tool_shows_its_name_and_a_ticking_time() -> None:
    view, now = _clocked()
    view.apply(TurnStarted(session_id=S, turn_id=T, prompt="q", model="m"))
    call = _call("demo__sleep", seconds=20)
    view.apply(ToolCallStarted(session_id=S, call=call, server="demo", tool="sleep", approval="auto"))
    now[0] += 3.24
    bundle = render(view)
    assert "running demo__sleep · 3.2 s" in bundle["text/markdown"]
    assert "running demo__sleep · 3.2 s" in bundle["text/plain"]
    assert "thinking" not in bundle["text/markdown"]
    now[0] += 1.0
    assert "running demo__sleep · 4.2 s" in render(view)["text/plain"]


def test_tool_progress_becomes_a_progress_bar_with_the_servers_message() -> None:
    view, _ = _clocked()
    call = _call("demo__sleep", seconds=20)
    view.apply(ToolCallStarted(session_id=S, call=call, server="demo", tool="sleep", approval="auto"))
    view.apply(ToolCallProgress(session_id=S, call_id=call.id, progress=3, total=4, message="slept 3 of 4 s"))
    md = render(view)["text/markdown"]
    block = next(b for b in md.split("\n\n") if b.startswith('<div class="snb-turn-tool'))
    assert '<details class="snb-turn-tool" open>' in block  # opened, so the bar is visible
    assert '<progress value="0.750" max="1"' in block
    assert "75% slept 3 of 4 s" in block
    assert "[###############-----] 75% slept 3 of 4 s" in render(view)["text/plain"]
    view.apply(ToolCallProgress(session_id=S, call_id=call.id, progress=7, total=None, message=None))
    md = render(view)["text/markdown"]
    assert "<progress style=" in md  # no total: an indeterminate bar
    assert "7 slept 3 of 4 s" in md  # the last message stays until a new one comes


def test_streamed_arguments_show_in_a_pending_block_that_becomes_the_call() -> None:
    view, _ = _clocked()
    view.apply(ToolCallArgumentsDelta(session_id=S, turn_id=T, index=0, call_id="c1", name="demo__query",
                                      arguments_delta='{"sql": "SEL'))
    md = render(view)["text/markdown"]
    # a part of the arguments: no closing parenthesis, an ellipsis, nothing that reads as the whole call
    assert "<code>demo__query({&quot;sql&quot;: &quot;SEL…</code>" in md
    assert '[tool] demo__query({"sql": "SEL… receiving arguments' in render(view)["text/plain"]
    assert "receiving arguments" in md
    assert "the model is writing the arguments of demo__query" in render(view)["text/plain"]
    view.apply(ToolCallArgumentsDelta(session_id=S, turn_id=T, index=0, arguments_delta='ECT 1"}'))
    assert "{&quot;sql&quot;: &quot;SELECT 1&quot;}</pre>" in render(view)["text/markdown"]
    assert "<code>demo__query(sql=&quot;SELECT 1&quot;)</code>" in render(view)["text/markdown"]  # whole JSON
    view.apply(LlmCallFinished(session_id=S, llm_call_id="l", provider="p", model="m", started_at=NOW, duration_ms=1))
    assert "waiting to run" in render(view)["text/markdown"]  # e.g. while the user is asked to approve it
    assert '<code>demo__query(sql=&quot;SELECT 1&quot;)</code>' in render(view)["text/markdown"]  # whole now
    assert "about to run demo__query" in render(view)["text/plain"]
    call = ToolCall(id="c1", name="demo__query", arguments={"sql": "SELECT 1"})
    view.apply(ToolCallStarted(session_id=S, call=call, server="demo", tool="query", approval="auto"))
    blocks = [p for p in view.parts if not isinstance(p, str)]
    assert len(blocks) == 1  # the streamed block became the call's block
    assert blocks[0].status == "running"
    assert 'demo__query(sql="SELECT 1")' in render(view)["text/plain"]


def test_streamed_arguments_that_never_became_a_call_disappear_at_the_end() -> None:
    view, _ = _clocked()
    view.apply(ToolCallArgumentsDelta(session_id=S, turn_id=T, index=0, call_id="c1", name="x", arguments_delta="{"))
    view.apply(TurnFailed(session_id=S, turn_id=T, error="cut", error_type="StreamError", iterations=1,
                          usage=Usage(), duration_ms=3))
    assert "receiving arguments" not in render(view)["text/markdown"]


def _finished_call(view: TurnView, result: ToolResult, name: str = "demo__query") -> str:
    call = _call(name)
    view.apply(ToolCallStarted(session_id=S, call=call, server="demo", tool="query", approval="auto"))
    view.apply(ToolCallFinished(session_id=S, call=call, server="demo", tool="query", approval="auto",
                                started_at=NOW, duration_ms=3, result=result))
    return next(b for b in render(view)["text/markdown"].split("\n\n") if b.startswith('<div class="snb-turn-tool'))


def test_tabular_and_markdown_results_render_as_tables_with_a_raw_toggle() -> None:
    markdown_table = "| name | revenue |\n|---|---|\n| Kettle | 12.5 |\n| Mug \\| cup | 3 |"
    styled = _finished_call(TurnView(model="m"), ToolResult((ContentBlock("text", text=markdown_table),)))
    # every cell styled inline: an untrusted JupyterLab strips <style> and right-aligns table cells
    cells = re.findall(r"<t[hd](?: [^>]*)?>", styled)
    assert len(cells) == 6
    assert all("text-align:left" in c and "padding:" in c for c in cells), cells
    block = re.sub(r'<(t[hd]) style="[^"]*">', r"<\1>", styled)
    assert "<th>name</th><th>revenue</th>" in block
    assert "<td>Mug | cup</td><td>3</td>" in block
    assert '<details class="snb-raw"><summary>raw</summary>' in block
    assert "| Kettle | 12.5 |" in block  # the raw text is behind the toggle
    structured = ToolResult(
        (ContentBlock("text", text="2 rows"),),
        structured_content={"columns": ["id", "x"], "rows": [[1, None], [2, {"a": 1}]], "row_count": 2},
    )
    block = re.sub(r'<(t[hd]) style="[^"]*">', r"<\1>", _finished_call(TurnView(model="m"), structured))
    assert "<th>id</th><th>x</th>" in block
    assert "<td>2</td><td>{&quot;a&quot;: 1}</td>" in block
    assert "2 rows · 2 columns" in block
    records = ToolResult((ContentBlock("text", text='[{"a": 1, "b": "x"}, {"a": 2}]'),))
    assert re.search(r'<th style="[^"]*">a</th><th style="[^"]*">b</th>', _finished_call(TurnView(model="m"), records))
    prose = ToolResult((ContentBlock("text", text="just | a pipe"),))
    assert "<table" not in _finished_call(TurnView(model="m"), prose)


def test_big_results_and_answers_are_capped_with_show_all() -> None:
    big = "\n".join(f"line {i}" for i in range(200))
    block = _finished_call(TurnView(model="m"), ToolResult((ContentBlock("text", text=big),)))
    assert "show all (200 lines)" in block
    assert re.search(r'<pre class="snb-cap" style="[^"]*max-height:22em;overflow:auto', block)
    assert "line 199" in block  # everything is there, in the scroll box
    small = _finished_call(TurnView(model="m"), ToolResult((ContentBlock("text", text="one line"),)))
    assert "show all" not in small

    view = TurnView(model="m")
    answer = "\n\n".join(f"Paragraph {i} of a long answer." for i in range(80))
    view.apply(TextDelta(session_id=S, turn_id=T, text=answer))
    assert "show all" not in render(view)["text/markdown"]  # not while it streams
    view.apply(TurnFinished(session_id=S, turn_id=T, text=answer, iterations=1, usage=Usage(), duration_ms=5))
    md = render(view)["text/markdown"]
    assert "show all (159 lines)" in md
    assert '<div class="snb-cap snb-answer-cap" style="max-height:36em;overflow:auto">\n\nParagraph 0' in md


@pytest.mark.anyio
async def test_the_elapsed_time_ticks_without_events(published: Any) -> None:
    ticks = asyncio.Event()
    seen: list[str] = []

    def publish(bundle: dict[str, Any], display_id: str | None, update: bool) -> None:
        published(bundle, display_id, update)
        seen.append(bundle.get("text/plain", ""))
        if sum("running demo__sleep · " in s for s in seen) >= 3:
            ticks.set()

    display = TurnDisplay(TurnView(model="m"), LiveOutput(publish=publish), tick=0.01)
    display.start()
    display(ToolCallStarted(session_id=S, call=_call("demo__sleep"), server="demo", tool="sleep", approval="auto"))
    await asyncio.wait_for(ticks.wait(), 5)  # only the ticker publishes after the one event
    display.finish()
    assert display._ticker is None  # a finished display stays quiet: nothing ticks after finish()
    display._on_tick()  # a tick already queued when finish() ran publishes nothing either
    assert published.items[-1][1] is None


@pytest.mark.anyio
async def test_held_text_is_shown_as_soon_as_the_reply_ends(published: Any) -> None:
    display = TurnDisplay(TurnView(model="m"), LiveOutput(publish=published), interval=10.0)
    display.start()
    display(TextDelta(session_id=S, turn_id=T, text="one "))
    display(TextDelta(session_id=S, turn_id=T, text="two"))  # held by the (long) throttle
    assert "two" not in published.items[-1][0]["text/plain"]
    display(LlmCallFinished(session_id=S, llm_call_id="l", provider="p", model="m", started_at=NOW, duration_ms=1))
    await asyncio.sleep(0)  # the turn goes on (a tool call follows): the loop's next turn
    assert "one two" in published.items[-1][0]["text/plain"]  # the end of the reply flushed, not the throttle


@pytest.mark.anyio
async def test_a_turn_that_ends_with_the_reply_shows_its_end_once(published: Any) -> None:
    """In a kernel: the reply's end, its message and the turn's end arrive in one turn of the loop, then the
    display finishes. The held text shows in the final output alone: no update that finish() replaces at once
    (each output costs about a millisecond of the cell's idle)."""
    display, before = _holding_first_last(published)
    display(REPLY_END)
    display(MessageAdded(session_id=S, message_id="m1", seq=1, message=Message.assistant("first last")))
    display(TURN_END)
    display.finish()
    await asyncio.sleep(0)  # the flush queued at the reply's end was cancelled by finish()
    end = published.items[before:]
    assert [(update, "first last" in bundle.get("text/plain", "")) for bundle, _, update in end] == [
        (True, False), (False, True)]  # the live output emptied; the final output, with every word


def _result_with(*calls: ToolCallFinished) -> Any:
    from synapse_nb.agent.result import TurnResult
    from synapse_nb.notebook.turns.result import SynapseResult

    turn = TurnResult(text="", messages=(), tool_calls=calls, session_id=S, turn_id=T, usage=Usage(), iterations=1,
                      status="finished", duration_ms=1.0, model="m")
    return SynapseResult(turn, session="main")


def _done(name: str, server: str | None, result: ToolResult | None = None, error: str | None = None,
          ms: float = 12.3456) -> ToolCallFinished:
    return ToolCallFinished(session_id=S, call=_call(name), server=server, tool=name, approval="auto",
                            started_at=NOW, duration_ms=ms, result=result, error=error)


def test_tool_calls_round_durations_name_local_tools_python_and_give_result_frames() -> None:
    table = ToolResult((ContentBlock("text", text="2 rows"),),
                       structured_content={"columns": ["name", "n"], "rows": [["a", 1], ["b", 2]]})
    structured = ToolResult((ContentBlock("text", text="{}"),), structured_content={"table": "orders", "rows": 300})
    markdown = ToolResult((ContentBlock("text", text="| x |\n|---|\n| 1 |"),))
    result = _result_with(
        _done("demo__query", "demo", table), _done("add", None, ToolResult((ContentBlock("text", text="5"),))),
        _done("demo__describe", "demo", structured), _done("nope", None, error="UnknownToolError: no tool"),
        _done("demo__md", "demo", markdown),
    )
    calls = result.tool_calls
    assert calls.server.fillna("-").tolist() == ["demo", "python", "demo", "-", "demo"]
    assert calls.duration_ms.tolist() == [12.3] * 5
    frame = calls.result_df(0)
    assert frame.columns.tolist() == ["name", "n"]
    assert frame.values.tolist() == [["a", 1], ["b", 2]]
    assert calls.result_df(2).to_dict("records") == [{"table": "orders", "rows": 300}]
    assert calls.result_df(-1).to_dict("records") == [{"x": "1"}]
    with pytest.raises(ValueError, match="no table and no structured content"):
        calls.result_df(1)
    with pytest.raises(ValueError, match="has no result"):
        calls.result_df(3)
    with pytest.raises(IndexError):
        calls.result_df(5)


def test_streamed_arguments_are_throttled_after_their_first_piece(published: Any) -> None:
    now = [0.0]
    display = TurnDisplay(TurnView(model="m"), LiveOutput(publish=published), interval=0.1, clock=lambda: now[0])
    display.start()
    display(ToolCallArgumentsDelta(session_id=S, turn_id=T, index=0, call_id="c1", name="demo__query",
                                   arguments_delta='{"sql"'))
    assert "demo__query" in published.items[-1][0]["text/plain"]  # the block shows at once
    count = len(published.items)
    for piece in (': "SE', "LECT", ' 1"}'):  # some servers repeat the id on every piece: still throttled
        display(ToolCallArgumentsDelta(session_id=S, turn_id=T, index=0, call_id="c1", arguments_delta=piece))
    assert len(published.items) == count
    now[0] = 1.0
    display(ToolCallArgumentsDelta(session_id=S, turn_id=T, index=0, arguments_delta=""))
    assert 'demo__query(sql="SELECT 1")' in published.items[-1][0]["text/plain"]  # whole: shown as the call


def test_the_display_and_widget_sources_hold_no_emoji() -> None:
    """🔧 ⏳ ⏹ render as empty boxes where no emoji font is installed (Docker images, JupyterHub)."""
    from pathlib import Path

    import synapse_nb.notebook as nb

    root = Path(nb.__file__).parent
    files = [root / n for n in ("turns/display.py", "turns/view.py", "turns/render.py", "questions/approval_card.py")]
    files += sorted((root / "widgets").glob("*.py")) + sorted((root / "apps").glob("*.py"))
    for path in files:
        emoji = {c for c in path.read_text() if ord(c) >= 0x1F000 or 0x2300 <= ord(c) <= 0x23FF}
        assert not emoji, f"{path.name}: {emoji}"


def test_a_long_answer_with_an_open_code_fence_still_closes_its_scroll_box() -> None:
    view = TurnView(model="m")
    answer = "\n".join(f"line {i}" for i in range(70)) + "\n```python\nprint(1)"
    view.apply(TextDelta(session_id=S, turn_id=T, text=answer))
    view.apply(TurnFinished(session_id=S, turn_id=T, text=answer, iterations=1, usage=Usage(), duration_ms=5))
    md = render(view)["text/markdown"]
    assert "print(1)\n```\n\n</div>" in md


def test_a_turn_whose_tool_failed_does_not_end_with_a_tick() -> None:
    """The answer was written around a failed call: the footer says so (amber), not `✓` under a `✗` tool."""
    view = TurnView(model="m", session="main")
    ok, broken = _call("demo__query"), _call("demo__crash")
    for call, error in ((ok, None), (broken, "ServerCrashedError: gone")):
        view.apply(ToolCallStarted(session_id=S, call=call, server="demo", tool=call.name, approval="auto"))
        view.apply(ToolCallFinished(session_id=S, call=call, server="demo", tool=call.name, approval="auto",
                                    started_at=NOW, duration_ms=3, error=error,
                                    result=None if error else ToolResult((ContentBlock("text", text="1"),))))
    view.apply(TurnFinished(session_id=S, turn_id=T, text="Could not check.", iterations=2, usage=Usage(),
                            duration_ms=30))
    assert view.footer.startswith("✗ finished, 1 of 2 tool calls failed m · 2 iterations")
    assert not view.footer.startswith("✓")
    md = render(view)["text/markdown"]
    assert 'snb-footer snb-tool_failed" style="color:var(--snb-warn,#9a6700)' in md
    assert render(view)["text/plain"].endswith("-- " + view.footer)
    view.apply(TurnFailed(session_id=S, turn_id=T, error="boom", error_type="StreamError", iterations=2,
                          usage=Usage(), duration_ms=40))
    assert view.footer.startswith("✗ failed m · 1 of 2 tool calls failed · 2 iterations")


def test_a_call_waiting_for_approval_says_so_on_its_line_and_the_activity_line() -> None:
    view = TurnView(model="m")
    view.apply(ToolCallArgumentsDelta(session_id=S, turn_id=T, index=0, call_id="c1", name="demo__drop",
                                      arguments_delta='{"table": "t"}'))
    view.apply(LlmCallFinished(session_id=S, llm_call_id="l1", provider="scripted", model="m", started_at=NOW,
                               duration_ms=5, usage=Usage(1, 1)))
    assert "waiting to run" in render(view)["text/plain"]
    view.ask_approval("demo__drop")
    text = render(view)["text/plain"]
    assert '[tool] demo__drop(table="t") waiting for your approval' in text
    assert "waiting for your approval of demo__drop · " in text
    assert "about to run" not in text
    view.approval_answered()
    assert "waiting for your approval" not in render(view)["text/plain"]


def test_a_cut_never_freezes_a_call_still_running_above_it(published: Any) -> None:
    """Two calls of one reply: the first runs while the second is asked about (an approval card shown at the
    cut). The running call is not made final in its running state above the card: the cut moves above it, and
    the final output below the card shows it finished."""
    display = TurnDisplay(TurnView(model="m"), LiveOutput(publish=published), interval=10.0)
    display.start()
    display(TextDelta(session_id=S, turn_id=T, text="Two things.\n"))
    query, drop = _call("demo__query"), _call("demo__drop_table")
    for call, approval in ((query, "auto"), (drop, "ask")):
        display(ToolCallStarted(session_id=S, call=call, server="demo", tool=call.name[6:], approval=approval))
    display.cut(2, lambda: published({"text/plain": "APPROVAL CARD"}, "card", False))
    display(ToolCallFinished(session_id=S, call=query, server="demo", tool="query", approval="auto",
                             started_at=NOW, duration_ms=3, result=ToolResult((ContentBlock("text", text="ok"),))))
    display(ToolCallFinished(session_id=S, call=drop, server="demo", tool="drop_table", approval="ask",
                             started_at=NOW, duration_ms=3, result=ToolResult((ContentBlock("text", text="ok"),))))
    display(TurnFinished(session_id=S, turn_id=T, text="", iterations=1, usage=Usage(1, 1), duration_ms=9))
    display.finish()
    finals = [b.get("text/plain", "") for b in published.final]
    card = finals.index("APPROVAL CARD")
    above, below = "\n".join(finals[:card]), "\n".join(finals[card + 1:])
    assert "Two things." in above
    assert "demo__query" not in above  # not frozen as running above the card
    assert "demo__query" in below
    assert "demo__drop_table" in below


def test_a_long_argument_is_capped_in_the_call_block_and_kept_whole_on_the_call() -> None:
    view = TurnView(model="m")
    content = "x" * 60_000
    call = _call("fs__write_file", path="/tmp/big.txt", content=content)
    view.apply(ToolCallStarted(session_id=S, call=call, server="fs", tool="write_file", approval="auto"))
    view.apply(ToolCallFinished(session_id=S, call=call, server="fs", tool="write_file", approval="auto",
                                started_at=NOW, duration_ms=3, result=ToolResult((ContentBlock("text", text="ok"),))))
    markdown = render(view)["text/markdown"]
    assert len(markdown) < 10_000
    shown = "path: /tmp/big.txt&#10;content: " + "x" * (4_000 - len("path: /tmp/big.txt\ncontent: "))
    assert f"{shown}&#10;… 56,028 more characters in _synapse.tool_calls.arguments" in markdown
    assert view.parts[0].arguments["content"] == content  # the view (and so the history) keeps it whole


def test_dollar_signs_in_an_answer_are_published_as_text_not_math() -> None:
    view = TurnView(model="m")
    answer = "Revenue was $12,400 in Q1 and $15,100 in Q2.\n\nIn code: `echo $HOME`\n\n```sh\nexport A=$B\n```\n"
    view.apply(TextDelta(session_id=S, turn_id=T, text=answer))
    view.apply(TurnFinished(session_id=S, turn_id=T, text=answer, iterations=1, usage=Usage(30, 13), duration_ms=5))
    published = render(view)["text/markdown"]
    dollar = "<span>&#36;</span>"
    assert f"Revenue was {dollar}12,400 in Q1 and {dollar}15,100 in Q2." in published
    assert "`echo $HOME`" in published  # code keeps its dollar signs as written
    assert "export A=$B" in published
    assert render(view)["text/plain"].startswith("Revenue was $12,400 in Q1 and $15,100 in Q2.")


def test_a_figure_shows_under_the_closed_tool_block_not_inside_it() -> None:
    chart = ToolResult((ContentBlock("text", text="drew a chart"), ContentBlock("image", data="iVBORw0KGgo=",
                                                                              mime_type="image/png")))
    block = _finished_call(TurnView(model="m"), chart, name="kernel__run_python")
    details_end = block.index("</details>")
    assert "<details class=\"snb-turn-tool\"><summary>" in block  # the block stays closed
    assert block.index('<img src="data:image/png;base64,iVBORw0KGgo="/>') > details_end  # the figure below it
    assert block.count("<img") == 1
