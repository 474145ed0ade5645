"""Tables inside real servers' results keep what the server said beside them (issue 38, items 5 and 8):
motherduck's `warning` and `truncated` above its rows and on the result, fastmcp's `{"result": "<table>"}`,
a Markdown table inside prose, and one of several lists of records picked by name."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.pypi_servers import motherduck


def _database(python: Path, path: Path) -> None:
    """A DuckDB file made by the server's own duckdb (its file format), 3,000 rows in `t`."""
    subprocess.run([str(python), "-c", (
        "import duckdb, sys; c = duckdb.connect(sys.argv[1]); "
        "c.execute(\"CREATE TABLE t AS SELECT range AS id, 'n' || range AS name FROM range(3000)\"); c.close()"
    ), str(path)], check=True, timeout=120)


@pytest.mark.process
def test_motherduck_s_warning_is_shown_above_its_rows_and_kept_on_the_result(ip: Any, tmp_path: Path) -> None:
    command, python = motherduck()
    db = tmp_path / "shop.duckdb"
    _database(python, db)
    ip.line("mcp", f"connect md -- {command} --db-path {db}")
    out = ip.line("mcp", 'call md.execute_query {"sql": "SELECT * FROM t ORDER BY id"}')
    assert not out.result.is_error, out.text

    warning = "Results limited to 1,024 rows. Query returned more data."
    assert out.meta["warning"] == warning
    assert out.meta["truncated"] is True
    frame = out.df
    assert len(frame) == 1024
    assert list(frame.columns) == ["id", "name"]
    assert frame.attrs["warning"] == warning
    assert frame.attrs["truncated"] is True

    plain = repr(out).splitlines()
    assert plain[1:3] == ["truncated: true", f"warning: {warning}"]  # warnings first, before the row count
    html = out._repr_mimebundle_()["text/html"]
    shown, count = html.index("snb-table-warning"), html.index("1,024 rows · 2 columns")
    assert shown < count
    assert warning in html[shown:count]


# A fastmcp server (the fastmcp of motherduck's venv): a returned string arrives as `{"result": "..."}`.
SHAPES = '''
from fastmcp import FastMCP
server = FastMCP("shapes")
TABLE = "| name | spend |\\n|---|---|\\n| Ada | 12 |\\n| Bo | 7 |"
@server.tool()
def table() -> str:
    return TABLE
@server.tool()
def summary() -> str:
    return "Top customers this month:\\n\\n" + TABLE + "\\n\\nFigures in EUR."
@server.tool()
def shop() -> dict:
    return {"customers": [{"id": 1, "name": "Ada"}, {"id": 2, "name": "Bo"}],
            "orders": [{"id": 9, "customer": 1}], "nextCursor": "abc"}
server.run("stdio", show_banner=False)
'''


@pytest.mark.process
def test_fastmcp_s_tables_in_a_wrapped_string_in_prose_and_among_several_lists(ip: Any, tmp_path: Path) -> None:
    _, python = motherduck()
    script = tmp_path / "shapes.py"
    script.write_text(SHAPES)
    ip.line("mcp", f"connect shapes -- {python} {script}")

    table = ip.line("mcp", "call shapes.table")
    assert table.result.structured_content == {"result": table.text}
    assert table.df.to_dict("records") == [{"name": "Ada", "spend": "12"}, {"name": "Bo", "spend": "7"}]

    summary = ip.line("mcp", "call shapes.summary")  # a Markdown table inside prose
    assert summary.df.to_dict("records") == [{"name": "Ada", "spend": "12"}, {"name": "Bo", "spend": "7"}]
    assert summary.meta == {"text": "Top customers this month:\n\nFigures in EUR."}
    assert "<table" in summary._repr_mimebundle_()["text/html"]

    shop = ip.line("mcp", "call shapes.shop")  # two lists of records: pick one by name
    customers = shop.df_of("customers")
    assert customers.to_dict("records") == [{"id": 1, "name": "Ada"}, {"id": 2, "name": "Bo"}]
    assert customers.attrs == {"nextCursor": "abc"}
    assert shop.df_of("orders").to_dict("records") == [{"id": 9, "customer": 1}]
    assert "2 tables: 'customers', 'orders' (a DataFrame of one: .df_of(NAME))" in repr(shop)
    with pytest.raises(ValueError, match="no table 'people'; its tables: 'customers', 'orders'"):
        shop.df_of("people")
