"""Server state, the inspector's forms and a saved notebook, in JupyterLab in Chromium (issue 12).

One JupyterLab for the module and one notebook driven cell by cell: a server that fails to connect is shown
as failed with the command to retry (`%mcp list`, `%synapse status`, the inspector, which opens on the
running server's tab); `%mcp connect` says the time waited and "already connected"; opening an inspector
does not restart a crashed server, and a call that restarts it updates every open inspector. The
inspector's schema form (required number empty and flagged, a default as placeholder, description, filter,
Cancel, a recent call refilling the form, "copy as %mcp call"), resources read and prompts fetched from it,
and `%mcp read` / `%mcp prompt`. Then the committed notebooks/tool_inspection.ipynb opened without running
it. Each state is screenshotted into tests/e2e/artifacts/ and asserted from the DOM.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser_lab import (
    ARTIFACTS,
    DEMO,
    REPO,
    Lab,
    NotebookPage,
    css,
    emoji_in,
    error_lines,
    failure_shot,
    rgb,
    start_lab,
    write_notebook,
)

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.browser]

BAD = "{sys.executable} -c \"import sys; print('no config here', file=sys.stderr); sys.exit(3)\""
CELLS = [
    "import sys",                                      # 0
    "%load_ext synapse_nb",                            # 1
    f"%mcp connect bad -- {BAD}",                      # 2
    f"%mcp connect demo {DEMO}",                    # 3
    f"%mcp connect demo {DEMO}",                    # 4 the same config again
    "%mcp list",                                       # 5
    "%synapse status",                                 # 6
    "%mcp inspect",                                    # 7 inspector A
    "%mcp call demo.crash",                            # 8
    "%mcp inspect",                                    # 9 inspector B, opened on a crashed server
    "%mcp list",                                       # 10
    "%mcp call demo.echo text=back",                   # 11 restarts demo
    "%mcp read demo demo://schema",                    # 12
    "%mcp prompt demo explore_table table=orders",     # 13
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with start_lab(tmp_path_factory.mktemp("lab-servers")) as lab:
        yield lab


def test_server_state_and_the_inspector(lab: Lab, browser: Any) -> None:
    name = write_notebook(lab.root / "servers.ipynb", CELLS)
    nb = NotebookPage.open(browser, lab, name)
    expect, page = nb.expect, nb.page
    with failure_shot(nb, "servers"):
        for i in range(2):
            nb.run(i)
        # a server that never connects: one line saying why, its stderr shown, no traceback
        nb.run(2)
        lines = error_lines(nb.cell(2))
        assert len(lines) == 1, lines
        assert lines[0].startswith("ServerStartError: %mcp connect: bad failed to start"), lines  # no usage error
        expect(nb.output(2)).to_contain_text("no config here")

        # connect: the wall time waited; the same config again: "already connected"
        nb.run(3)
        expect(nb.output(3)).to_contain_text(re.compile(r"demo: connected, \d+ tools \(stdio, pid \d+\) in \d"))
        nb.run(4)
        expect(nb.output(4)).to_contain_text(re.compile(r"demo: already connected, \d+ tools \(stdio, pid \d+\)"))
        assert " in " not in nb.output(4).inner_text().split("already connected", 1)[1]
        nb.shot("servers-connect", page.locator(".jp-Notebook"))

        # %mcp list and %synapse status: failed, with the command to retry; never "connected"
        nb.run(5)
        rows = nb.output(5).locator("table.dataframe tbody tr")
        expect(rows).to_have_count(2)
        bad_row = rows.filter(has_text="bad")
        expect(bad_row).to_contain_text("failed — %mcp restart bad to retry")
        expect(bad_row).not_to_contain_text("connected")
        expect(rows.filter(has_text="demo").locator("td").nth(3)).to_have_text("connected")  # after the protocol
        nb.run(6)
        expect(nb.output(6)).to_contain_text("bad (failed — %mcp restart bad to retry")
        expect(nb.output(6)).to_contain_text(re.compile(r"demo \(connected, \d+ tools\)"))
        nb.shot("servers-list-status", page.locator(".jp-Notebook"))

        # the inspector opens on the running server's tab, never on the failed one's
        nb.run(7)
        inspector_a = nb.output(7).locator(".snb-inspector.jupyter-widgets")
        tabs_a = inspector_a.locator(".lm-TabBar").first.locator(".lm-TabBar-tab")
        expect(tabs_a).to_have_count(3, timeout=30_000)  # bad, demo and the built-in kernel group
        expect(inspector_a.locator(".lm-TabBar").first.locator(".lm-mod-current")).to_have_text("● demo")
        expect(tabs_a.filter(has_text="bad")).to_have_text("✖ bad · failed")
        nb.shot("servers-inspector-opens-on-demo", inspector_a)
        tabs_a.filter(has_text="bad").click()
        bad_panel = inspector_a.locator(".snb-server-bad")
        expect(bad_panel.locator(".snb-retry")).to_have_text("failed — %mcp restart bad to retry")
        nb.shot("servers-inspector-failed-tab", inspector_a)
        tabs_a.filter(has_text="demo").click()
        card_a = inspector_a.locator(".snb-server-demo .snb-card").first
        expect(card_a).to_contain_text("connected")

        # a crash; an inspector opened now shows it crashed and does not restart it
        nb.run(8)
        assert len(error_lines(nb.cell(8))) == 1, error_lines(nb.cell(8))
        nb.run(9)
        inspector_b = nb.output(9).locator(".snb-inspector.jupyter-widgets")
        # no server runs: it opens on the built-in kernel group, not on the failed or the crashed one
        expect(inspector_b.locator(".lm-TabBar").first.locator(".lm-mod-current")).to_contain_text("kernel")
        inspector_b.locator(".lm-TabBar").first.locator(".lm-TabBar-tab", has_text="demo").click()
        card_b = inspector_b.locator(".snb-server-demo .snb-card").first
        expect(card_b).to_contain_text("crashed")
        expect(card_b.locator(".snb-retry")).to_contain_text("crashed — the next call restarts it")
        expect(card_a).to_contain_text("crashed")  # the open inspector followed the crash
        inspector_b.locator(".snb-server-demo .lm-TabBar-tab", has_text="Resources").click()
        expect(inspector_b.locator(".snb-server-demo")).to_contain_text(
            "demo is crashed: its resources are listed once it runs again")
        nb.run(10)
        expect(nb.output(10).locator("table.dataframe tbody tr").filter(has_text="demo")).to_contain_text("crashed")
        nb.shot("servers-crashed-not-restarted", page.locator(".jp-Notebook"))

        # a call restarts it: every open inspector shows the new state
        nb.run(11)
        expect(nb.output(11)).to_contain_text("back")
        for card in (card_a, card_b):
            expect(card.locator(".snb-title")).to_contain_text("connected", timeout=30_000)
            expect(card).to_contain_text("1 restart")
            expect(card.locator(".snb-retry")).to_have_count(0)
        nb.shot("servers-restarted-by-a-call", page.locator(".jp-Notebook"))

        # %mcp read and %mcp prompt
        nb.run(12)
        expect(nb.output(12)).to_contain_text("demo demo://schema")
        expect(nb.output(12)).to_contain_text("## products")
        nb.run(13)
        expect(nb.output(13)).to_contain_text("demo.explore_table")
        expect(nb.output(13)).to_contain_text("Describe the table orders")
        nb.shot("servers-read-and-prompt", page.locator(".jp-Notebook"))

        _schema_form(nb, inspector_b)
        _resources_and_prompts(nb, inspector_b)
        text = page.locator(".jp-Notebook").inner_text()
        assert emoji_in(text) == [], emoji_in(text)


def _tool(nb: NotebookPage, inspector: Any, tool: str) -> Any:
    server = inspector.locator(".snb-server-demo")
    server.locator(".lm-TabBar-tab", has_text="Tools").click()
    server.locator(".snb-tool-list select").select_option(label=tool)
    return server.locator(".snb-tool").filter(has=nb.page.locator("code", has_text=f"demo__{tool}"))


def _schema_form(nb: NotebookPage, inspector: Any) -> None:
    expect = nb.expect
    server = inspector.locator(".snb-server-demo")
    server.locator(".lm-TabBar-tab", has_text="Tools").click()
    # the filter box narrows the tool list
    search = server.locator(".snb-tool-filter input")
    search.fill("sleep")  # by name or description: sleep, and cancellations ("How many sleep calls ...")
    expect(server.locator(".snb-tool-list select option")).to_have_text(["sleep", "cancellations"])
    nb.shot("form-filter", server)
    search.fill("")
    expect(server.locator(".snb-tool-list select option")).not_to_have_count(1)

    # a required number starts empty, says so, and is flagged when left empty; nothing is sent
    sleep = _tool(nb, inspector, "sleep")
    expect(sleep.locator(".snb-tool-description")).to_contain_text("Sleep for that many seconds")
    seconds = sleep.locator(".snb-field-seconds input")
    expect(seconds).to_have_value("")
    expect(seconds).to_have_attribute("placeholder", "required number")
    expect(sleep.locator(".snb-field-seconds .snb-req")).to_have_text("*")
    sleep.locator("button.snb-call").click()  # the check runs in the kernel: a busy machine takes seconds to answer
    expect(sleep.locator(".snb-field-seconds .snb-field-error")).to_contain_text("required", timeout=60_000)
    expect(sleep.locator(".snb-call-status")).to_contain_text("nothing was sent", timeout=60_000)
    assert css(sleep.locator(".snb-field-seconds .snb-field-error"), "color") == rgb("#cf222e")
    nb.shot("form-required-number-flagged", sleep)

    # Cancel stops a running call
    seconds.fill("30")
    sleep.locator("button.snb-call").click()
    cancel = sleep.locator("button.snb-cancel")
    expect(cancel).to_be_visible(timeout=15_000)
    expect(sleep.locator(".snb-result")).to_contain_text("calling sleep")
    nb.shot("form-call-running-with-cancel", sleep)
    cancel.click()
    expect(sleep.locator(".snb-result")).to_contain_text("cancelled", timeout=30_000)
    expect(cancel).to_be_hidden()
    nb.shot("form-call-cancelled", sleep)

    # a default shows as a placeholder, the input left empty
    garbage = _tool(nb, inspector, "garbage")
    lines = garbage.locator(".snb-field-lines input")
    expect(lines).to_have_value("")
    expect(lines).to_have_attribute("placeholder", "default: 3")
    nb.shot("form-default-as-placeholder", garbage)

    # a recent call refills the form; "copy as %mcp call" shows the line
    echo = _tool(nb, inspector, "echo")
    text = echo.locator(".snb-field-text textarea, .snb-field-text input").first
    text.fill("from the form")
    echo.locator("button.snb-call").click()
    expect(echo.locator(".snb-result .snb-result-status")).to_contain_text("ok", timeout=30_000)
    picker = echo.locator(".snb-recent-picker select")
    expect(picker.locator("option")).to_have_count(2, timeout=15_000)  # this call and `%mcp call demo.echo text=back`
    text.fill("")
    picker.select_option(label=picker.locator("option", has_text='{"text": "back"}').inner_text())
    expect(text).to_have_value("back")
    expect(echo.locator(".snb-call-status")).to_contain_text("arguments of a recent call loaded")
    echo.locator("button", has_text="Copy as %mcp call").click()
    expect(echo.locator(".snb-copy-line pre")).to_have_text('%mcp call demo.echo {"text": "back"}')
    nb.shot("form-recent-call-refilled-and-copied", echo)


def _resources_and_prompts(nb: NotebookPage, inspector: Any) -> None:
    expect = nb.expect
    server = inspector.locator(".snb-server-demo")
    server.locator(".lm-TabBar-tab", has_text="Resources").click()
    read = server.get_by_role("button", name="Read")
    expect(read).to_be_visible(timeout=30_000)
    read.click()
    expect(server).to_contain_text("## customers", timeout=30_000)
    nb.shot("inspector-resource-read", inspector)
    server.locator(".lm-TabBar-tab", has_text="Prompts").click()
    get = server.get_by_role("button", name="Get")
    expect(get).to_be_visible(timeout=30_000)
    get.click()
    expect(server).to_contain_text("required: table")  # the required argument is asked for, nothing fetched
    server.locator(".widget-text input").last.fill("customers")
    get.click()
    expect(server).to_contain_text("Describe the table customers", timeout=30_000)
    nb.shot("inspector-prompt-fetched", inspector)


def test_the_committed_tool_inspection_notebook_reads_well_without_running_it(lab: Lab, browser: Any) -> None:
    """Opened in JupyterLab without running a cell, the inspector's output shows servers, tools and recent
    calls, never the widget's repr: JupyterLab does not trust a notebook it did not run, so it renders the
    static snapshot saved beside the widget view, as GitHub and nbviewer do."""
    source = REPO / "notebooks" / "tool_inspection.ipynb"
    shutil.copyfile(source, lab.root / "saved_tool_inspection.ipynb")
    saved = json.loads(source.read_text())
    snapshots = [c["outputs"][n - 1]["data"] for c in saved["cells"] for n, o in enumerate(c.get("outputs", ()))
                 if "application/vnd.jupyter.widget-view+json" in o.get("data", {}) and n > 0]  # the output above
    assert snapshots, "the committed notebook has no inspector output"
    nb = NotebookPage.open(browser, lab, "saved_tool_inspection.ipynb", kernel=False)
    expect, page = nb.expect, nb.page
    with failure_shot(nb, "saved-notebook"):
        notebook = page.locator(".jp-Notebook")
        # the text/html snapshot rendered, not the widget view
        inspector = notebook.locator('.jp-OutputArea-output[data-mime-type="text/html"] .snb-inspector').first
        expect(inspector).to_be_visible(timeout=60_000)
        expect(inspector).to_contain_text("demo")
        expect(inspector).to_contain_text("describe_table")
        expect(inspector).to_contain_text("Recent calls")
        expect(inspector).to_contain_text("demo.query")
        text = notebook.inner_text()
        for bad in ("Inspector(children=", "Error displaying widget", "model not found"):
            assert bad not in text, bad
        nb.shot("saved-notebook-inspector", inspector)

        # the snapshot alone, as a page without JupyterLab's styles renders it
        html = "".join(snapshots[-1]["text/html"])
        plain = "".join(snapshots[-1]["text/plain"])
        assert "Inspector(children=" not in html + plain
        snapshot = browser.new_page(viewport={"width": 1200, "height": 900})
        try:
            snapshot.set_content(f"<!doctype html><meta charset=utf-8><body>{html}</body>")
            body = snapshot.locator("body")
            expect(body.locator(".snb-inspector")).to_contain_text("MCP inspector")
            expect(body).to_contain_text("demo")
            expect(body.locator("table").first).to_contain_text("describe_table")
            expect(body).to_contain_text("Recent calls")
            expect(body).to_contain_text("demo.query")
            snapshot.screenshot(path=str(ARTIFACTS / "saved-notebook-snapshot.png"), full_page=True)
        finally:
            snapshot.close()
        assert emoji_in(text + plain) == []
