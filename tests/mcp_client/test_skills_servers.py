"""Skills from real servers over stdio and streamable HTTP: the demo server (its `shop-revenue` skill) and a fastmcp
(PyPI) server serving a skill folder with fastmcp's own SEP-2640 extension (tests/support/fastmcp_skills.py). The
skill is listed on connect, loaded (SKILL.md verified) and its reference file read; a skill changed on disk after
the listing is refused by its digest."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from synapse_nb.errors import SkillError
from synapse_nb.mcp_client.hub import McpHub
from tests.mcp_client.mcp_helpers import WebServer, demo_stdio
from tests.support.local_servers import free_port, stop, wait_listening

pytestmark = [pytest.mark.anyio, pytest.mark.process]

REPO = Path(__file__).resolve().parents[2]
FASTMCP_SERVER = REPO / "tests" / "support" / "fastmcp_skills.py"
FASTMCP_PYTHON = REPO / ".tools" / "fastmcp" / "bin" / "python"
DEMO_SKILLS = REPO / "synapse_nb" / "mcp_client" / "demo_skills"
START_CPU = 60.0


def fastmcp_python() -> str:
    if not FASTMCP_PYTHON.is_file():
        pytest.fail(f"fastmcp is not installed at {FASTMCP_PYTHON}: run `make fastmcp`")
    return str(FASTMCP_PYTHON)


@pytest.fixture
def skills_root(tmp_path: Path) -> Path:
    """A copy of the demo's skill folder the test may change under the server."""
    root = tmp_path / "skills"
    shutil.copytree(DEMO_SKILLS, root)
    return root


@pytest.fixture
def fastmcp_http(skills_root: Path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([fastmcp_python(), str(FASTMCP_SERVER), str(skills_root), "http", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not wait_listening(proc, port, START_CPU):
            pytest.fail("the fastmcp skills server did not start")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc, timeout=10)


async def load_and_read(hub: McpHub, server: str) -> None:
    [entry] = hub.skills.listed(server)
    assert entry.key == f"{server}/shop-revenue"
    assert entry.description.startswith("Compute the synapse-demo shop's revenue")
    loaded = await hub.skills.load_skill(entry.key)
    assert "orders.status = 'delivered'" in loaded.body.text
    assert loaded.files == ("references/margin.md",)
    margin = await hub.skills.read_skill_file(loaded.entry, "references/margin.md")
    assert margin.text.startswith("# Margin")


async def test_the_demo_servers_skill_over_stdio() -> None:
    async with McpHub() as hub:
        await hub.connect("demo", **demo_stdio())  # type: ignore[arg-type]
        await load_and_read(hub, "demo")


async def test_the_demo_servers_skill_over_http(demo_http: WebServer) -> None:
    async with McpHub() as hub:
        await hub.connect("demo", url=demo_http.url)
        await load_and_read(hub, "demo")


async def test_a_fastmcp_servers_skill_over_stdio_and_a_change_after_listing_is_refused(skills_root: Path) -> None:
    async with McpHub() as hub:
        await hub.connect("fm", command=fastmcp_python(), args=[str(FASTMCP_SERVER), str(skills_root)])
        await load_and_read(hub, "fm")
        margin = skills_root / "shop-revenue" / "references" / "margin.md"
        margin.write_text(margin.read_text().replace("share of revenue", "share of REVENUE"))
        held = hub.skills.find("fm/shop-revenue")
        with pytest.raises(SkillError, match=r"references/margin\.md does not match its entry's digest"):
            await hub.skills.read_skill_file(held, "references/margin.md")
        [fresh] = await hub.skills.refresh("fm")
        assert fresh.file("skill://shop-revenue/references/margin.md") != held.file(
            "skill://shop-revenue/references/margin.md")
        assert "REVENUE" in (await hub.skills.read_skill_file(fresh, "references/margin.md")).text


async def test_a_fastmcp_servers_skill_over_http(fastmcp_http: str, skills_root: Path) -> None:
    async with McpHub() as hub:
        await hub.connect("fm", url=fastmcp_http)
        await load_and_read(hub, "fm")
