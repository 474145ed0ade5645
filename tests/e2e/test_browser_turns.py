"""`%%synapse` turns in JupyterLab in Chromium, against tests/support/llm_server.py (a local OpenAI-compatible server)
and the demo MCP server (issue 12).

One JupyterLab for the module, one notebook driven cell by cell. While work runs: tool-call arguments show
as they stream, then `running demo__progress · N s` ticks with a progress bar carrying the server's
message, and JupyterLab's interrupt ends the cell with one "cancelled" line; `%mcp call` ticks "calling
demo.sleep … N s" and is interrupted the same way. The tool-call block: a bordered, tinted container
with a gap before the answer, a table with a "raw" toggle, a big result and a long answer capped with
"show all", colours (cancelled neutral, denied grey, only errors red), no emoji. The approval card above
the input box, answered in the browser. The trace counts only real errors and groups manual calls.
`%synapse QUESTION?`, `--format code` and `CallOutput.df`. Every state is screenshotted into
tests/e2e/artifacts/ and asserted from the DOM.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser_lab import (
    ARTIFACTS,
    DEMO,
    Lab,
    NotebookPage,
    css,
    emoji_in,
    error_lines,
    failure_shot,
    model_env,
    rgb,
    start_lab,
    write_notebook,
)
from tests.support.llm_server import LlmServer, call, text, tool_calls

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.browser]

PROGRESS_ARGS = {"steps": 400, "seconds": 0.25}
LONG_ANSWER = "Here is what I found:\n\n" + "\n".join(f"- finding number {i}" for i in range(1, 71))
CODE_ANSWER = (
    "The query:\n\n```sql\nSELECT customer_id, COUNT(*) FROM orders GROUP BY customer_id\n```\n\n"
    "The same in Python:\n\n```python\norders_per_customer = {'c1': 3}\nprint('orders per customer')\n```\n"
)
CELLS = [
    "import sys",                                                       # 0
    "%load_ext synapse_nb",                                             # 1
    f"%mcp connect demo {DEMO}",                                     # 2
    "%%synapse\nRun the long job.",                                     # 3 progress, interrupted
    "%mcp call demo.sleep seconds=120",                                 # 4 interrupted
    "%%synapse\nShow me everything.",                                   # 5 table, big, error, denied
    "%mcp call demo.echo text=by-hand",                                 # 6
    "%synapse inspect",                                                 # 7 the trace
    "out = %mcp call demo.query sql=\"SELECT category, COUNT(*) AS n FROM products GROUP BY category\"\nout.df",
    "%synapse What tables are there?",                                  # 9
    "%%synapse --background\nA quick one in the background.",           # 10 run controls
    "(await _synapse).text",                                            # 11
    "%%synapse --format code\nCount the orders per customer.",          # 12 inserts cell 13
    "%mcp inspect",                                                     # 13 (14 once 12 inserted its cell)
    "%synapse How did revenue do?",                                     # 14 (15) money, not math
    "from IPython.display import Markdown\nMarkdown('math still works: $x^2$')",  # 15 (16)
]
MONEY = "Revenue was $12,400 in Q1 and $15,100 in Q2."
INSPECTOR, ANSWER, MATH = 14, 15, 16  # the cells' indexes once cell 12 inserted its code cell
NEUTRAL, GREY, RED = rgb("#57606a"), rgb("#6e7781"), rgb("#cf222e")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, llm: LlmServer) -> Iterator[Lab]:
    with start_lab(tmp_path_factory.mktemp("lab-turns"), model_env(llm)) as lab:
        yield lab


@pytest.mark.timeout(480)  # 16 cells driven, saved, reopened in JupyterLab and Notebook 7: minutes on a busy machine
def test_turns_while_running_finished_and_traced(lab: Lab, browser: Any, llm: LlmServer) -> None:
    name = write_notebook(lab.root / "turns.ipynb", CELLS)
    nb = NotebookPage.open(browser, lab, name, height=2400)  # tall: the expanded tool blocks fit a screenshot
    with failure_shot(nb, "turns"):
        for i in range(3):
            nb.run(i)
        _while_work_runs(nb, llm)
        _the_tool_call_block_and_approval(nb, llm)
        _trace(nb)
        _small_things(nb, llm)
        text = nb.page.locator(".jp-Notebook").inner_text()
        assert emoji_in(text) == [], emoji_in(text)
        _saved_snapshots(nb, lab, browser)


def _while_work_runs(nb: NotebookPage, llm: LlmServer) -> None:
    expect, page = nb.expect, nb.page
    # the arguments stream slowly (8 pieces, 0.3 s apart): they show in the tool block as they arrive
    llm.queue(tool_calls(call("demo__progress", PROGRESS_ARGS), pieces=8).paced(0.3))
    cell = nb.run(3, wait=False)
    streaming = cell.locator(".snb-call-streaming")
    expect(streaming.locator("code")).to_contain_text('demo__progress({"', timeout=30_000)
    seen = page.wait_for_function(
        """(cell) => {
            const code = cell.querySelector('.snb-call-streaming code');
            window.__streamed = window.__streamed || [];
            if (code && !window.__streamed.includes(code.textContent)) window.__streamed.push(code.textContent);
            return window.__streamed.length >= 2 ? window.__streamed : false;
        }""",
        arg=cell.element_handle(), timeout=30_000,
    ).json_value()
    full = json.dumps(PROGRESS_ARGS)
    assert all(s.startswith("demo__progress(") for s in seen), seen
    assert any(len(s) < len(f"demo__progress({full})") for s in seen), seen  # a part, before the whole
    expect(streaming.locator(".snb-outcome")).to_have_text(re.compile("receiving arguments|waiting to run"))
    nb.shot("turn-arguments-streaming", cell)

    # running: the elapsed time ticks (the text changes, no sleeps), a progress bar with the server's message
    activity = cell.locator(".snb-activity")
    expect(activity).to_have_text(re.compile(r"running demo__progress · \d+(\.\d)? m?s"), timeout=30_000)
    first = activity.inner_text()
    expect(activity).not_to_have_text(first, timeout=10_000)
    expect(activity).to_have_text(re.compile(r"running demo__progress · \d+(\.\d)? m?s"))
    block = cell.locator(".snb-call-running")
    expect(block.locator("code")).to_have_text("demo__progress(steps=400, seconds=0.25)")
    expect(block.locator(".snb-progress progress")).to_have_count(1)
    expect(block.locator(".snb-progress")).to_contain_text(re.compile(r"\d+% step \d+ of 400"), timeout=15_000)
    message = block.locator(".snb-progress").inner_text()
    expect(block.locator(".snb-progress")).not_to_have_text(message, timeout=10_000)  # it moves on
    assert "thinking" not in cell.inner_text()
    nb.shot("turn-running-with-progress", cell)

    # JupyterLab's interrupt: one line, no traceback; the call shows cancelled, in a neutral colour
    nb.interrupt()
    nb.wait_done(3)
    assert error_lines(cell) == [
        "KeyboardInterrupt: the turn was cancelled; servers stay connected and the transcript so far is kept "
        "(see _synapse)"
    ], error_lines(cell)
    cancelled = cell.locator(".snb-call-cancelled .snb-outcome")
    expect(cancelled).to_have_text(re.compile(r"^■ cancelled after \d"))
    assert css(cancelled, "color") == NEUTRAL
    nb.shot("turn-interrupted", cell)

    # %mcp call ticks "calling demo.sleep … N s"; an interrupt gives the same one line
    cell = nb.run(4, wait=False)
    out = nb.output(4)
    expect(out).to_have_text(re.compile(r"calling demo\.sleep … \d+(\.\d)? m?s"), timeout=30_000)
    first = out.inner_text()
    expect(out).not_to_have_text(first, timeout=10_000)
    nb.shot("mcp-call-ticking", cell)
    nb.interrupt()
    nb.wait_done(4)
    assert error_lines(cell) == [
        "KeyboardInterrupt: the call of demo.sleep was cancelled; the server stays connected"
    ], error_lines(cell)
    expect(out).not_to_contain_text("calling demo.sleep")
    nb.shot("mcp-call-interrupted", cell)


def _the_tool_call_block_and_approval(nb: NotebookPage, llm: LlmServer) -> None:
    expect, page = nb.expect, nb.page
    llm.queue(
        tool_calls(
            call("demo__query", {"sql": "SELECT product_id, name, unit_price FROM products LIMIT 5"}),
            call("demo__large", {"kb": 4}),
            call("demo__fail", {"message": "the disk is on fire"}),
            call("demo__drop_table", {"table": "orders"}),
        ),
        text(LONG_ANSWER),
    )
    cell = nb.run(5, wait=False)
    # the approval question: a card above the input box, with tool, server, arguments, badge and answers
    card = cell.locator(".snb-approval-card")
    expect(card).to_be_visible(timeout=30_000)
    expect(card).to_contain_text("Approve this tool call? demo__drop_table on server demo")
    expect(card.locator(".snb-badge-destructive")).to_have_text("destructive")
    expect(card.locator("pre")).to_contain_text('"table": "orders"')
    for line in ("y yes: run this call once", "n no: do not run it; the model is told it was denied",
                 "a always: run it, and allow this tool without asking for the rest of the session"):
        expect(card.locator("li", has_text=line[:5])).to_contain_text(line)
    box = cell.locator("input.jp-Stdin-input")
    expect(box).to_be_visible()
    expect(cell.locator(".jp-Stdin")).to_contain_text("allow demo__drop_table? [y/n/a]")
    card_box, input_box = card.bounding_box(), box.bounding_box()
    assert card_box is not None
    assert input_box is not None
    assert card_box["y"] + card_box["height"] <= input_box["y"], (card_box, input_box)
    nb.shot("approval-card", cell)
    nb.answer(5, "n")
    nb.wait_done(5)
    expect(cell.locator(".snb-answered")).to_contain_text("demo__drop_table denied")
    assert error_lines(cell) == []

    blocks = cell.locator("div.snb-turn-tool")
    expect(blocks).to_have_count(4)
    for summary in cell.locator("details.snb-turn-tool > summary").all():
        summary.click()
    # expanded: a bordered, tinted container, and a clear gap before the answer
    body = cell.locator(".snb-tool-body").first
    assert css(body, "border-top-width") == "1px"
    assert css(body, "border-left-width") == "3px"
    assert css(body, "background-color") == "rgba(175, 184, 193, 0.12)"
    last_block = blocks.last.bounding_box()
    answer = cell.locator(".jp-RenderedMarkdown p", has_text="Here is what I found").bounding_box()
    assert last_block is not None
    assert answer is not None
    assert answer["y"] - (last_block["y"] + last_block["height"]) >= 10, (last_block, answer)

    # a tabular result is a table, with its raw text one click away
    query = cell.locator("div.snb-call-ok", has_text="demo__query")
    expect(query.locator("table.snb-tbl thead th")).to_have_text(["product_id", "name", "unit_price"])
    expect(query.locator("table.snb-tbl tbody tr")).to_have_count(5)
    raw = query.locator("details.snb-raw")
    expect(raw.locator("pre")).to_be_hidden()
    raw.locator("summary").click()
    expect(raw.locator("pre")).to_contain_text("| product_id | name | unit_price |")
    nb.shot("tool-block-table-and-raw", query)

    # a big result: capped in a scroll box, "show all" lifts the cap
    large = cell.locator("div.snb-call-ok", has_text="demo__large")
    capped = large.locator("pre.snb-cap")
    assert css(capped, "overflow-y") == "auto"
    assert css(capped, "max-height") != "none"
    expect(large.locator("details.snb-all > summary")).to_have_text(re.compile(r"show all \(\d+ lines\)"))
    nb.shot("tool-block-big-result-capped", large)
    large.locator("details.snb-all > summary").click()
    assert css(capped, "max-height") == "none"
    large.locator("details.snb-all > summary").click()  # capped again, for the picture of the whole turn

    # only a real error is red; denied is grey; the cancelled call above is neutral
    failed = cell.locator("div.snb-call-error", has_text="demo__fail")
    assert css(failed.locator(".snb-outcome"), "color") == RED
    expect(failed).to_contain_text("the disk is on fire")
    denied = cell.locator("div.snb-call-denied", has_text="demo__drop_table")
    expect(denied.locator(".snb-outcome")).to_have_text("⊘ denied")
    assert css(denied.locator(".snb-outcome"), "color") == GREY
    assert css(query.locator(".snb-outcome"), "color") != RED
    # the long answer: capped with "show all"
    expect(cell.locator(".snb-answer-cap")).to_contain_text("finding number 1")
    expect(cell.locator("details.snb-all > summary").last).to_contain_text("show all (72 lines)")
    page.keyboard.press("Escape")
    nb.shot("tool-blocks-expanded", cell)


def _trace(nb: NotebookPage) -> None:
    expect = nb.expect
    nb.run(6)
    expect(nb.output(6)).to_contain_text("by-hand")
    nb.run(7)
    trace = nb.output(7).locator(".snb-trace.jupyter-widgets")
    expect(trace).to_be_visible(timeout=30_000)
    # one real error (demo__fail): the cancelled calls and the denied one are not counted as errors
    expect(trace.locator(".snb-title")).to_contain_text("1 error")
    expect(trace.locator(".snb-title")).not_to_contain_text("errors")
    manual = trace.locator(".snb-group-manual")
    expect(manual).to_have_text("Manual calls")
    spans = trace.locator("details.snb-span-tool")
    expect(spans.filter(has_text="demo.echo")).to_have_count(1)
    expect(spans.filter(has_text="demo.sleep").locator(".snb-badge")).to_have_text("cancelled")
    expect(spans.filter(has_text="demo.drop_table").locator(".snb-badge")).to_have_text("denied")
    expect(spans.filter(has_text="demo.fail").locator(".snb-badge")).to_have_text("error")
    bars = {tool: css(spans.filter(has_text=tool).locator(".snb-bar"), "background-color")
            for tool in ("demo.fail", "demo.sleep", "demo.drop_table", "demo.echo")}
    assert bars == {"demo.fail": RED, "demo.sleep": GREY, "demo.drop_table": rgb("#afb8c1"),
                    "demo.echo": rgb("#0969da")}, bars  # only the real error is red
    # the manual calls come after the turns, in their own group, not under the turn before them
    order = trace.locator(".snb-turn").all_inner_texts()
    assert [o.split(" ", 2)[:2] for o in order[:2]] == [["Turn", "1"], ["Turn", "2"]], order
    assert order[-1] == "Manual calls", order
    nb.shot("trace", trace)


def _small_things(nb: NotebookPage, llm: LlmServer) -> None:
    expect = nb.expect
    # CallOutput.df: the tool's table as a DataFrame
    nb.run(8)
    frame = nb.output(8).locator("table.dataframe")
    expect(frame.locator("thead th")).to_contain_text(["category", "n"])
    expect(frame.locator("tbody tr")).to_have_count(5)
    nb.shot("call-output-df", nb.cell(8))

    # `%synapse QUESTION?` asks the agent (not IPython's `?` help)
    llm.queue(text("There are three tables: products, customers and orders."))
    nb.run(9)
    expect(nb.output(9)).to_contain_text("There are three tables: products, customers and orders.")
    expect(nb.output(9)).not_to_contain_text("not found")
    nb.shot("synapse-question", nb.cell(9))

    # a background run: its controls (a widget) end showing how the run ended
    llm.queue(text("done in the background"))
    nb.run(10)
    nb.run(11)
    expect(nb.output(11)).to_contain_text("'done in the background'")
    controls = nb.output(10).locator(".snb-run-controls.jupyter-widgets")
    expect(controls.locator(".snb-run-status")).to_contain_text("finished", timeout=30_000)
    expect(controls.get_by_role("button", name="Stop")).to_be_hidden()  # nothing left to stop
    nb.shot("background-run-controls", nb.cell(10))

    # --format code: the first Python block goes into a new cell below (never the SQL), and it says so
    llm.queue(text(CODE_ANSWER))
    nb.run(12)
    expect(nb.output(12)).to_contain_text("inserted a cell below with the answer's Python code")
    inserted = nb.cell(13).locator(".jp-InputArea-editor")
    expect(inserted).to_contain_text("orders_per_customer = {'c1': 3}")
    expect(inserted).not_to_contain_text("SELECT")
    nb.shot("format-code-inserted", nb.page.locator(".jp-Notebook"))

    # the inspector, live: its view shows, the snapshot output above it is hidden (issue 38, item 11)
    nb.run(INSPECTOR)
    expect(nb.output(INSPECTOR).locator(".snb-inspector.jupyter-widgets")).to_be_visible(timeout=30_000)
    expect(nb.output(INSPECTOR).locator(".snb-snapshot")).to_be_hidden()

    # money is text, not math (issue 38, item 10): no MathJax element, both amounts with their spaces
    llm.queue(text(MONEY))
    nb.run(ANSWER)
    _math_settled(nb)
    _money_as_text(nb)
    nb.shot("money-as-text", nb.cell(ANSWER))


def _math_settled(nb: NotebookPage) -> None:
    """Run the cell below the answer, whose Markdown has real math, and wait until MathJax typeset it: MathJax
    typesets outputs in turn, so the answer above has been typeset (or left alone) by then."""
    nb.run(MATH)
    nb.expect(nb.output(MATH).locator("mjx-container")).to_have_count(1, timeout=30_000)


def _money_as_text(nb: NotebookPage) -> None:
    answer = nb.output(ANSWER)
    nb.expect(answer).to_contain_text(MONEY)
    nb.expect(answer.locator("mjx-container")).to_have_count(0)


def _saved_snapshots(nb: NotebookPage, lab: Lab, browser: Any) -> None:
    """Saved, the trace and the run controls carry a static snapshot beside the widget view: what a page
    without the widget manager (GitHub, nbviewer) renders, never the widget's repr."""
    expect = nb.expect
    nb.page.locator(".jp-Notebook").first.click()
    nb.page.keyboard.press("Control+s")
    expect(nb.page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0, timeout=30_000)  # saved
    cells = json.loads((lab.root / "turns.ipynb").read_text())["cells"]
    widgets = {
        i: o["data"] for i, c in enumerate(cells) for o in c.get("outputs", ())
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    }
    assert set(widgets) == {7, 10, INSPECTOR}, sorted(widgets)
    # each widget's snapshot is the output just before its view (issue 38, item 11)
    snapshots = {
        i: c["outputs"][n - 1]["data"] for i, c in enumerate(cells) for n, o in enumerate(c.get("outputs", ()))
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {}) and n > 0
    }
    assert set(snapshots) == set(widgets), sorted(snapshots)
    assert all('class="snb-snapshot"' in "".join(data["text/html"]) for data in snapshots.values())
    trace, controls = snapshots[7], snapshots[10]
    for data in (trace, controls):
        assert "(children=" not in "".join(data["text/plain"]) + "".join(data["text/html"])
    plain = "".join(trace["text/plain"])
    assert plain.startswith("Session "), plain
    assert ", 1 error" in plain.splitlines()[0], plain
    assert "Manual calls" in plain, plain
    assert "".join(controls["text/plain"]).startswith("background run: finished"), controls["text/plain"]
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    try:
        page.set_content(f"<!doctype html><meta charset=utf-8><body>{''.join(trace['text/html'])}</body>")
        snapshot = page.locator(".snb-trace")
        expect(snapshot.locator(".snb-title")).to_contain_text("1 error")
        expect(snapshot.locator(".snb-group-manual")).to_have_text("Manual calls")
        expect(snapshot.locator("details.snb-span-tool").filter(has_text="demo.fail")).to_contain_text("error")
        page.screenshot(path=str(ARTIFACTS / "saved-trace-snapshot.png"), full_page=True)
        # without its <style> block (stripped by an untrusted JupyterLab, GitHub, nbviewer) it keeps its look
        bare = re.sub(r"<style>.*?</style>", "", "".join(trace["text/html"]), flags=re.S)
        assert "<style>" not in bare
        page.set_content(f"<!doctype html><meta charset=utf-8><body>{bare}</body>")
        looks = page.locator(".snb-trace details.snb-span-tool summary").first.evaluate(
            """(s) => ({row: getComputedStyle(s).display,
                       bar: getComputedStyle(s.querySelector('.snb-bar')).position,
                       title: getComputedStyle(document.querySelector('.snb-title')).fontWeight})"""
        )
        assert looks == {"row": "flex", "bar": "absolute", "title": "600"}, looks
        page.screenshot(path=str(ARTIFACTS / "saved-trace-snapshot-unstyled.png"), full_page=True)
    finally:
        page.close()
    _reopened(nb, lab, browser)


def _reopened(nb: NotebookPage, lab: Lab, browser: Any) -> None:
    """Closed and opened again with a new kernel (no widget state saved): every widget output shows its last
    snapshot, none reads "Error displaying widget: model not found" (issue 38, item 11); money stays text."""
    expect, page = nb.expect, nb.page
    _shut_down_kernels(lab)
    page.reload()
    page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=60_000)
    nb.wait_idle(120_000)
    notebook = page.locator(".jp-Notebook")
    expect(nb.output(7).locator(".snb-snapshot .snb-trace")).to_be_visible(timeout=30_000)
    expect(nb.output(10).locator(".snb-snapshot")).to_contain_text("finished")
    expect(nb.output(INSPECTOR).locator(".snb-snapshot .snb-inspector")).to_contain_text("demo")
    _math_settled(nb)
    _money_as_text(nb)
    page.wait_for_function("() => !document.body.innerText.includes('Loading widget')", timeout=30_000)
    for bad in ("model not found", "Error displaying widget", "(children="):
        assert bad not in notebook.inner_text(), bad
    for i in (7, 10, INSPECTOR):
        expect(nb.output(i).locator(".jp-OutputArea-child").filter(has=page.locator(".snb-snapshot"))).to_be_visible()
    nb.shot("reopened-trace", nb.cell(7))
    nb.shot("reopened-controls", nb.cell(10))
    nb.shot("reopened-inspector", nb.cell(INSPECTOR))
    _use_dark_theme(nb)
    nb.shot("reopened-trace-dark", nb.cell(7))
    nb.shot("reopened-inspector-dark", nb.cell(INSPECTOR))
    _reopened_in_notebook_7(nb, lab, browser)


def _reopened_in_notebook_7(nb: NotebookPage, lab: Lab, browser: Any) -> None:
    """The same saved notebook opened in Jupyter Notebook 7 (served by the same server, its widget models gone
    with the old kernel): each widget output shows its snapshot there too, none "model not found" (item 11)."""
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    try:
        page.goto(f"{lab.url}/notebooks/{nb.name}?token={lab.token}", timeout=60_000)
        page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=60_000)
        seven = NotebookPage(page, nb.name)
        seven.shots = nb.shots
        with failure_shot(seven, "reopened-nb7"):
            assert page.locator("#jp-main-statusbar").count() == 0  # Notebook 7's page, not JupyterLab's
            expect = seven.expect
            expect(seven.output(7).locator(".snb-snapshot .snb-trace")).to_be_visible(timeout=30_000)
            expect(seven.output(10).locator(".snb-snapshot")).to_contain_text("finished")
            expect(seven.output(INSPECTOR).locator(".snb-snapshot .snb-inspector")).to_contain_text("demo")
            page.wait_for_function("() => !document.body.innerText.includes('Loading widget')", timeout=30_000)
            text = page.locator(".jp-Notebook").inner_text()
            for bad in ("model not found", "Error displaying widget", "(children="):
                assert bad not in text, bad
            for i in (7, 10, INSPECTOR):
                snapshot = seven.output(i).locator(".jp-OutputArea-child").filter(has=page.locator(".snb-snapshot"))
                expect(snapshot).to_be_visible()
            seven.shot("reopened-nb7-inspector", seven.cell(INSPECTOR))
    finally:
        page.close()


def _shut_down_kernels(lab: Lab) -> None:
    """Every session of the lab (and so its kernel) shut down through the REST API, as closing a notebook and
    shutting its kernel down does: the page reloaded next starts a new kernel."""
    import urllib.request

    auth = {"Authorization": f"token {lab.token}"}
    with urllib.request.urlopen(urllib.request.Request(f"{lab.url}/api/sessions", headers=auth), timeout=30) as r:
        sessions = json.loads(r.read())
    for session in sessions:
        gone = urllib.request.Request(f"{lab.url}/api/sessions/{session['id']}", method="DELETE", headers=auth)
        urllib.request.urlopen(gone, timeout=60).close()


def _use_dark_theme(nb: NotebookPage) -> None:
    """Settings > Theme > JupyterLab Dark, then wait until the notebook is drawn dark."""
    page = nb.page
    page.get_by_role("menuitem", name="Settings", exact=True).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Theme$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^JupyterLab Dark$")).click()
    page.wait_for_function(
        """() => document.body.dataset.jpThemeLight === 'false'
            && getComputedStyle(document.querySelector('.jp-Notebook')).backgroundColor !== 'rgb(255, 255, 255)'""",
        timeout=30_000,
    )
