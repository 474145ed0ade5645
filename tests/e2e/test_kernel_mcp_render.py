"""`%mcp call` and `%mcp read` in a real kernel, as a frontend receives them (issue 22, section 2): the server's
progress while a whole-cell call runs, a 200-row query as a capped table, and the npm example
customer-segmentation's data (one long line of JSON) and MCP Apps View (its `ui://` resource), each a few
kilobytes in the notebook."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import tools_server
from tests.support.kernel_session import Kernel, running_kernel
from tests.support.npm_servers import SEGMENTATION, node_for

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.kernel]

VIEW_URI = "ui://customer-segmentation/mcp-app.html"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    with running_kernel(tmp_path_factory.mktemp("kernel-mcp-render")) as k:
        k.ok("%load_ext synapse_nb")
        k.ok(f"%mcp connect t -- {tools_server.COMMAND}", timeout=120)
        k.ok(f"%mcp connect shop -- {sys.executable} -m synapse_nb.mcp_client.demo_server", timeout=120)
        yield k


def size_of(outputs: list[dict[str, Any]]) -> int:
    return sum(len(v) for o in outputs for v in o.values() if isinstance(v, str))


def test_a_whole_cell_call_shows_progress_then_the_result_with_seconds(kernel: Kernel) -> None:
    run = kernel.ok("%mcp call t.progress steps=3 seconds=0.4")
    updates = [d["data"] for d in run.displays if d["kind"] == "update_display_data"]
    bars = [u["text/plain"].split("\n")[1] for u in updates if "\n" in u.get("text/plain", "")]
    assert "[#######-------------] 33% step 1 of 3" in bars
    assert "[#############-------] 67% step 2 of 3" in bars
    assert any('<progress value="0.333" max="1"' in u.get("text/markdown", "") for u in updates)
    [final] = run.final_outputs()
    assert re.fullmatch(r"t\.progress → ok \(1\.\d s\)\ntook 3 steps", final["text/plain"])
    assert re.search(r'snb-outcome snb-ok"[^>]*>✓ 1\.\d s</span>', final["text/html"])


def test_a_200_row_query_is_a_table_in_a_scroll_box(kernel: Kernel) -> None:
    run = kernel.ok('%mcp call shop.query sql="SELECT * FROM orders LIMIT 200"')
    [final] = run.final_outputs()
    html = final["text/html"]
    assert "200 rows · 8 columns" in html
    assert "show all (200 rows)" in html
    assert "max-height:22em;overflow:auto" in html
    plain = final["text/plain"]
    assert plain.startswith("shop.query → ok (")
    # the server's fields beside its rows come above them, and stay on the value and on the held DataFrame
    fields = "\ntruncated: false\nrow_count: 200\n"
    assert f"{fields}200 rows · 8 columns (a DataFrame: .df, the fields above: .meta)\n" in plain
    assert len(plain.splitlines()) < 40
    assert kernel.ok("print(_.df.shape, _.meta)").stdout == "(200, 8) {'row_count': 200, 'truncated': False}\n"
    assert kernel.ok("print(globals()[_.held].attrs)").stdout == "{'row_count': 200, 'truncated': False}\n"


@pytest.fixture(scope="module")
def segmentation(kernel: Kernel) -> str:
    node = node_for(SEGMENTATION)
    kernel.ok(f"%mcp connect seg -- {node} {SEGMENTATION} --stdio", timeout=120)
    return "seg"


@pytest.mark.node
def test_one_long_line_of_json_is_indented_and_capped(kernel: Kernel, segmentation: str) -> None:
    run = kernel.ok(f"%mcp call {segmentation}.get-customer-data {{}}", timeout=120)
    # get-customer-data has an MCP Apps View: it is shown above the result, as its snapshot and then its view
    *views, final = run.final_outputs()
    assert views
    assert "snb-snapshot" in views[0]["text/html"]
    assert "application/vnd.jupyter.widget-view+json" in views[-1]
    whole = int(kernel.ok("print(len(_.text))").stdout)
    assert whole > 40_000
    assert size_of([final]) < 45_000
    assert final["text/plain"].splitlines()[1:4] == [
        "2 tables: 'customers', 'segments' (a DataFrame of one: .df_of(NAME))", "{", '  "customers": [']
    assert re.search(r"… [\d,]+ more lines \([\d,]+ characters\) in \.text of this cell's value", final["text/plain"])
    assert re.search(r"show all \([\d,]+ lines\)", final["text/html"])


@pytest.mark.node
def test_an_mcp_app_view_resource_is_one_line(kernel: Kernel, segmentation: str) -> None:
    run = kernel.ok(f"%mcp read {segmentation} {VIEW_URI}")
    outputs = run.final_outputs()
    assert size_of(outputs) < 5_000
    plain = outputs[0]["text/plain"]
    assert plain.startswith(f"seg {VIEW_URI}\ntext/html;profile=mcp-app · ")
    assert re.search(r"an MCP App View \([\d.]+ KB of HTML, in \.text\): ", plain)
    assert int(kernel.ok("print(len(_.text))").stdout) > 100_000  # the whole document stays in the value
