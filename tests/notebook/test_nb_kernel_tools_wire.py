"""The analyst's kernel turn over real HTTP: kernel__* schemas, results, and the chart as an image block."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from tests.notebook.test_nb_kernel_tools import QUESTION, SALES
from tests.support.llm_server import LlmServer, call, text, tool_calls

FAKE_KEY = "sk-fake-kernel-wire-0123456789"
CODE = (
    "import matplotlib.pyplot as plt\n"
    "summary = sales.groupby('region')['revenue'].sum().sort_values(ascending=False)\n"
    "summary.plot.bar(title='revenue by region')\n"
    "summary.round(2).to_dict()"
)
KERNEL_TOOLS = {
    "kernel__list_variables", "kernel__describe_dataframe", "kernel__get_value", "kernel__run_python",
    "kernel__recent_cells",
}


@pytest.fixture
def server(clean_env: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[LlmServer]:
    with LlmServer() as llm:
        for wire, url in (("OPENAI", llm.openai_base_url), ("ANTHROPIC", llm.anthropic_base_url)):
            monkeypatch.setenv(f"{wire}_BASE_URL", url)
            monkeypatch.setenv(f"{wire}_API_KEY", FAKE_KEY)
        yield llm


def _turn(ip: Any, server: LlmServer, model: str) -> list[Any]:
    ip.run(SALES)
    server.queue(
        tool_calls(call("kernel__list_variables", {})),
        tool_calls(call("kernel__describe_dataframe", {"name": "sales", "rows": 3})),
        tool_calls(call("kernel__run_python", {"code": CODE})),
        text("East leads with **70.0**, then south 62.0 and north 50.0."),
    )
    ip.answers.append("y")
    ip.cell(f"synapse --kernel --model {model}", QUESTION)
    result = ip.ns["_synapse"]
    assert result.status == "finished"
    assert result.tool_calls.approval.tolist() == ["auto", "auto", "approved"]
    assert ip.ns["summary"].to_dict() == {"east": 70.0, "south": 62.0, "north": 50.0}
    assert FAKE_KEY not in ip.published.text()
    requests = server.requests
    assert len(requests) == 4
    return requests


def _png(data: str) -> bool:
    return base64.b64decode(data).startswith(b"\x89PNG\r\n\x1a\n")


def test_openai_wire(ip: Any, server: LlmServer) -> None:
    first, second, third, fourth = _turn(ip, server, "openai:gpt-test")
    tools = {t["function"]["name"]: t["function"] for t in first.body["tools"]}
    assert set(tools) >= KERNEL_TOOLS
    assert tools["kernel__run_python"]["parameters"]["required"] == ["code"]
    assert tools["kernel__describe_dataframe"]["parameters"]["properties"]["rows"]["type"] == "integer"
    listing = second.body["messages"][-1]
    assert listing["role"] == "tool"
    assert '"name": "sales"' in listing["content"]
    assert "- revenue (float64, 1 null)" in third.body["messages"][-1]["content"]
    *_, tool_message, images = fourth.body["messages"]
    assert tool_message["role"] == "tool"
    assert "value:\n{'east': 70.0, 'south': 62.0, 'north': 50.0}" in tool_message["content"]
    # Chat Completions takes no images in tool messages: the chart follows as a user image_url part
    assert images["role"] == "user"
    urls = [p["image_url"]["url"] for p in images["content"] if p["type"] == "image_url"]
    assert len(urls) == 1
    assert urls[0].startswith("data:image/png;base64,")
    assert _png(urls[0].split(",", 1)[1])


def test_anthropic_wire(ip: Any, server: LlmServer) -> None:
    first, second, _, fourth = _turn(ip, server, "anthropic:claude-test")
    tools = {t["name"]: t for t in first.body["tools"]}
    assert set(tools) >= KERNEL_TOOLS
    assert tools["kernel__get_value"]["input_schema"]["required"] == ["name"]
    (listing,) = second.body["messages"][-1]["content"]
    assert listing["type"] == "tool_result"
    assert '"name": "sales"' in listing["content"][0]["text"]
    (result,) = fourth.body["messages"][-1]["content"]
    assert result["type"] == "tool_result"
    assert result["is_error"] is False
    text_block, image_block = result["content"]
    assert "figures: 1 PNG image" in text_block["text"]
    assert image_block["type"] == "image"
    assert image_block["source"]["type"] == "base64"
    assert image_block["source"]["media_type"] == "image/png"
    assert _png(image_block["source"]["data"])
