"""The elicitation card in JupyterLab in Chromium (issue 22 section 3): a `%%synapse --background` run whose tool
asks server-everything's 13-field form, answered by the widget card, at 1400 px and 760 px, light and dark.

Every input's right edge stays inside the card, every field's label is shown whole (wrapped, never cut), the
buttons keep their labels after Submit, every text reads at 4.5:1 (test_browser_looks' measure), and the
answered card keeps its place among the cell's outputs (the tool's line and the run's answer come after it).
Screenshots go to the test's tmp_path (and tests/e2e/artifacts/).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_browser_looks import AA, CONTRAST_JS
from tests.support.browser_lab import Lab, NotebookPage, failure_shot, start_lab, write_notebook
from tests.support.npm_servers import EVERYTHING, node_for

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.browser]

SCRIPT = [{"match": "fill in", "tool": "everything__trigger-elicitation-request", "arguments": {},
           "answer": "the server said: {result}"}]
FIELDS = 13  # server-everything's form
LABEL = '[class*="snb-field-"] > .widget-html:first-child'  # each field's label: the first part of its row

# What a user would see broken in the card: inputs whose right edge passes the card's inner edge, labels whose
# text is wider than their box (cut), buttons whose label is cut; plus the card's place among the outputs.
MEASURE_JS = """
(card) => {
  const inner = card.getBoundingClientRect().right - parseFloat(getComputedStyle(card).borderRightWidth)
                - parseFloat(getComputedStyle(card).paddingRight) + 0.5;
  const visible = (e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
  const boxes = 'input[type=text], input[type=number], textarea, select, .widget-dropdown, .widget-select, '
                + '.widget-text, .widget-textarea';
  const past = [...card.querySelectorAll(boxes)].filter(visible)
    .filter((e) => e.getBoundingClientRect().right > inner)
    .map((e) => e.tagName + '.' + String(e.className).slice(0, 40) + ' right '
         + Math.round(e.getBoundingClientRect().right) + ' > ' + Math.round(inner));
  const cut = (e) => e.scrollWidth > e.clientWidth + 1 || getComputedStyle(e).textOverflow === 'ellipsis'
                     && e.scrollWidth > e.clientWidth;
  const label = '[class*="snb-field-"] > .widget-html:first-child';
  const labels = [...card.querySelectorAll(label + ', ' + label + ' *')].filter(visible)
    .filter(cut).map((e) => e.textContent.trim() + ' ' + e.scrollWidth + '>' + e.clientWidth);
  const buttons = [...card.querySelectorAll('button')].filter(visible)
    .filter((b) => b.scrollWidth > b.clientWidth + 1 || b.getBoundingClientRect().width < 40)
    .map((b) => b.textContent.trim() + ' ' + b.scrollWidth + '>' + b.clientWidth);
  const output = card.closest('.jp-OutputArea-child');
  const outputs = [...output.parentElement.children];
  const place = outputs.indexOf(output);
  const above = outputs.slice(0, place).map((o) => o.innerText).join(' ');
  const texts = [...card.querySelectorAll(label)].map((e) => e.textContent.trim());
  return {past, labels, buttons, place, texts, above};
}
"""

# Text of an HTML widget wider than its box (cut at the right: a long path, a long key), in `root`.
CLIPPED_JS = """
(root) => [...root.querySelectorAll('.widget-html-content')]
  .filter((e) => e.getClientRects().length > 0 && e.scrollWidth > e.clientWidth + 1)
  .map((e) => e.textContent.trim().slice(0, 60) + ' ' + e.scrollWidth + '>' + e.clientWidth)
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    node_for(EVERYTHING)
    with start_lab(tmp_path_factory.mktemp("lab-elicitation")) as lab:
        (lab.root / "form.json").write_text(json.dumps(SCRIPT))
        yield lab


@pytest.mark.parametrize("width", [1400, 760])
def test_the_elicitation_card_fits_and_stays_in_place(lab: Lab, browser: Any, width: int, tmp_path: Path) -> None:
    cells = [
        "%load_ext synapse_nb",
        f"%mcp connect everything -- {shutil.which('node')} {EVERYTHING} stdio",
        "%%synapse --model scripted:form.json --background --approve auto --out job\nfill in the form",
        "print((await job).text[:60])",
    ]
    name = write_notebook(lab.root / f"elicit-{width}.ipynb", cells)
    nb = NotebookPage.open(browser, lab, name, height=2400)
    nb.page.set_viewport_size({"width": width, "height": 2400})
    expect = nb.expect
    shots: list[Path] = []
    with failure_shot(nb, f"elicit-{width}"):
        _use_theme(nb, "JupyterLab Light")
        nb.run(0)
        nb.run(1, timeout=90_000)
        nb.run(2, timeout=90_000)
        card = nb.output(2).locator(".snb-elicitation")
        expect(card.locator("button", has_text="Submit")).to_be_visible(timeout=60_000)
        before = {}
        for theme in ("JupyterLab Light", "JupyterLab Dark"):
            _use_theme(nb, theme)
            shots.append(_shot(nb, card, tmp_path, f"elicit-{width}-{theme.split()[-1].lower()}-open"))
            before[theme] = card.evaluate(MEASURE_JS)
            before[theme]["low"] = [r for r in nb.page.evaluate(CONTRAST_JS, [nb.cell(2).element_handle()])
                                    if r["ratio"] < AA]
        expect(card.locator(LABEL)).to_have_count(FIELDS)
        card.locator(".snb-field-name input").fill("Ada")  # the one required field
        card.locator("button", has_text="Submit").click()
        expect(card).to_contain_text("accepted", timeout=30_000)
        nb.run(3, timeout=90_000)  # the run is over: its answer is in cell 2's outputs
        expect(nb.output(3)).to_contain_text("the server said")
        after = {}
        for theme in ("JupyterLab Dark", "JupyterLab Light"):
            _use_theme(nb, theme)
            shots.append(_shot(nb, card, tmp_path, f"elicit-{width}-{theme.split()[-1].lower()}-answered"))
            after[theme] = card.evaluate(MEASURE_JS)
    for path in shots:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path
        assert path.stat().st_size > 1000, path
    for theme, found in before.items():
        assert found["past"] == [], f"{theme} {width} px: inputs past the card: {found['past']}"
        assert found["labels"] == [], f"{theme} {width} px: labels cut: {found['labels']}"
        assert found["buttons"] == [], f"{theme} {width} px: buttons cut: {found['buttons']}"
        assert found["low"] == [], f"{theme} {width} px: text under {AA}:1 contrast: {found['low']}"
        shown = " ".join(found["texts"])
        assert "untitledSingleSelectEnum" in shown, shown  # the whole key (wrapped, not cut) ...
        assert "String with email format" in shown, shown  # ... and a title that says more than the key
    for theme, found in after.items():
        assert found["buttons"] == [], f"{theme} {width} px: buttons cut after Submit: {found['buttons']}"
        assert found["place"] == before["JupyterLab Light"]["place"], (before, after)
        # nothing written after the question lands above it: the tool's line and the answer go on below
        assert "the server said" not in found["above"], found["above"][-300:]
        assert "everything__trigger-elicitation-request" not in found["above"], found["above"][-300:]


def _shot(nb: NotebookPage, card: Any, tmp_path: Path, name: str, output: int = 2) -> Path:
    """The card's cell output (all of it) as a PNG in tmp_path, and the card alone in the artifacts folder."""
    path = tmp_path / f"{name}.png"
    card.scroll_into_view_if_needed()
    nb.output(output).screenshot(path=str(path))
    shutil.copy(path, nb.shot(name, card).parent / path.name)
    return path


def _use_theme(nb: NotebookPage, theme: str) -> None:
    """Settings > Theme > THEME, then wait until the page says so."""
    page = nb.page
    if page.evaluate("() => document.body.dataset.jpThemeName") == theme:
        return
    page.get_by_role("menuitem", name="Settings", exact=True).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Theme$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(theme)}$")).click()
    light = "false" if "Dark" in theme else "true"
    page.wait_for_function(
        "([name, light]) => document.body.dataset.jpThemeName === name && document.body.dataset.jpThemeLight === light",
        arg=[theme, light], timeout=30_000,
    )


def test_the_inspector_asks_in_the_same_card_at_760_px(lab: Lab, browser: Any, tmp_path: Path) -> None:
    """A call from the inspector's form: the server's question shows in the inspector's server card, fitting it."""
    cells = [
        "%load_ext synapse_nb",
        f"%mcp connect everything -- {shutil.which('node')} {EVERYTHING} stdio",
        "%mcp inspect everything",
    ]
    name = write_notebook(lab.root / "elicit-inspector.ipynb", cells)
    nb = NotebookPage.open(browser, lab, name, height=2400)
    nb.page.set_viewport_size({"width": 760, "height": 2400})
    expect = nb.expect
    with failure_shot(nb, "elicit-inspector"):
        _use_theme(nb, "JupyterLab Light")
        for i in range(len(cells)):
            nb.run(i, timeout=90_000)
        inspector = nb.output(2).locator(".snb-inspector.jupyter-widgets")
        inspector.locator(".snb-tool-list select").select_option(label="trigger-elicitation-request")
        tool = inspector.locator(".snb-tool").filter(
            has=nb.page.locator("code", has_text="everything__trigger-elicitation-request"))
        tool.locator("button.snb-call").click()
        card = inspector.locator(".snb-elicitation")
        expect(card.locator("button", has_text="Submit")).to_be_visible(timeout=60_000)
        expect(card.locator(LABEL)).to_have_count(FIELDS)
        open_shot = _shot(nb, card, tmp_path, "elicit-inspector-760-open", output=2)
        found = card.evaluate(MEASURE_JS)
        clipped = inspector.evaluate(CLIPPED_JS)
        card.locator("button", has_text="Decline").click()
        expect(tool).to_contain_text("declined", timeout=30_000)
    assert open_shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", open_shot
    assert found["past"] == [], f"inputs past the card in the inspector: {found['past']}"
    assert found["labels"] == [], f"labels cut in the inspector: {found['labels']}"
    assert found["buttons"] == [], f"buttons cut in the inspector: {found['buttons']}"
    assert clipped == [], f"text cut at the right in the inspector: {clipped}"
