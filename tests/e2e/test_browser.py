"""The MCP inspector in a real browser: JupyterLab + headless Chromium (Playwright) + the demo MCP server.

Runs notebooks/tool_inspection.ipynb (a copy, in a temporary root) with "Run All Cells", picks the demo
server's `describe_table` tool in the inspector, tries an invalid input (flagged, nothing sent), then a valid
one (result rendered), and saves a screenshot under tests/e2e/artifacts/. Then "Run All Cells" of a
33-cell notebook (10 %%synapse, 10 %mcp call, 10 plain cells after the setup) must run every cell.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import tools_server
from tests.support.browser_lab import ARTIFACTS, REPO, Lab, error_lines, start_lab, write_notebook

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.browser]

NOTEBOOK = REPO / "notebooks" / "tool_inspection.ipynb"
RUN_TIMEOUT_MS = 120_000  # kernel start + all cells + the demo server's handshake


# Used only while notebooks/tool_inspection.ipynb does not exist: connect the demo server, inspect it.
FALLBACK_CELLS = [
    "%load_ext synapse_nb",
    f"%mcp connect demo -- {tools_server.COMMAND}",
    "%mcp inspect demo",
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab from this venv on 127.0.0.1 (see browser_lab.start_lab)."""
    with start_lab(tmp_path_factory.mktemp("lab")) as lab:
        yield lab


def _place_notebook(root: Path) -> str:
    """A copy of the repo's notebook in the server root (the repo file is never touched)."""
    target = root / "tool_inspection.ipynb"
    if not NOTEBOOK.exists():
        return write_notebook(target, FALLBACK_CELLS)
    shutil.copyfile(NOTEBOOK, target)
    return target.name


def _notebook_state(page: Any) -> str:
    """What the cells show: their prompts (`[*]` = queued or running) and any error output, for a failure."""
    lines = []
    for cell in page.locator(".jp-Notebook .jp-CodeCell").all():
        prompt = cell.locator(".jp-InputPrompt").inner_text().strip()
        source = cell.locator(".jp-InputArea-editor").inner_text().strip().splitlines()
        lines.append(f"{prompt} {source[-1] if source else ''}")
        lines += [f"    {line}" for line in error_lines(cell)[:6]]
    return "\n".join(lines)


def test_inspector_calls_a_demo_tool_in_jupyterlab(lab: Lab, browser: Any) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
    from playwright.sync_api import expect

    name = _place_notebook(lab.root)
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1300})
    try:
        page.goto(lab.notebook_url(name), timeout=60_000)
        page.locator(".jp-NotebookPanel .jp-Notebook").wait_for(timeout=60_000)
        page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=60_000)
        # the kernel is up when the status bar says so (the toolbar reads "idle" even before it starts)
        expect(page.locator("#jp-main-statusbar")).to_contain_text("| Idle", timeout=RUN_TIMEOUT_MS)
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

        inspector = page.locator(".snb-inspector.jupyter-widgets").first
        try:
            inspector.wait_for(timeout=RUN_TIMEOUT_MS)
        except PlaywrightTimeoutError:
            pytest.fail(f"the inspector never rendered:\n{_notebook_state(page)}")
        server = inspector.locator(".snb-server-demo")
        expect(server.locator(".snb-state-connected")).to_be_visible(timeout=30_000)
        # the kernel is the venv's interpreter: the demo server was started with its sys.executable
        expect(server.locator(".snb-card").first).to_contain_text(f"{sys.executable} -m synapse_nb")
        server.locator(".snb-tool-list select").select_option(label="describe_table")
        tool = server.locator(".snb-tool").filter(has=page.locator("code", has_text="demo__describe_table"))
        text = tool.locator(".snb-field-table textarea, .snb-field-table input").first
        call = tool.locator("button.snb-call")
        result = tool.locator(".snb-result")

        # invalid first: the required field left empty is flagged and nothing is sent
        text.fill("")
        call.click()
        expect(tool.locator(".snb-field-error").first).to_contain_text("required", timeout=15_000)
        expect(tool.locator(".snb-call-status")).to_contain_text("nothing was sent")
        expect(result).to_have_text("")  # no "calling ..." and no result: the call never started

        text.fill("products")
        expect(tool.locator(".snb-field-error").first).to_have_text("")
        call.click()
        expect(result.locator(".snb-result-status")).to_contain_text("ok", timeout=30_000)
        expect(result).to_contain_text("unit_price")  # the products table's columns
        page.screenshot(path=str(ARTIFACTS / "inspector.png"), full_page=True)
        inspector.screenshot(path=str(ARTIFACTS / "inspector-widget.png"))
    except BaseException:  # also pytest.fail's: keep a picture of what the page showed
        page.screenshot(path=str(ARTIFACTS / "inspector-failure.png"), full_page=True)
        raise
    finally:
        page.close()


def run_all_cells() -> list[str]:
    """33 cells: setup, %load_ext, %mcp connect, then 10 %%synapse, 10 %mcp call and 10 plain cells."""
    cells = [
        "import os, sys, tempfile\nos.environ['SYNAPSE_DB'] = os.path.join(tempfile.mkdtemp(), 'history.duckdb')",
        "%load_ext synapse_nb",
        f"%mcp connect demo -- {tools_server.COMMAND}",
    ]
    for i in range(10):
        cells += [f"%%synapse --session run-all\nWhat tables are there? ({i})", f"%mcp call demo.echo text=cell{i}",
                  f"print('plain', {i})"]
    return cells


def test_run_all_of_a_30_cell_notebook_in_jupyterlab(lab: Lab, browser: Any) -> None:
    """JupyterLab's Run All queues every cell at once: the awaited %%synapse and %mcp call cells and the plain
    ones all run, in order, with no error."""
    from playwright.sync_api import expect

    write_notebook(lab.root / "run_all.ipynb", run_all_cells())
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1300})
    try:
        page.goto(lab.notebook_url("run_all.ipynb"), timeout=60_000)
        page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=60_000)
        expect(page.locator("#jp-main-statusbar")).to_contain_text("| Idle", timeout=RUN_TIMEOUT_MS)
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        cells = page.locator(".jp-Notebook .jp-CodeCell")
        expect(cells.last.locator(".jp-OutputArea-output")).to_contain_text("plain 9", timeout=RUN_TIMEOUT_MS)
        expect(page.locator("#jp-main-statusbar")).to_contain_text("| Idle", timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "run-all.png"), full_page=True)
        # Cells scrolled out of view are not in the page (JupyterLab's windowing): read the saved file.
        saved = lab.root / "run_all.ipynb"
        page.locator(".jp-Notebook").first.click()
        page.keyboard.press("Control+s")
        deadline = time.monotonic() + 60
        while not _every_cell_ran(saved):
            assert time.monotonic() < deadline, f"not saved with every cell run:\n{_notebook_state(page)}"
            time.sleep(0.1)  # polling the saved file, under a deadline
        notebook = json.loads(saved.read_text())["cells"]
        numbers = [c["execution_count"] for c in notebook]
        assert numbers == sorted(numbers)  # every cell ran, in order
        texts = ["\n".join(_output_text(o) for o in c["outputs"]) for c in notebook]
        assert not [o for c in notebook for o in c["outputs"]
                    if o["output_type"] == "error" or o.get("name") == "stderr"], texts
        for i in range(10):
            assert "orders" in texts[3 + 3 * i], texts[3 + 3 * i]
            assert texts[4 + 3 * i].endswith(f"cell{i}"), texts[4 + 3 * i]
            assert texts[5 + 3 * i] == f"plain {i}\n", texts[5 + 3 * i]
    except BaseException:  # keep a picture of what the page showed
        page.screenshot(path=str(ARTIFACTS / "run-all-failure.png"), full_page=True)
        raise
    finally:
        page.close()


def _output_text(output: dict[str, Any]) -> str:
    if output["output_type"] == "stream":
        return "".join(output["text"])
    data = output.get("data", {})
    return "".join(data.get("text/markdown") or data.get("text/plain") or "")


def _every_cell_ran(path: Path) -> bool:
    try:
        cells = json.loads(path.read_text())["cells"]
    except ValueError:  # caught mid-write
        return False
    return all(c["execution_count"] for c in cells)
