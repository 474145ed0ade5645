"""Skills from servers in the notebook (SEP-2640): `%mcp skills`, and a `%%synapse` turn through the wire-format
model server that loads the demo server's skill on demand (its name and description offered, never its body; its
body and file read when chosen), recorded like a tool call and replayed from a cassette; a skill changed after the
listing is not loaded and the model is told why in one line."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError

from synapse_nb.notebook.recording.reader import reader
from tests.support.llm_server import LlmServer, call, text, tool_calls

pytestmark = pytest.mark.process

REPO = Path(__file__).resolve().parents[2]
DEMO = f"-- {sys.executable} -m synapse_nb.mcp_client.demo_server"
FASTMCP_SERVER = REPO / "tests" / "support" / "fastmcp_skills.py"
FASTMCP_PYTHON = REPO / ".tools" / "fastmcp" / "bin" / "python"
FAKE_KEY = "sk-fake-skills-0123456789"
CELL = "synapse --model openai:gpt-test --session skills"
BODY_LINE = "orders.status = 'delivered'"  # a line of the skill's body, never in a request before it is loaded


@pytest.fixture
def model(clean_env: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[LlmServer]:
    with LlmServer() as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        yield llm


def _tool(body: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t["function"] for t in body["tools"] if t["function"]["name"] == name)


def _tool_messages(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def test_mcp_skills_lists_what_servers_offer(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert list(ip.line("mcp", "skills").columns) == ["skill", "server", "name", "description", "files", "bytes",
                                                      "uri"]
    ip.line("mcp", f"connect demo {DEMO}")
    listing = ip.line("mcp", "skills")
    assert isinstance(listing, pd.DataFrame)
    row = listing.set_index("skill").loc["demo/shop-revenue"]
    assert (row["server"], row["name"], row["files"]) == ("demo", "shop-revenue", 2)
    assert row["description"].startswith("Compute the synapse-demo shop's revenue")
    assert row["uri"] == "skill://shop-revenue/SKILL.md"
    assert ip.line("mcp", "skills demo --refresh").equals(ip.line("mcp", "skills demo"))
    with pytest.raises(UsageError, match="unknown server 'nope'"):
        ip.line("mcp", "skills nope")
    with pytest.raises(UsageError, match="unknown option '--all'"):
        ip.line("mcp", "skills --all")
    ip.line("mcp", "help")
    assert "skills [SERVER] [--refresh]" in capsys.readouterr().out


def test_a_turn_loads_the_skill_it_needs_then_its_file_recorded_and_replayed(
    ip: Any, model: LlmServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    ip.line("mcp", f"connect demo {DEMO}")
    cassette = tmp_path / "skills.jsonl"
    ip.line("synapse", f"record {cassette}")
    model.queue(tool_calls(call("skills__load", {"skill": "demo/shop-revenue"}, id="s1")),
                tool_calls(call("skills__read", {"skill": "demo/shop-revenue", "path": "references/margin.md"},
                                id="s2")),
                text("Revenue counts delivered orders only."))
    ip.cell(CELL, "What was our revenue by country last year?")
    result = ip.ns["_synapse"]
    assert result.status == "finished", result.error

    first, second, third = (r.body for r in model.requests)
    load = _tool(first, "skills__load")
    assert "- demo/shop-revenue: Compute the synapse-demo shop's revenue" in load["description"]
    assert load["parameters"]["properties"]["skill"]["enum"] == ["demo/shop-revenue"]
    assert BODY_LINE not in json.dumps(first)  # offered by name and description only, never its body
    (loaded,) = _tool_messages(second)
    assert loaded.startswith("Skill demo/shop-revenue loaded from MCP server 'demo' (skill://shop-revenue/SKILL.md)")
    assert BODY_LINE in loaded
    assert "references/margin.md" in loaded
    margin = _tool_messages(third)[1]
    assert margin.startswith("File references/margin.md of skill demo/shop-revenue (from MCP server 'demo')")
    assert "unit_cost" in margin

    ip.state.store.flush()
    rows = reader(ip.state.store).sql(
        "SELECT server, tool, is_error, approval FROM tool_calls ORDER BY started_at")
    assert rows.values.tolist() == [["skills", "load", False, "auto"], ["skills", "read", False, "auto"]]
    ip.line("synapse", "record off")

    model.stop()
    monkeypatch.delenv("OPENAI_API_KEY")
    ip.line("synapse", f"replay {cassette}")
    ip.cell(CELL.replace("skills", "again"), "What was our revenue by country last year?")
    replayed = ip.ns["_synapse"]
    assert replayed.status == "finished", replayed.error
    assert [c.result.text for c in replayed.calls] == [c.result.text for c in result.calls]


def test_a_skill_changed_after_listing_is_not_loaded_and_the_model_is_told_why(
    ip: Any, model: LlmServer, tmp_path: Path,
) -> None:
    if not FASTMCP_PYTHON.is_file():
        pytest.fail(f"fastmcp is not installed at {FASTMCP_PYTHON}: run `make fastmcp`")
    root = tmp_path / "skills"
    shutil.copytree(REPO / "synapse_nb" / "mcp_client" / "demo_skills", root)
    ip.line("mcp", f"connect fm -- {FASTMCP_PYTHON} {FASTMCP_SERVER} {root}")
    skill_md = root / "shop-revenue" / "SKILL.md"
    skill_md.write_text(skill_md.read_text().replace("Cancelled and returned", "All"))
    model.queue(tool_calls(call("skills__load", {"skill": "fm/shop-revenue"}, id="s1")), text("I could not."))
    ip.cell(CELL, "Revenue by country?")
    assert ip.ns["_synapse"].status == "finished"
    (refused,) = _tool_messages(model.requests[1].body)
    assert refused == ("Error: skill fm/shop-revenue: skill://shop-revenue/SKILL.md is 918 bytes, but its entry says "
                       "937: the skill is not used (the server changed or corrupted it; `%mcp skills` lists it afresh)")
    assert "All orders" not in json.dumps(model.requests[1].body)
    assert ip.ns["_synapse"].calls[0].result.is_error
