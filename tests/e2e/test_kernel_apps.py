"""MCP Apps in a real kernel, as a frontend receives it: `%mcp call` of a UI tool (the npm example
customer-segmentation, whose data tool answers ~100 K characters) shows one widget output, the View, its text
fallback capped as the call's result is, and the result below it. The first UI tool call of a fresh kernel (the npm
example scenario-modeler, whose tool declares an output schema) records the tool's own time, says it opens the
View meanwhile, and shows its nested result under the View closed and summarised."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.support.kernel_session import Kernel, running_kernel
from tests.support.npm_servers import SCENARIO, SEGMENTATION, node_for

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.kernel, pytest.mark.node]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
VIEW_LINE = ("[seg.get-customer-data has an interactive view (ui://customer-segmentation/mcp-app.html): it renders "
             "in JupyterLab, Notebook 7 or VS Code with the kernel running; run the cell there to open it]")


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    node = node_for(SEGMENTATION)
    with running_kernel(tmp_path_factory.mktemp("kernel-apps")) as k:
        k.ok("%load_ext synapse_nb")
        k.ok(f"%mcp connect seg -- {node} {SEGMENTATION} --stdio", timeout=120)
        yield k


def test_a_ui_tools_call_shows_one_view_with_a_capped_fallback_then_the_result(kernel: Kernel) -> None:
    run = kernel.ok("%mcp call seg.get-customer-data {}", timeout=120)
    widgets = [d for d in run.displays if d["kind"] == "display_data" and WIDGET_VIEW in d["data"]]
    assert len(widgets) == 1, [d["data"].get("text/plain", "")[:80] for d in widgets]
    snapshot, view, result = run.final_outputs()  # the View's snapshot (its text fallback), the View, the result
    assert WIDGET_VIEW in view
    assert view["text/plain"] == ""
    assert 'class="snb-snapshot"' in snapshot["text/html"]
    assert WIDGET_VIEW not in result
    assert result["text/plain"].startswith("seg.get-customer-data → ok (")
    whole = int(kernel.ok("print(len(_.text))").stdout)
    assert whole > 40_000
    fallback = snapshot["text/plain"]
    assert len(fallback) < 4_000  # the call's plain-text cap (3,000 characters) and the View's line
    lines = fallback.splitlines()
    assert lines[:2] == ["{", '  "customers": [']
    assert re.fullmatch(r"… [\d,]+ more lines \([\d,]+ characters\) in \.text of this cell's value \(_\.text\)",
                        lines[-2])
    assert lines[-1] == VIEW_LINE


def test_the_first_ui_call_of_a_kernel_records_the_tools_own_time_under_a_closed_summarised_block(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    node = node_for(SCENARIO)
    with running_kernel(tmp_path_factory.mktemp("kernel-apps-first")) as k:
        k.ok("%load_ext synapse_nb")
        k.ok(f"%mcp connect scen -- {node} {SCENARIO} --stdio", timeout=120)
        run = k.ok("%mcp call scen.get-scenario-data {}", timeout=120)
        said = [str(d["data"].get("text/plain", "")) for d in run.displays]
        assert any(t.startswith("opening the interactive view of scen.get-scenario-data … ") for t in said), said
        shown = float(k.ok("print(repr(_.result.duration_ms))").stdout)
        recorded = k.ok("_rows = %synapse sql SELECT duration_ms FROM tool_calls\n"
                        "print(repr(float(_rows.duration_ms[0])))")
        # the tool's own time (the request, as the hub measured it), not the first call's jsonschema import
        assert float(recorded.stdout) == pytest.approx(shown, rel=1e-9)
        snapshot, view, result = run.final_outputs()  # the View: its text fallback's snapshot, then its view
        assert "snb-snapshot" in snapshot["text/html"]
        assert WIDGET_VIEW in view
        html = result["text/html"]
        assert '<details class="snb-turn-tool" open>' not in html  # under its View the block stays closed
        table = html[html.index("<table"):html.index("</table>")]
        assert re.search(r"\[\d+ items\]|\{\d+ keys: ", table), table[:500]
