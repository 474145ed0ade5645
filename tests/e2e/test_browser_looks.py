"""Looks in JupyterLab in Chromium (issue 22 section 5): every text of our outputs reads at WCAG AA (>= 4.5:1
against the background it is drawn on) in JupyterLab Light and in JupyterLab Dark.

One JupyterLab, one notebook: a `%%synapse` turn with a table result, a failing call and a denied one (its
answered approval card), an expanded tool block, the trace widget and the OAuth sign-in card. The page's own
script walks every element of our outputs that has text of its own, composes its colour over the stacked
backgrounds behind it and computes the contrast ratio; the test asserts the lowest. Screenshots of both themes
go to tests/e2e/artifacts/looks-*.png.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser_lab import DEMO, Lab, NotebookPage, failure_shot, model_env, start_lab, write_notebook
from tests.support.llm_server import LlmServer, call, text, tool_calls

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.browser]

SERVER = "warehouse_inventory_reporting"  # long: the trace shows `SERVER.drop_table` whole, with its badge
AUTH_URL = "https://auth.example.com/authorize?client_id=c&state=s"
CELLS = [
    "%load_ext synapse_nb",                                                      # 0
    f"%mcp connect {SERVER} {DEMO}",                                           # 1
    "%%synapse\nShow me everything.",                                            # 2 ok, error, denied
    "%synapse inspect",                                                          # 3 the trace widget
    "from IPython.display import display\nfrom synapse_nb.notebook.questions.sign_in import sign_in_card\n"
    f"display(sign_in_card('notes', {AUTH_URL!r}, paste=True), raw=True)",      # 4 the OAuth card
    f"%mcp inspect {SERVER}",                                                    # 5 the inspector
]
AA = 4.5

# Contrast of each element with text of its own under `root`'s outputs of ours (class snb-*): its colour
# (with its alpha) over the backgrounds of it and its ancestors, composed from the first opaque one down.
CONTRAST_JS = """
(cells) => {
  const parse = (c) => {
    const m = c.match(/rgba?\\(([^)]*)\\)/);
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, below) => [0, 1, 2].map((i) => top[i] * top[3] + below[i] * (1 - top[3])).concat([1]);
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let colour = [255, 255, 255, 1];
    for (let i = layers.length - 1; i >= 0; i--) colour = over(layers[i], colour);
    return colour;
  };
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const out = [];
  for (const cell of cells) {
    const ours = '.jp-OutputArea-output [class*="snb-"], .jp-OutputArea-output [class*="snb-"] *';
    for (const el of cell.querySelectorAll(ours)) {
      const own = [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join('').trim();
      if (!own || el.closest('svg')) continue;
      const style = getComputedStyle(el);
      if (!el.getClientRects().length || style.visibility === 'hidden' || style.display === 'none') continue;
      const bg = background(el);
      const fg = over(parse(style.color), bg);
      const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
      out.push({text: own.slice(0, 40), cls: String(el.className).slice(0, 60), color: style.color,
                bg: 'rgb(' + bg.slice(0, 3).map(Math.round).join(', ') + ')',
                ratio: Math.round((hi + 0.05) / (lo + 0.05) * 100) / 100});
    }
  }
  return out;
}
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, llm: LlmServer) -> Iterator[Lab]:
    with start_lab(tmp_path_factory.mktemp("lab-looks"), model_env(llm)) as lab:
        yield lab


def test_our_text_reads_at_aa_contrast_in_light_and_dark(lab: Lab, browser: Any, llm: LlmServer) -> None:
    name = write_notebook(lab.root / "looks.ipynb", CELLS)
    nb = NotebookPage.open(browser, lab, name, height=2400)
    with failure_shot(nb, "looks"):
        _run_cells(nb, llm)
        light = _contrast(nb, "light")
        _use_theme(nb, "JupyterLab Dark")
        dark = _contrast(nb, "dark")
    low = {theme: [r for r in found if r["ratio"] < AA] for theme, found in (("light", light), ("dark", dark))}
    assert low == {"light": [], "dark": []}, f"text under {AA}:1 contrast: {low}"
    # the walk saw the coloured texts that matter: outcomes (ok, error, denied), the footer, the trace, the card
    for found in (light, dark):
        classes = " ".join(r["cls"] for r in found)
        for part in ("snb-outcome snb-ok", "snb-outcome snb-error", "snb-outcome snb-denied", "snb-footer",
                     "snb-answered", "snb-muted", "snb-origin"):
            assert part in classes, (part, classes)
    nb.expect(nb.output(4).locator(".snb-sign-in .snb-origin")).to_have_text("at https://auth.example.com")


def _run_cells(nb: NotebookPage, llm: LlmServer) -> None:
    expect = nb.expect
    nb.run(0)
    nb.run(1, timeout=90_000)
    llm.queue(
        tool_calls(
            call(f"{SERVER}__query", {"sql": "SELECT product_id, name FROM products LIMIT 3"}),
            call(f"{SERVER}__fail", {"message": "the disk is on fire"}),
            call(f"{SERVER}__drop_table", {"table": "orders"}),
        ),
        text("Three products; one call failed and one was denied."),
    )
    nb.run(2, wait=False)
    nb.answer(2, "n")
    nb.wait_done(2)
    expect(nb.cell(2).locator(".snb-answered")).to_contain_text("denied")
    expect(nb.cell(2).locator("div.snb-turn-tool")).to_have_count(3)
    nb.page.evaluate("() => document.querySelectorAll('details.snb-turn-tool').forEach((d) => { d.open = true; })")
    nb.run(3)
    trace = nb.output(3).locator(".snb-trace.jupyter-widgets")
    expect(trace).to_be_visible(timeout=30_000)
    trace.locator("details.snb-span").first.evaluate("(d) => { d.open = true; }")
    # a long tool name is shown whole and its badge stays in view, inside the label's column
    for tool, flag in (("fail", "error"), ("drop_table", "denied")):
        label = trace.locator(".snb-label", has_text=f"{SERVER}.{tool}")
        expect(label.locator(".snb-badge")).to_have_text(flag)
        name, badge, box = (label.locator(".snb-name").bounding_box(), label.locator(".snb-badge").bounding_box(),
                            label.bounding_box())
        assert name is not None
        assert badge is not None
        assert box is not None
        assert label.locator(".snb-name").evaluate("(e) => e.scrollWidth <= e.clientWidth + 1"), tool
        assert badge["x"] + badge["width"] <= box["x"] + box["width"] + 1, (tool, badge, box)
        assert badge["y"] + badge["height"] <= box["y"] + box["height"] + 1, (tool, badge, box)
    nb.run(4)
    expect(nb.output(4).locator(".snb-sign-in")).to_contain_text("Sign in to notes")
    nb.run(5)
    inspector = nb.output(5).locator(".snb-inspector.jupyter-widgets")
    inspector.locator(".snb-tool-list select").select_option(label="list_tables")
    tool = inspector.locator(".snb-tool").filter(has=nb.page.locator("code", has_text=f"{SERVER}__list_tables"))
    tool.locator("button.snb-call").click()  # a result with its badge, and a Recent-calls row
    expect(tool.locator(".snb-history table")).to_contain_text("ok", timeout=60_000)


def _contrast(nb: NotebookPage, theme: str) -> list[dict[str, Any]]:
    cells = [nb.cell(i).element_handle() for i in range(len(CELLS))]
    found: list[dict[str, Any]] = nb.page.evaluate(CONTRAST_JS, cells)
    nb.shot(f"looks-{theme}")
    for i in (2, 3, 4, 5):
        nb.shot(f"looks-{theme}-cell{i}", nb.cell(i))
    return found


def _use_theme(nb: NotebookPage, theme: str) -> None:
    """Settings > Theme > THEME, then wait until the page says it is dark and the notebook is drawn dark."""
    page = nb.page
    page.get_by_role("menuitem", name="Settings", exact=True).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Theme$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(theme)}$")).click()
    page.wait_for_function(
        """(name) => document.body.dataset.jpThemeName === name && document.body.dataset.jpThemeLight === 'false'
            && getComputedStyle(document.querySelector('.jp-Notebook')).backgroundColor !== 'rgb(255, 255, 255)'""",
        arg=theme, timeout=30_000,
    )
