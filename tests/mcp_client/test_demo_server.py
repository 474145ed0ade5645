"""The demo server's tools, in process (fast): data tools, read-only SQL, the misbehaving tools' results."""

from __future__ import annotations

import base64
import contextlib
import sqlite3
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path
from typing import Any

import mcp.types as mt
import pytest
from mcp import Client

from synapse_nb.mcp_client import demo_server
from synapse_nb.mcp_client.demo_server import build_server, load_database
from tests.support import tools_server

SHOP_TOOLS = {"list_tables", "describe_table", "query", "summarize_column", "drop_table"}
TEST_TOOLS = {
    "echo", "sleep", "progress", "cancellations", "fail", "crash", "garbage", "image", "large", "env", "add_tool",
}


async def call(name: str, args: dict[str, Any] | None = None) -> mt.CallToolResult:
    async with Client(tools_server.build_server()) as client:
        return await client.call_tool(name, args or {})


def text(result: mt.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, mt.TextContent)
    return block.text


def test_bundled_tables_load_with_realistic_sizes() -> None:
    with contextlib.closing(load_database()) as db:
        counts = {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("products", "customers", "orders")}
        orphan = db.execute("SELECT COUNT(*) FROM orders o LEFT JOIN customers c USING (customer_id) "
                            "WHERE c.customer_id IS NULL").fetchone()[0]
    assert counts == {"products": 20, "customers": 50, "orders": 300}
    assert orphan == 0


@pytest.mark.anyio
async def test_the_database_is_open_only_while_a_session_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    # An unclosed sqlite3 connection is a ResourceWarning (so a test failure) from Python 3.13 on.
    opened: list[sqlite3.Connection] = []

    def recording_load() -> sqlite3.Connection:
        opened.append(load_database())
        return opened[-1]

    async def one(client: Client) -> Any:
        result = await client.call_tool("query", {"sql": "SELECT COUNT(*) AS n FROM products"})
        assert not result.is_error, text(result)
        return result.structured_content["rows"]  # type: ignore[index]

    monkeypatch.setattr(demo_server, "load_database", recording_load)
    server = build_server()
    assert opened == []
    async with Client(server) as first:
        async with Client(server) as second:  # overlapping sessions (SSE connections) share one database
            assert await one(second) == [[20]]
        assert await one(first) == [[20]]  # the other session's end did not close it
    assert len(opened) == 1
    async with Client(server) as later:  # a later session loads it again
        assert await one(later) == [[20]]
    assert len(opened) == 2
    for db in opened:
        with pytest.raises(sqlite3.ProgrammingError, match="closed"):
            db.execute("SELECT 1")


# tests/support/waiting_tools.py
WAITING_TOOLS = {"fire", "progress_held", "question", "sign_in", "ask_when_fired", "sample_when_fired"}


@pytest.mark.anyio
async def test_tool_names_and_annotations() -> None:
    async with Client(build_server()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        info = client.server_info
    assert info is not None
    assert info.name == "synapse-demo"
    assert set(tools) == SHOP_TOOLS  # what a user's quickstart lists: the shop, no test tools
    async with Client(tools_server.build_server()) as client:
        assert {t.name for t in (await client.list_tools()).tools} == SHOP_TOOLS | TEST_TOOLS | WAITING_TOOLS
    for name in ("list_tables", "describe_table", "query", "summarize_column"):
        annotations = tools[name].annotations
        assert annotations is not None
        assert annotations.read_only_hint is True
    drop = tools["drop_table"].annotations
    assert drop is not None
    assert drop.destructive_hint is True


@pytest.mark.anyio
async def test_query_returns_a_table_and_structured_rows() -> None:
    result = await call("query", {"sql": "SELECT category, COUNT(*) AS n FROM products GROUP BY 1 ORDER BY 1"})
    assert not result.is_error
    assert text(result).startswith("| category | n |")
    assert result.structured_content == {
        "columns": ["category", "n"],
        "rows": [["Accessories", 5], ["Coffee", 5], ["Equipment", 5], ["Gift", 1], ["Tea", 4]],
        "row_count": 5, "truncated": False,
    }


@pytest.mark.anyio
@pytest.mark.parametrize("sql", [
    "DELETE FROM orders",
    "  -- sneaky\nUPDATE products SET unit_price = 0",
    "SELECT 1; DROP TABLE orders",
    "WITH x AS (SELECT 1) DELETE FROM orders",
    "ATTACH DATABASE ':memory:' AS other",
    "PRAGMA writable_schema = ON",
])
async def test_query_is_read_only(sql: str) -> None:
    result = await call("query", {"sql": sql})
    assert result.is_error, text(result)
    assert (await call("query", {"sql": "SELECT COUNT(*) AS n FROM orders"})).structured_content["rows"] == [[300]]  # type: ignore[index]


@pytest.mark.anyio
async def test_describe_and_summarize() -> None:
    described = await call("describe_table", {"table": "orders"})
    assert "order_date (TEXT)" in text(described)
    assert described.structured_content is not None
    assert described.structured_content["rows"] == 300
    unknown = await call("describe_table", {"table": "nope"})
    assert unknown.is_error
    assert "customers, orders, products" in text(unknown)
    summary = await call("summarize_column", {"table": "orders", "column": "quantity"})
    assert summary.structured_content is not None
    assert summary.structured_content["count"] == 300
    assert summary.structured_content["min"] >= 1
    status = await call("summarize_column", {"table": "orders", "column": "status"})
    assert status.structured_content is not None
    assert {t["value"] for t in status.structured_content["top"]} >= {"delivered", "cancelled"}
    bad = await call("summarize_column", {"table": "orders", "column": "x; DROP"})
    assert bad.is_error


@pytest.mark.anyio
async def test_misbehaving_tools_in_process() -> None:
    failed = await call("fail", {"message": "no luck"})
    assert failed.is_error
    assert text(failed) == "no luck"
    assert len(text(await call("large", {"kb": 3}))) == 3 * 1024
    assert (await call("env", {"name": "PATH"})).structured_content == {"name": "PATH", "set": True}
    assert "pretended" in text(await call("drop_table", {"table": "orders"}))


@pytest.mark.anyio
async def test_image_is_a_valid_png() -> None:
    result = await call("image")
    block = result.content[0]
    assert isinstance(block, mt.ImageContent)
    assert block.mime_type == "image/png"
    png = base64.b64decode(block.data)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    length = struct.unpack(">I", png[33:37])[0]
    assert png[37:41] == b"IDAT"
    raw = zlib.decompress(png[41:41 + length])
    assert len(raw) == height * (1 + 3 * width)


@pytest.mark.anyio
async def test_resource_and_prompt() -> None:
    async with Client(build_server()) as client:
        resources = (await client.list_resources()).resources
        # the schema, and the files of its skill (SEP-2640), the SKILL.md named and described from its front matter
        assert [str(r.uri) for r in resources] == [  # the schema first: the inspector offers it to read first
            "demo://schema", "skill://shop-revenue/SKILL.md", "skill://shop-revenue/references/margin.md"]
        skill_md = next(r for r in resources if str(r.uri).endswith("SKILL.md"))
        assert (skill_md.name, skill_md.mime_type) == ("shop-revenue", "text/markdown")
        assert skill_md.description is not None
        assert skill_md.description.startswith("Compute the synapse-demo shop's revenue")
        contents = (await client.read_resource("demo://schema")).contents[0]
        assert isinstance(contents, mt.TextResourceContents)
        assert "## orders" in contents.text
        prompts = (await client.list_prompts()).prompts
        assert [p.name for p in prompts] == ["explore_table"]
        prompt = await client.get_prompt("explore_table", {"table": "customers"})
        assert "customers" in str(prompt.messages[0].content)


@pytest.mark.process
def test_wheel_carries_the_demo_data(tmp_path: Path, repo_root: Path) -> None:
    code = f"from hatchling.build import build_wheel; print(build_wheel({str(tmp_path)!r}))"
    name = subprocess.run([sys.executable, "-c", code], cwd=repo_root, capture_output=True, text=True,
                          check=True).stdout.strip().splitlines()[-1]
    files = set(zipfile.ZipFile(tmp_path / name).namelist())
    for table in ("products", "customers", "orders"):
        assert f"synapse_nb/mcp_client/demo_data/{table}.csv" in files
    assert "synapse_nb/mcp_client/demo_server.py" in files
    for skill_file in ("SKILL.md", "references/margin.md"):  # its skill, served from the wheel
        assert f"synapse_nb/mcp_client/demo_skills/shop-revenue/{skill_file}" in files
    assert not [f for f in files if "waiting" in f or "tools_server" in f]  # the test tools stay in tests/


@pytest.mark.anyio
async def test_progress_reports_each_step_with_a_message() -> None:
    reports: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    async with Client(tools_server.build_server()) as client:
        result = await client.call_tool("progress", {"steps": 3, "seconds": 0}, progress_callback=on_progress)
    assert text(result) == "took 3 steps"
    assert reports == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]
