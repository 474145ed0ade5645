"""The MCP inspector at 760 px and at 1400 px in JupyterLab in Chromium (issue 22 section 5): below ~800 px the tool
list stacks above the tool's form instead of keeping a fixed 210 px column, every button keeps its whole label,
no table, select or text area runs past the edge that clips it (at 760 px the stacked Tools tab once ran ~13 px
into its panel's padding), and text areas and selects keep their right border. Screenshots go to the test's
tmp_path and to tests/e2e/artifacts/inspector-760.png and inspector-1400.png.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser_lab import DEMO, Lab, NotebookPage, failure_shot, start_lab, write_notebook

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.browser]

CELLS = [
    "%load_ext synapse_nb",
    f"%mcp connect demo {DEMO}",
    "%mcp call demo.echo text=first",
    "%mcp inspect",
]

# Each measured thing inside the inspector: buttons whose label is cut (the text is wider than the button), and
# boxes (tables, text areas, inputs) whose right edge passes the inspector's, or whose right border is not drawn.
MEASURE_JS = """
(root) => {
  const edge = root.getBoundingClientRect().right + 0.5;
  const visible = (e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
  const cut = [...root.querySelectorAll('button')].filter(visible)
    .filter((b) => b.scrollWidth > b.clientWidth + 1)
    .map((b) => b.textContent.trim() + ' ' + b.scrollWidth + '>' + b.clientWidth);
  // the right edge an element is cut at: the inspector's, or that of an ancestor that hides its overflow
  const clip = (e) => {
    let right = edge;
    for (let a = e.parentElement; a && a !== root.parentElement; a = a.parentElement) {
      // any ancestor that does not let it show (hidden, clip, or a scroll box: its right border scrolls away)
      const style = getComputedStyle(a);
      if (style.overflowX !== 'visible') {
        right = Math.min(right, a.getBoundingClientRect().right - parseFloat(style.borderRightWidth) + 0.5);
      }
    }
    return right;
  };
  const past = [...root.querySelectorAll('table, textarea, input[type=text], select')].filter(visible)
    .filter((e) => e.getBoundingClientRect().right > clip(e))
    .map((e) => e.tagName + '.' + e.className + ' right ' + Math.round(e.getBoundingClientRect().right)
         + ' > ' + Math.round(clip(e)));
  const borderless = [...root.querySelectorAll('textarea, select')].filter(visible)
    .filter((t) => parseFloat(getComputedStyle(t).borderRightWidth) === 0
                   || t.getBoundingClientRect().right > t.parentElement.getBoundingClientRect().right + 0.5)
    .map((t) => t.tagName + ' in ' + t.parentElement.className);
  // text of an HTML widget wider than its box: cut at the right (a long command path, a long name)
  const clipped = [...root.querySelectorAll('.widget-html-content')].filter(visible)
    .filter((e) => e.scrollWidth > e.clientWidth + 1)
    .map((e) => e.textContent.trim().slice(0, 60) + ' ' + e.scrollWidth + '>' + e.clientWidth);
  // tab labels (servers, a server's Tools / Resources / Prompts) cut short by their tab
  const tabs = [...root.querySelectorAll('.lm-TabBar-tabLabel')].filter(visible)
    .filter((e) => e.scrollWidth > e.clientWidth + 1)
    .map((e) => e.textContent.trim() + ' ' + e.scrollWidth + '>' + e.clientWidth);
  return {cut, past, borderless, clipped, tabs};
}
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with start_lab(tmp_path_factory.mktemp("lab-inspector-width")) as lab:
        yield lab


@pytest.mark.parametrize("width", [760, 1400])
def test_the_inspector_fits_the_window(lab: Lab, browser: Any, width: int, tmp_path: Path) -> None:
    name = write_notebook(lab.root / f"inspector-{width}.ipynb", CELLS)
    nb = NotebookPage.open(browser, lab, name)
    nb.page.set_viewport_size({"width": width, "height": 1300})
    expect = nb.expect
    with failure_shot(nb, f"inspector-{width}"):
        for i in range(len(CELLS)):
            nb.run(i, timeout=90_000)
        inspector = nb.output(3).locator(".snb-inspector.jupyter-widgets")
        expect(inspector).to_be_visible(timeout=30_000)
        server = inspector.locator(".snb-server-demo")
        server.locator(".lm-TabBar-tab", has_text="Tools").click()
        server.locator(".snb-tool-list select").select_option(label="echo")
        tool = server.locator(".snb-tool").filter(has=nb.page.locator("code", has_text="demo__echo"))
        expect(tool.locator("button.snb-call")).to_be_visible()
        tool.locator("button.snb-call").scroll_into_view_if_needed()
        shot = tmp_path / f"inspector-{width}.png"
        shutil.copy(nb.shot(f"inspector-{width}", inspector), shot)

        found = inspector.evaluate(MEASURE_JS)
        assert found["cut"] == [], f"buttons with cut labels at {width} px: {found['cut']}"
        assert found["borderless"] == [], f"text areas without a right border at {width} px: {found['borderless']}"
        listing = server.locator(".snb-tool-list").bounding_box()
        detail = tool.bounding_box()
        assert listing is not None
        assert detail is not None
        if width < 800:  # stacked: the list above the form, as wide as the form
            assert listing["y"] + listing["height"] <= detail["y"] + 1, (listing, detail)
            assert listing["width"] > 300, listing
        else:  # side by side
            assert listing["x"] + listing["width"] <= detail["x"] + 1, (listing, detail)
    assert found["past"] == [], f"boxes past the inspector's edge at {width} px: {found['past']}"
    assert found["clipped"] == [], f"text cut at the right at {width} px: {found['clipped']}"
    assert found["tabs"] == [], f"tab labels cut at {width} px: {found['tabs']}"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", shot
    assert shot.stat().st_size > 1000, shot
