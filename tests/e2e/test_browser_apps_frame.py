"""The MCP Apps View frame in JupyterLab and Jupyter Notebook 7 in Chromium (issue 36): the official PDF viewer
(server-pdf, PDF.js with its worker from a blob: URL) and server-threejs (eval) render under the frame's policy;
a View whose policy refuses something says so in one line, recorded and told to the model's next turn; a View
that never reports its size gets a sensible height and a Full window button; a View's fullscreen request shows
the same live View over the window and back (picture-in-picture refused, answered with the mode it stays in);
`localStorage` in the origin-less frame is the View's own, saved with the notebook (no widget state saved: JupyterLab's
default) and back as the View's saved copy in a new kernel; a
click queued behind a busy cell says it waits; a `ui/download-file` asks and lands in the notebook's folder;
unstyled Views follow the dark theme. Each state is screenshotted (light and dark) into the test's tmp dir.

One JupyterLab (which serves Notebook 7 too) and one Chromium for the module; the product's own path:
`%load_ext synapse_nb`, `%mcp connect`, `%mcp call`.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_browser_apps import choose_theme, frame_of, run_again, shot
from tests.support import npm_servers
from tests.support.browser_lab import KERNEL_TIMEOUT_MS, Lab, NotebookPage, failure_shot, start_lab, write_notebook
from tests.support.llm_server import Gate, LlmServer, call, text, tool_calls
from tests.support.npm_servers import node_for

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.browser, pytest.mark.node]

TESTS = Path(__file__).resolve().parents[1]
NODE = shutil.which("node") or "node"
APPS = npm_servers.TOOLS / "apps" / "node_modules" / "@modelcontextprotocol"
PDF = APPS / "server-pdf" / "dist" / "index.js"
THREE = APPS / "server-threejs" / "dist" / "index.js"
VIEW_MS = 90_000  # the PDF viewer is 4 MB of HTML: its first render on a loaded machine
FLAG = "release-frame-busy-cell"
PDF_TEXT = "synapse frame test page"

CELLS = [
    "import os, tempfile\n"
    "os.environ['SYNAPSE_DB'] = os.path.join(tempfile.mkdtemp(prefix='synapse-'), 'h.duckdb')\n"
    "os.environ['OPENAI_BASE_URL'] = {base!r}\nos.environ['OPENAI_API_KEY'] = 'sk-fake-frame-browser-0123'",     # 0
    "%load_ext synapse_nb",                                                                                        # 1
    f"%mcp connect apps --approve auto -- {sys.executable} {TESTS / 'support' / 'apps_server.py'}",               # 2
    f"%mcp connect pdf --approve auto -- {NODE} {PDF} --stdio {{pdf}}",                                           # 3
    f"%mcp connect three --approve auto -- {NODE} {THREE} --stdio",                                               # 4
    "%mcp call pdf.display_pdf url={pdf}",                                                                        # 5
    "%mcp call three.show_threejs_scene",                                                                         # 6
    "%mcp call apps.frame",                                                                                       # 7
    "%mcp call apps.plain",                                                                                       # 8
    "%mcp call apps.probe",                                                                                       # 9
    f"import time\nwhile not os.path.exists({FLAG!r}):\n    time.sleep(0.05)",                                   # 10
    "events = %synapse sql SELECT event, detail FROM server_events WHERE event IN ('app_request', 'app_view_problem')\n"
    "print(events.to_csv(index=False))",                                                                         # 11
    "print(sorted(os.listdir('.')))",                                                                             # 12
    "%%synapse --model openai:gpt-test\nopen the frame view",                                                    # 13
]


def write_pdf(path: Path) -> None:
    """A two-page PDF with text on each page (matplotlib's PDF backend)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    with PdfPages(path) as pdf:
        for n in (1, 2):
            fig = plt.figure(figsize=(6, 4))
            fig.text(0.1, 0.5, f"{PDF_TEXT} {n}", fontsize=20)
            pdf.savefig(fig)
            plt.close(fig)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    # JupyterLab's own settings: no widget state is saved with the notebook (a View comes back as its saved copy)
    with start_lab(tmp_path_factory.mktemp("frame-lab")) as lab:
        yield lab


@pytest.fixture(scope="module")
def nb(lab: Lab, browser: Any, llm: LlmServer) -> Iterator[NotebookPage]:
    node_for(npm_servers.BASIC)
    for script in (PDF, THREE):
        node_for(script)
    pdf = lab.root / "doc.pdf"
    write_pdf(pdf)
    cells = [c.replace("{pdf}", str(pdf)).replace("{base!r}", repr(llm.openai_base_url)) for c in CELLS]
    name = write_notebook(lab.root / "frame.ipynb", cells)
    nb = NotebookPage.open(browser, lab, name)
    with failure_shot(nb, "frame-setup"):
        for i in range(5):
            nb.run(i, timeout=120_000)
    yield nb
    nb.page.close()


def bar(nb: NotebookPage, cell: int) -> Any:
    return nb.output(cell).locator(".synapse-app-status").first


def both_themes(nb: NotebookPage, where: Path, name: str, cell: int) -> None:
    """Screenshots of cell `cell` in the light theme, then the dark one (and back to light)."""
    shot(nb, where, f"{name}-light", nb.cell(cell))
    choose_theme(nb, "JupyterLab Dark")
    nb.expect(nb.page.locator("body")).to_have_attribute("data-jp-theme-light", "false", timeout=30_000)
    shot(nb, where, f"{name}-dark", nb.cell(cell))
    choose_theme(nb, "JupyterLab Light")
    nb.expect(nb.page.locator("body")).to_have_attribute("data-jp-theme-light", "true", timeout=30_000)


def test_the_official_pdf_viewer_renders_its_pages(nb: NotebookPage, tmp_path: Path) -> None:
    with failure_shot(nb, "frame-pdf"):
        nb.run(5, timeout=120_000)
        _iframe, view = frame_of(nb, 5)
        nb.expect(view.get_by_text(re.compile(PDF_TEXT)).first).to_be_attached(timeout=VIEW_MS)
        assert view.get_by_text("fake worker").count() == 0
        nb.expect(bar(nb, 5)).to_have_text("")
        both_themes(nb, tmp_path, "frame-pdf", 5)


def test_the_official_threejs_view_renders_its_scene(nb: NotebookPage, tmp_path: Path) -> None:
    with failure_shot(nb, "frame-threejs"):
        nb.run(6, timeout=120_000)
        _iframe, view = frame_of(nb, 6)
        nb.expect(view.locator("canvas").first).to_be_visible(timeout=VIEW_MS)
        assert view.get_by_text("unsafe-eval").count() == 0
        nb.expect(bar(nb, 6)).to_have_text("")
        both_themes(nb, tmp_path, "frame-threejs", 6)


def test_a_refused_request_shows_one_line_and_the_next_turn_is_told(nb: NotebookPage, tmp_path: Path) -> None:
    """The probe View fetches the Jupyter API: its policy (no connectDomains) refuses it; the line says so."""
    with failure_shot(nb, "frame-blocked"):
        nb.run(9)
        _iframe, view = frame_of(nb, 9)
        nb.expect(view.locator("#done")).to_have_text("probe done", timeout=VIEW_MS)
        outcomes = dict(re.match(r"(\S+) (.*)", line).groups()  # type: ignore[union-attr]
                        for line in view.locator("#probe li").all_inner_texts())
        # the View's storage is its own (empty here), never the notebook's; the rest stays blocked
        assert outcomes.pop("local-storage") == "allowed: null"
        assert outcomes.pop("session-storage") == "allowed: null"
        assert all(outcome.startswith("blocked") for outcome in outcomes.values()), outcomes
        problem = nb.output(9).locator(".synapse-app-problem")
        nb.expect(problem).to_contain_text("security policy blocked connect-src", timeout=VIEW_MS)
        assert problem.count() == 1
        shot(nb, tmp_path, "frame-blocked", nb.cell(9))
        run_again(nb, 11)
        rows = nb.output(11).inner_text()
        assert "app_view_problem" in rows, rows
        assert "connect-src" in rows, rows


def test_a_view_that_never_says_its_size_gets_room_a_full_window_and_the_theme(
    nb: NotebookPage, tmp_path: Path,
) -> None:
    with failure_shot(nb, "frame-plain"):
        nb.run(8)
        iframe, view = frame_of(nb, 8)
        nb.expect(view.locator("#plain")).to_have_attribute("data-ready", "yes", timeout=VIEW_MS)
        assert iframe.bounding_box()["height"] >= 300
        light = view.locator("html").evaluate("(e) => getComputedStyle(e).backgroundColor")
        shot(nb, tmp_path, "frame-plain-light", nb.cell(8))
        choose_theme(nb, "JupyterLab Dark")
        nb.expect(nb.page.locator("body")).to_have_attribute("data-jp-theme-light", "false", timeout=30_000)
        nb.expect(view.locator("html")).not_to_have_css("background-color", light, timeout=30_000)
        dark = view.locator("html").evaluate("(e) => getComputedStyle(e).backgroundColor")
        text = view.locator("#plain").evaluate("(e) => getComputedStyle(e).color")
        assert _lightness(dark) < 0.3 < _lightness(text), (dark, text)
        shot(nb, tmp_path, "frame-plain-dark", nb.cell(8))
        # the Full window button: the same document over the window, the bottom of the View in sight
        nb.output(8).locator(".synapse-app-expand").click()
        layer = nb.page.locator(".synapse-app-fullwindow")
        nb.expect(layer).to_be_visible()
        full = layer.frame_locator("iframe")
        nb.expect(full.locator("#bottom")).to_be_in_viewport()
        assert full.locator("#plain").get_attribute("data-ready") == "yes"  # not reloaded
        nb.shots = tmp_path
        nb.shot("frame-plain-full-window-dark")
        nb.page.keyboard.press("Escape")
        nb.expect(layer).to_have_count(0)
        _iframe, view = frame_of(nb, 8)
        assert view.locator("#plain").get_attribute("data-ready") == "yes"
        choose_theme(nb, "JupyterLab Light")


def _lightness(css_colour: str) -> float:
    r, g, b = (int(x) for x in re.findall(r"\d+", css_colour)[:3])
    return (max(r, g, b) + min(r, g, b)) / 510


def test_fullscreen_shows_the_same_live_view_and_picture_in_picture_is_refused(
    nb: NotebookPage, tmp_path: Path,
) -> None:
    with failure_shot(nb, "frame-modes"):
        nb.run(7)
        _iframe, view = frame_of(nb, 7)
        nb.expect(view.locator("#status")).to_have_text("connected", timeout=VIEW_MS)
        view.locator("#pip").click()
        nb.expect(view.locator("#status")).to_have_text("asked pip, granted inline")
        view.locator("#full").click()
        layer = nb.page.locator(".synapse-app-fullwindow")
        nb.expect(layer).to_be_visible()
        full = layer.frame_locator("iframe")
        nb.expect(full.locator("#status")).to_have_text("asked fullscreen, granted fullscreen")
        nb.expect(full.locator("#mode")).to_have_text("fullscreen")
        nb.shots = tmp_path
        nb.shot("frame-fullscreen-light")
        layer.locator(".synapse-app-fullwindow-close").click()
        nb.expect(layer).to_have_count(0)
        _iframe, view = frame_of(nb, 7)
        # the same document (a reload would say "connected"), told it is inline again
        nb.expect(view.locator("#mode")).to_have_text("inline")
        nb.expect(view.locator("#status")).to_have_text("asked fullscreen, granted fullscreen")
        run_again(nb, 11)
        rows = nb.output(11).inner_text()
        assert '"mode":"pip","granted":"inline"' in rows.replace('""', '"'), rows


def test_a_click_queued_behind_a_busy_cell_says_it_waits_and_a_download_asks_and_lands(
    lab: Lab, nb: NotebookPage, tmp_path: Path,
) -> None:
    flag = lab.root / FLAG
    with failure_shot(nb, "frame-download"):
        _iframe, view = frame_of(nb, 7)
        nb.expect(view.locator("#title")).to_have_text("Frame view", timeout=VIEW_MS)
        nb.run(10, wait=False)
        view.locator("#download").click()
        nb.expect(bar(nb, 7)).to_contain_text("waiting: a cell is running", timeout=30_000)
        shot(nb, tmp_path, "frame-waiting", nb.cell(7))
        flag.write_text("go")
        nb.wait_done(10)
        nb.expect(bar(nb, 7)).to_have_text("", timeout=30_000)
        question = nb.output(7).locator(".snb-app-download")
        nb.expect(question).to_contain_text("notes.txt", timeout=30_000)
        shot(nb, tmp_path, "frame-download-asked", nb.cell(7))
        question.get_by_role("button", name="Save", exact=True).click()
        nb.expect(view.locator("#status")).to_have_text("downloaded", timeout=30_000)
        assert (lab.root / "notes.txt").read_text() == "hello from the view"
        nb.expect(nb.output(7)).to_contain_text("saved notes.txt")
        run_again(nb, 11)
        assert "ui/download-file" in nb.output(11).inner_text()
    flag.unlink()


def test_a_view_in_a_turn_keeps_what_the_user_did_during_the_turn(
    nb: NotebookPage, llm: LlmServer, tmp_path: Path,
) -> None:
    """Issue 36: the turn's end showed its live outputs again as final ones, and the View loaded afresh, losing
    what the user did while the model was still answering. The new view of the same widget takes the live
    document over."""
    llm.clear()
    gate = Gate()
    llm.queue(tool_calls(call("apps__frame", {})), text("The frame view is open.").gated(gate))
    with failure_shot(nb, "frame-turn"):
        nb.run(13, wait=False)
        _iframe, view = frame_of(nb, 13)
        nb.expect(view.locator("#status")).to_have_text("connected", timeout=VIEW_MS)
        assert gate.wait_reached(timeout=VIEW_MS / 1000)
        view.locator("#store").click()
        nb.expect(view.locator("#status")).to_have_text("stored 1")
        gate.open()
        nb.wait_done(13)
        nb.expect(nb.output(13).get_by_text("The frame view is open.")).to_be_visible(timeout=VIEW_MS)
        _iframe, view = frame_of(nb, 13)
        nb.expect(view.locator("#title")).to_have_text("Frame view", timeout=VIEW_MS)
        # a View loaded again would say "connected" (its storage would still say 1)
        nb.expect(view.locator("#status")).to_have_text("stored 1")
        nb.expect(nb.output(13).locator("iframe")).to_have_count(1)
        shot(nb, tmp_path, "frame-turn-kept", nb.cell(13))


def stop_kernels(lab: Lab) -> None:
    """Shut every kernel of the lab down (a notebook opened next starts a new one)."""
    request = urllib.request.Request(f"{lab.url}/api/kernels", headers={"Authorization": f"token {lab.token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        kernels = json.load(response)
    for kernel in kernels:
        urllib.request.urlopen(urllib.request.Request(
            f"{lab.url}/api/kernels/{kernel['id']}", method="DELETE",
            headers={"Authorization": f"token {lab.token}"}), timeout=30)


def saved_on_disk(path: Path, text: str, timeout: float = 30.0) -> None:
    """Wait (bounded) until an HTML output of the notebook file holds `text`: the frontend's save has landed."""
    import time

    def outputs() -> str:
        try:
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        except ValueError:  # being written
            return ""
        html = (o.get("data", {}).get("text/html", "") for c in cells for o in c.get("outputs", []))
        return "".join("".join(h) if isinstance(h, list) else h for h in html)

    deadline = time.monotonic() + timeout
    while text not in outputs():
        if time.monotonic() > deadline:
            pytest.fail(f"{path.name} was not saved with {text!r} within {timeout:g} s")
        time.sleep(0.1)


def snapshot_holds(nb: NotebookPage, cell: int, pattern: str) -> None:
    """Wait until cell `cell`'s View snapshot (its saved copy's JSON, which the kernel takes again as the user works
    in the View) matches `pattern`."""
    nb.page.wait_for_function(
        """([cell, pattern]) => {
             const data = document.querySelectorAll(".jp-Notebook .jp-Cell")[cell]
               ?.querySelector('.snb-view-saved script[type="application/json"]');
             return !!data && new RegExp(pattern).test(data.textContent || "");
           }""",
        arg=[cell, pattern], timeout=30_000)


def test_a_views_storage_is_its_own_and_comes_back_in_a_new_kernel(
    lab: Lab, nb: NotebookPage, browser: Any, tmp_path: Path,
) -> None:
    with failure_shot(nb, "frame-storage"):
        _iframe, view = frame_of(nb, 7)
        nb.expect(view.locator("#title")).to_have_text("Frame view", timeout=VIEW_MS)
        for n in (1, 2):
            view.locator("#store").click()
            nb.expect(view.locator("#stored")).to_have_text(str(n))
        # the probe View (another View) sees nothing of it
        run_again(nb, 9)
        _iframe, probe = frame_of(nb, 9)
        nb.expect(probe.locator("#done")).to_have_text("probe done", timeout=VIEW_MS)
        assert "local-storage allowed: null" in probe.locator("#probe").inner_text()
        assert nb.page.evaluate("() => window.localStorage.getItem('clicks')") is None  # nor the notebook's origin
        # the official PDF viewer (cell 5) keeps its page in its storage, under the View's viewUUID
        _iframe, pdf = frame_of(nb, 5)
        pdf.locator("#next-btn").click()
        nb.expect(pdf.locator("#page-input")).to_have_value("2", timeout=VIEW_MS)
        nb.expect(pdf.get_by_text(f"{PDF_TEXT} 2").first).to_be_attached(timeout=VIEW_MS)
        # the kernel took both Views' snapshots again with what the user did (their saved copies' storage)
        snapshot_holds(nb, 7, r'"storage":\{"clicks":"2"\}')
        snapshot_holds(nb, 5, r'"storage":\{[^}]*:"2"')
        # saved with the notebook's own button: the keys go to the PDF viewer's frame, which had them last
        nb.page.locator('jp-button[data-command="docmanager:save"]').first.click()
        nb.expect(nb.page.locator(".jp-mod-dirty")).to_have_count(0, timeout=30_000)
    nb.page.close()
    # a new kernel: the saved notebook reopened shows the View as the user left it
    stop_kernels(lab)
    again = NotebookPage.open(browser, lab, "frame.ipynb")
    try:
        with failure_shot(again, "frame-storage-reopened"):
            # no widget state was saved (JupyterLab's default): the View's saved copy, with its storage
            iframe, view = frame_of(again, 7)
            assert iframe.get_attribute("data-saved-copy") == "true"
            again.expect(view.locator("#stored")).to_have_text("2", timeout=VIEW_MS)
            again.expect(again.output(7)).to_contain_text("a saved copy of this view")
            assert "model not found" not in again.output(7).inner_text()
            again.expect(view.locator("#status")).to_have_text("connected", timeout=VIEW_MS)  # its handshake
            # what needs the kernel (a download, a tool call) is answered with an error saying why
            view.locator("#download").click()
            again.expect(view.locator("#status")).to_contain_text("saved copy of the view: run its cell")
            shot(again, tmp_path, "frame-storage-reopened", again.cell(7))
            # the PDF viewer's copy opens at the page the user left it on, its document read from what the kernel
            # answered the live viewer's tool calls (saved with it)
            iframe, pdf = frame_of(again, 5)
            assert iframe.get_attribute("data-saved-copy") == "true"
            again.expect(pdf.locator("#page-input")).to_have_value("2", timeout=VIEW_MS)
            again.expect(pdf.get_by_text(f"{PDF_TEXT} 2").first).to_be_attached(timeout=VIEW_MS)
            shot(again, tmp_path, "frame-pdf-reopened", again.cell(5))
            # the copies follow the theme, as the live Views do
            choose_theme(again, "JupyterLab Dark")
            again.expect(again.page.locator("body")).to_have_attribute("data-jp-theme-light", "false", timeout=30_000)
            for cell in (5, 7):
                again.expect(again.output(cell).locator("iframe")).to_have_attribute(
                    "style", re.compile(r"color-scheme: dark"), timeout=30_000)
            shot(again, tmp_path, "frame-storage-reopened-dark", again.cell(7))
            shot(again, tmp_path, "frame-pdf-reopened-dark", again.cell(5))
            choose_theme(again, "JupyterLab Light")
            again.expect(again.page.locator("body")).to_have_attribute("data-jp-theme-light", "true", timeout=30_000)
    finally:
        again.page.close()


# --- Jupyter Notebook 7: the same Views, the same server ---------------------------------------------------

NB7_CELLS = [CELLS[0], CELLS[1], CELLS[2], CELLS[7], CELLS[8]]


def start_kernel(nb: NotebookPage) -> None:
    """Run cell 0 until it ran: Notebook 7 has no status bar to say its kernel is up, and a cell run before the
    kernel is connected is dropped (bounded: KERNEL_TIMEOUT_MS in all)."""
    prompt = nb.cell(0).locator(".jp-InputPrompt")
    for _ in range(KERNEL_TIMEOUT_MS // 10_000):
        _press(nb, 0)
        try:
            nb.expect(prompt).to_have_text(re.compile(r"\[(\*|\d+)\]"), timeout=10_000)
            break
        except AssertionError:
            continue
    nb.wait_done(0, KERNEL_TIMEOUT_MS)


def _press(nb: NotebookPage, i: int) -> None:
    nb.cell(i).locator(".jp-InputPrompt").click()
    nb.page.keyboard.press("Escape")
    nb.page.keyboard.press("Control+Enter")


def test_the_views_work_in_notebook_7(lab: Lab, browser: Any, llm: LlmServer, tmp_path: Path) -> None:
    cells = [c.replace("{base!r}", repr(llm.openai_base_url)) for c in NB7_CELLS]
    name = write_notebook(lab.root / "frame-nb7.ipynb", cells)
    page = browser.new_page(viewport={"width": 1400, "height": 1300})
    page.goto(f"{lab.url}/notebooks/{name}?token={lab.token}", timeout=60_000)
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=60_000)
    nb = NotebookPage(page, name)
    try:
        with failure_shot(nb, "frame-nb7"):
            start_kernel(nb)
            for i in range(1, len(NB7_CELLS)):
                nb.run(i, timeout=KERNEL_TIMEOUT_MS)
            _iframe, view = frame_of(nb, 3)
            nb.expect(view.locator("#status")).to_have_text("connected", timeout=VIEW_MS)
            view.locator("#store").click()
            nb.expect(view.locator("#stored")).to_have_text("1")
            view.locator("#full").click()
            layer = page.locator(".synapse-app-fullwindow")
            nb.expect(layer).to_be_visible()
            nb.expect(layer.frame_locator("iframe").locator("#mode")).to_have_text("fullscreen")
            nb.shots = tmp_path
            nb.shot("frame-nb7-fullscreen")
            page.keyboard.press("Escape")
            nb.expect(layer).to_have_count(0)
            _iframe, view = frame_of(nb, 3)
            nb.expect(view.locator("#stored")).to_have_text("1")
            shot(nb, tmp_path, "frame-nb7-frame", nb.cell(3))
            _iframe, plain = frame_of(nb, 4)
            nb.expect(plain.locator("#plain")).to_have_attribute("data-ready", "yes", timeout=VIEW_MS)
            shot(nb, tmp_path, "frame-nb7-plain", nb.cell(4))
            snapshot_holds(nb, 3, r'"storage":\{"clicks":"1"\}')
            page.locator('jp-button[data-command="docmanager:save"]').first.click()
            saved_on_disk(lab.root / name, '"clicks":"1"')  # Notebook 7 marks no tab dirty: the file says it
    finally:
        page.close()
    # opened again in a new kernel, with no widget state saved: the View's saved copy, as the user left it
    stop_kernels(lab)
    page = browser.new_page(viewport={"width": 1400, "height": 1300})
    page.goto(f"{lab.url}/notebooks/{name}?token={lab.token}", timeout=60_000)
    again = NotebookPage(page, name)
    try:
        with failure_shot(again, "frame-nb7-reopened"):
            iframe, view = frame_of(again, 3)
            assert iframe.get_attribute("data-saved-copy") == "true"
            again.expect(view.locator("#stored")).to_have_text("1", timeout=VIEW_MS)
            again.expect(view.locator("#status")).to_have_text("connected", timeout=VIEW_MS)
            shot(again, tmp_path, "frame-nb7-reopened", again.cell(3))
    finally:
        page.close()
