"""How `%mcp call` and `%mcp read` show what a server sent (issue 22, section 2): the server's progress while a
whole-cell call runs, results as the %%synapse tool block shows them (tables with raw, `6.0 s`, capped text
with "show all", pretty one-line JSON), and resources as what they are (an MCP Apps View as one line, a blob by
MIME type and size). In process: the test server runs in this process (`connect_in_process`)."""

from __future__ import annotations

import asyncio
import base64
import json
import re
from typing import Any

import pytest

from synapse_nb.notebook.commands.mcp_call import CallOutput
from synapse_nb.notebook.commands.mcp_read import ReadOutput
from synapse_nb.notebook.output.calls import PLAIN_CHARS, CallProgress
from synapse_nb.notebook.turns import display
from synapse_nb.types import ContentBlock, ToolResult
from tests.support import tools_server

APP = "text/html;profile=mcp-app"
VIEW_URI = "ui://customer-segmentation/mcp-app.html"


def size_of(bundle: dict[str, Any]) -> int:
    return sum(len(v) for v in bundle.values() if isinstance(v, str))


def test_a_whole_cell_call_shows_the_servers_progress_while_it_runs(ip: Any) -> None:
    state = ip.state
    # a call that never shows progress (so is never released) fails after 15 s without any, not 120 s
    state.runner.run(state.hub.connect_in_process("t", tools_server.build_server(), timeout=15), timeout=30)
    publish = state.port.publish
    released: list[asyncio.Task[Any]] = []

    def watch(bundle: dict[str, Any], display_id: str | None, update: bool) -> None:
        publish(bundle, display_id, update)
        if "indexing 3 of 3" in bundle.get("text/plain", "") and not released:  # the call waits for this
            released.append(asyncio.get_running_loop().create_task(state.hub.call("t__fire", {"signal": "release"})))

    state.port.publish = watch
    out = ip.line("mcp", "call t.progress_held steps=3 message=indexing")
    assert out.text == "done after 3 steps"
    live = [b for b, _, update in ip.published.items if update and "snb-progress" in b.get("text/markdown", "")]
    values = [re.search(r'value="([\d.]+)"', b["text/markdown"]).group(1) for b in live]  # type: ignore[union-attr]
    # each report once, in order; the line also ticks (every TICK) until the release arrives, repeating the last
    # (the first fire call waits for jsonschema's import: about 2 s here, when no test before imported it)
    assert [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]] == ["0.333", "0.667", "1.000"]
    first = live[0]
    assert first["text/plain"].startswith("calling t.progress_held … ")
    assert first["text/plain"].endswith("\n[#######-------------] 33% indexing 1 of 3")
    assert "33% indexing 1 of 3" in first["text/markdown"]
    assert not any("calling" in b.get("text/plain", "") for b in ip.published.final)  # the live output is gone
    assert released
    assert released[0].done()


def test_a_call_that_ends_before_its_line_would_show_sends_nothing_but_its_result(
    ip: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = ip.state
    state.runner.run(state.hub.connect_in_process("q", tools_server.build_server(), timeout=15), timeout=30)
    monkeypatch.setattr(display, "SHOW_AFTER", 30.0)  # whatever the machine's load: the call ends long before
    before = len(ip.published.items)
    out = ip.line("mcp", "call q.echo text=quick")
    assert out.text == "quick"
    # no live line at all: a slow call's line is cleared away at the command's end (kernel/cell_outputs.py), so
    # the saved cell is the same either way, and a quick one spares two messages
    assert ip.published.items[before:] == []


def test_progress_without_a_total_is_an_amount_and_a_report_without_a_message_keeps_the_last() -> None:
    progress = CallProgress("t.index")
    progress.report(3, None, "files")
    progress.report(7, None, None)
    bundle = progress.bundle("2.0 s")
    assert bundle["text/plain"] == "calling t.index … 2.0 s\n7 files"
    assert '<progress style="width:240px;vertical-align:middle"></progress>' in bundle["text/markdown"]


def rows(n: int) -> list[dict[str, Any]]:
    return [{"order_id": 1000 + i, "status": "delivered", "note": f"row {i}"} for i in range(n)]


def test_a_tabular_result_is_a_capped_table_with_raw_and_seconds() -> None:
    text = json.dumps(rows(250))
    result = ToolResult((ContentBlock("text", text=text),), duration_ms=6022.4)
    out = CallOutput("demo.query", {"sql": "SELECT *"}, result)
    bundle = out._repr_mimebundle_()
    html = bundle["text/html"]
    assert "snb-turn-tool" in html
    assert "<details class=\"snb-turn-tool\" open>" in html
    assert "6.0 s" in html
    assert "6022" not in html
    assert "250 rows · 3 columns" in html
    assert len(re.findall(r"<tr>", html)) == 1 + 200  # the head and the first 200 rows
    assert "50 more rows in .df of this cell&#x27;s value (_.df)" in html
    assert "show all (200 rows)" in html
    assert '<details class="snb-raw"><summary>raw</summary>' in html
    plain = bundle["text/plain"]
    assert plain.startswith("demo.query → ok (6.0 s)\n250 rows · 3 columns (a DataFrame: .df)\n[\n  {")
    assert len(plain) < PLAIN_CHARS + 200
    assert plain.endswith("characters) in .text of this cell's value (_.text)")
    assert repr(out) == plain
    assert len(out.df) == 250
    assert out.text == text


def test_one_long_line_of_json_is_pretty_and_capped() -> None:
    value = {"customers": rows(1500), "segments": [{"name": "SMB", "n": 700}, {"name": "Enterprise", "n": 800}]}
    text = json.dumps(value, separators=(",", ":"))
    assert "\n" not in text
    assert len(text) > 60_000
    out = CallOutput("seg.get-customer-data", {}, ToolResult((ContentBlock("text", text=text),), duration_ms=131))
    bundle = out._repr_mimebundle_()
    html = bundle["text/html"]
    assert "131 ms" in html
    assert "{&#10;  &quot;customers&quot;: [&#10;    {&#10;" in html  # indented
    assert re.search(r"show all \([\d,]+ lines\)", html)
    assert re.search(r"… [\d,]+ more characters in \.text of this cell&#x27;s value", html)
    assert size_of(bundle) < 40_000
    assert out.text == text


def test_structured_content_beside_a_different_text_is_one_click_away() -> None:
    result = ToolResult((ContentBlock("text", text="2 tables"),), structured_content={"tables": ["a", "b"]})
    html = CallOutput("demo.list_tables", {}, result)._repr_mimebundle_()["text/html"]
    assert "<summary" in html
    assert "structured content</summary>" in html
    same = ToolResult((ContentBlock("text", text='{"tables": ["a", "b"]}'),), structured_content={"tables": ["a", "b"]})
    assert "structured content</summary>" not in CallOutput("x.y", {}, same)._repr_mimebundle_()["text/html"]


def test_an_error_result_is_red_and_says_error() -> None:
    out = CallOutput("demo.fail", {"message": "broken"}, ToolResult.error("broken", duration_ms=3))
    assert repr(out) == "demo.fail → error (3 ms)\nbroken"
    assert "snb-call-error" in out._repr_mimebundle_()["text/html"]


def test_an_mcp_app_view_resource_is_one_line_not_its_html() -> None:
    page = "<!doctype html><script>" + "x" * 4_300_000 + "</script>"
    view = ContentBlock("resource", text=page, uri=VIEW_URI, mime_type=APP)
    out = ReadOutput("seg", VIEW_URI, (view,), used_by=("seg.get-customer-data",))
    bundle = out._repr_mimebundle_()
    assert size_of(bundle) < 5_000
    assert "xxxx" not in bundle["text/html"]
    assert "xxxx" not in bundle["text/plain"]
    assert bundle["text/plain"] == (
        f"seg {VIEW_URI}\n{APP} · 4.1 MB\n"
        "an MCP App View (4.1 MB of HTML, in .text): seg.get-customer-data shows it: %mcp call seg.get-customer-data"
    )
    assert "<code>%mcp call seg.get-customer-data</code>" in bundle["text/html"]
    assert out.text == page
    alone = ReadOutput("seg", VIEW_URI, (view,))._repr_mimebundle_()["text/plain"]
    assert alone.endswith("no tool of seg names it as its View")
    as_blob = ContentBlock("resource", data=base64.b64encode(page.encode()).decode(), uri=VIEW_URI, mime_type=APP)
    assert "an MCP App View (4.1 MB of HTML" in repr(ReadOutput("seg", VIEW_URI, (as_blob,)))


def test_a_blob_shows_its_type_size_and_for_text_types_its_decoded_text() -> None:
    payload = json.dumps({"rows": rows(3)}).encode()
    json_blob = ContentBlock("resource", data=base64.b64encode(payload).decode(), uri="demo://data.json",
                             mime_type="application/json")
    binary = bytes(range(256)) * 8
    raw_blob = ContentBlock("resource", data=base64.b64encode(binary).decode(), uri="demo://dump.bin",
                            mime_type="application/octet-stream")
    out = ReadOutput("demo", "demo://bundle", (json_blob, raw_blob))
    plain = repr(out)
    assert plain.splitlines()[:3] == ["demo demo://bundle", f"demo://data.json · application/json · {len(payload)} B",
                                      "{"]  # decoded, and indented: it was one line of JSON
    assert "demo://dump.bin · application/octet-stream · 2.0 KB\nbinary data, not shown (its bytes: .blobs)" in plain
    html = out._repr_mimebundle_()["text/html"]
    assert "&quot;order_id&quot;: 1000" in html
    assert "application/octet-stream · 2.0 KB" in html
    assert out.blobs == (payload, binary)
    assert out.text == payload.decode() + "\n[application/octet-stream, 2.0 KB]"


def test_a_long_text_resource_is_capped_with_show_all() -> None:
    text = "\n".join(f"line {i}" for i in range(50_000))
    log = ContentBlock("resource", text=text, uri="demo://log", mime_type="text/plain")
    out = ReadOutput("demo", "demo://log", (log,))
    bundle = out._repr_mimebundle_()
    assert size_of(bundle) < 40_000  # the first 20,000 characters, and the style
    assert "show all (" in bundle["text/html"]
    assert "more lines" in bundle["text/plain"]
    assert out.text == text


def test_capped_plain_reads_only_the_start_of_a_long_text() -> None:
    """The cut is the first lines (and characters) of the whole text, also where lines end in \\r\\n."""
    from synapse_nb.notebook.output.calls import CALL_REST, PLAIN_LINES, capped_plain

    texts = ["short", "a\r\nb\r\n" * 5_000, "x" * 50_000, "line\n" * (PLAIN_LINES - 1) + "y" * 50_000,
             ("\r\n" * (PLAIN_LINES + 3)) + "tail", "w" * (PLAIN_CHARS - 1) + "\r\n" + "z" * 10]
    for text in texts:
        full = "\n".join(text.splitlines()[:PLAIN_LINES])[:PLAIN_CHARS]
        capped = capped_plain(text, CALL_REST)
        assert capped == text if len(full) >= len(text) else capped.startswith(full + "\n… ")
