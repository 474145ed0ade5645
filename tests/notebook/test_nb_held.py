"""Results held by the kernel (issue 35) with a real database server: MotherDuck's MCP server (PyPI) on a local
DuckDB file of 50,000 orders, turns through the wire-format model server (which counts the prompt tokens).

A `%%synapse` turn's 50,000-row result reaches the model as a summary under the cap with its name; the model's
`results__sql` GROUP BY over every row gives the exact answer; the user has the DataFrame by name; the history
row has the whole result; `%mcp call` holds too; `%synapse results` lists and drops."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError

from synapse_nb.agent.held_summary import SUMMARY_CHARS
from synapse_nb.notebook.recording.reader import reader
from tests.support.llm_cache import PromptCache
from tests.support.llm_server import LlmServer, call, text, tool_calls
from tests.support.pypi_servers import motherduck

ROWS = 50_000
REGIONS = ("north", "south", "east", "west")
FAKE_KEY = "sk-fake-held-0123456789"
GROUP_BY = ("SELECT region, count(*) AS orders, sum(total) AS revenue FROM execute_query_1 GROUP BY region "
            "ORDER BY region")


def expected_by_region() -> dict[str, tuple[int, float]]:
    """What the orders table holds, computed here from the same formula (the exact answer)."""
    out: dict[str, tuple[int, float]] = {}
    for i in range(ROWS):
        n, total = out.get(REGIONS[i % 4], (0, 0.0))
        out[REGIONS[i % 4]] = (n + 1, total + (i % 97) + (i % 7) / 4)
    return out


def make_orders(python: Path, path: Path) -> None:
    """50,000 orders in a DuckDB file, written by the server's own duckdb (its file format)."""
    regions = "[" + ", ".join(f"'{r}'" for r in REGIONS) + "]"
    subprocess.run([str(python), "-c", (
        "import duckdb, sys; c = duckdb.connect(sys.argv[1]); c.execute(\"CREATE TABLE orders AS SELECT range AS id, "
        f"{regions}[range % 4 + 1] AS region, (range % 97) + (range % 7) / 4 AS total, "
        f"'customer ' || (range % 1000) AS customer FROM range({ROWS})\"); c.close()"
    ), str(path)], check=True, timeout=120)


@pytest.fixture(scope="module")
def orders_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _, python = motherduck()
    path = tmp_path_factory.mktemp("held") / "shop.duckdb"
    make_orders(python, path)
    return path


@pytest.fixture
def model(clean_env: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[LlmServer]:
    with LlmServer(prompt_cache=PromptCache()) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        yield llm


def _connect(ip: Any, db: Path, extra: str = "") -> None:
    command, _ = motherduck()
    ip.line("mcp", f"connect md {extra} -- {command} --db-path {db} --max-rows 100000 --max-chars 100000000")


def _tool_messages(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


@pytest.mark.process
def test_a_50000_row_query_is_held_and_the_models_sql_over_every_row_is_exact(
    ip: Any, orders_db: Path, model: LlmServer
) -> None:
    _connect(ip, orders_db)
    model.queue(tool_calls(call("md__execute_query", {"sql": "SELECT * FROM orders ORDER BY id"}, id="c1")),
                tool_calls(call("results__sql", {"sql": GROUP_BY}, id="c2")), text("north leads."))
    ip.cell("synapse --model openai:gpt-test", "Revenue and orders by region, over every order?")
    result = ip.ns["_synapse"]
    assert result.status == "finished", result.error

    _first, second, third = (r.body for r in model.requests)
    (summary,) = _tool_messages(second)
    assert len(summary) <= SUMMARY_CHARS
    assert "`execute_query_1`" in summary
    assert "50,000 rows x 4 columns" in summary
    assert "results__sql" in summary
    assert "region" in summary
    assert "total" in summary
    assert "results__sql" in [t["function"]["name"] for t in second["tools"]]
    # the answer the model reads is exact: computed over all 50,000 rows
    answer = pd.read_csv(pd.io.common.StringIO(_tool_messages(third)[1])).set_index("region")
    for region, (n, revenue) in expected_by_region().items():
        assert answer.loc[region, "orders"] == n
        assert answer.loc[region, "revenue"] == pytest.approx(revenue)
    # the whole result: the user's DataFrame by name, the turn's list, the history row
    frame = ip.ns["execute_query_1"]
    assert isinstance(frame, pd.DataFrame)
    assert frame.shape == (ROWS, 4)
    assert frame["total"].sum() == pytest.approx(sum(r for _, r in expected_by_region().values()))
    assert result.held == ("execute_query_1",)
    whole = result.calls[0].result.text
    assert len(whole) > 40 * len(summary)
    ip.state.store.flush()
    recorded = reader(ip.state.store).sql(
        "SELECT result_text FROM tool_calls WHERE tool = 'execute_query'")["result_text"].tolist()
    assert recorded == [whole]
    # the model's prompt never carried the rows: every request is a small fraction of the result
    assert result.usage.input_tokens < len(whole) / 4 / 20
    # the cell shows the held table with its name
    assert "held in the kernel as <code>execute_query_1</code>" in ip.published.markdown()
    assert "→ held as execute_query_1" in ip.published.text()


@pytest.mark.process
def test_mcp_call_holds_a_big_table_and_results_lists_and_drops_it(ip: Any, orders_db: Path) -> None:
    _connect(ip, orders_db)
    out = ip.line("mcp", 'call md.execute_query {"sql": "SELECT * FROM orders WHERE id < 30000"}')
    assert out.held == "execute_query_1"
    assert "held as execute_query_1" in repr(out)
    assert "held in the kernel as <code>execute_query_1</code>" in out._repr_mimebundle_()["text/html"]
    assert ip.ns["execute_query_1"].shape == (30000, 4)
    small = ip.line("mcp", 'call md.execute_query {"sql": "SELECT * FROM orders WHERE id < 5"}')
    assert small.held is None
    assert "execute_query_2" not in ip.ns

    listing = ip.line("synapse", "results")
    assert listing.to_dict("records") == [{
        "name": "execute_query_1", "kind": "table", "shape": "30,000 rows x 4 columns", "tool": "md__execute_query",
        "chars": len(out.text), "tokens": -(-len(out.text) // 4)}]
    with pytest.raises(UsageError, match="no held result named 'nope' \\(held: execute_query_1\\)"):
        ip.line("synapse", "results drop nope")
    ip.line("synapse", "results drop --all")
    assert "execute_query_1" not in ip.ns
    assert ip.line("synapse", "results").empty


@pytest.mark.process
def test_a_server_s_hold_budget_and_a_cell_s_decide_what_is_held(ip: Any, orders_db: Path, model: LlmServer) -> None:
    _connect(ip, orders_db, "--hold-over 0")  # this server's results go to the model as text
    sql = "SELECT id, region FROM orders WHERE id < 40"
    model.queue(tool_calls(call("md__execute_query", {"sql": sql})), text("ok"))
    ip.cell("synapse --model openai:gpt-test", "forty orders")
    assert ip.ns["_synapse"].held == ()
    seen = _tool_messages(model.requests[1].body)[0]
    assert json.loads(seen)["rowCount"] == 40

    model.queue(tool_calls(call("md__execute_query", {"sql": sql})), text("ok"))
    ip.cell("synapse --model openai:gpt-test --hold-over 100", "forty orders")  # the cell's budget wins
    assert ip.ns["_synapse"].held == ("execute_query_1",)
    with pytest.raises(UsageError, match="--hold-over"):
        ip.cell("synapse --hold-over lots", "x")
