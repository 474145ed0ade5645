"""Record and replay across real kernels: cells recorded (SYNAPSE_RECORD) against the local OpenAI-wire server
with the demo MCP server, the server stopped, then the same cells replayed (SYNAPSE_REPLAY) in a fresh kernel
with no key: the same cell outputs, only the footer's note and time differ."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.kernel_session import Execution, Kernel, kernel_env
from tests.support.llm_server import LlmServer, call, text, tool_calls

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.kernel]

KEY = "sk-fake-kernel-replay-0123456789abcdef"
CONNECT = "import sys\n%mcp connect demo -- {sys.executable} -m synapse_nb.mcp_client.demo_server"
CELLS = [
    "%%synapse --model openai:gpt-test\nHow many customers are there?",
    "%%synapse --model openai:gpt-test\nThanks. Anything else?",
]
FOOTER_HTML = re.compile(r'<sub class="snb-footer[^>]*>.*?</sub>', re.S)


def shown(run: Execution) -> list[dict[str, str]]:
    """A cell's outputs as a saved notebook keeps them, without the footer (its note and time differ)."""
    out = []
    for data in run.final_outputs():
        plain = "\n".join(line for line in data.get("text/plain", "").splitlines() if not line.startswith("-- "))
        out.append({"text/plain": plain, "text/markdown": FOOTER_HTML.sub("", data.get("text/markdown", ""))})
    return out


def run_cells(tmp: Path, env: dict[str, str]) -> tuple[str, list[Execution]]:
    kernel = Kernel(tmp, env)
    try:
        load = kernel.ok("%load_ext synapse_nb")
        kernel.ok(CONNECT)
        return load.stdout, [kernel.ok(cell, timeout=120) for cell in CELLS]
    finally:
        kernel.close()


def test_cells_recorded_against_a_server_replay_identically_with_it_stopped(tmp_path: Path) -> None:
    cassette = tmp_path / "cassettes" / "run.jsonl"
    (tmp_path / "rec").mkdir()
    (tmp_path / "rep").mkdir()
    with LlmServer() as server:
        server.queue(tool_calls(call("demo__query", {"sql": "SELECT count(*) AS n FROM customers"})),
                     text("There are **50** customers."), text("Nothing else for now."))
        env = {**kernel_env(tmp_path / "rec"), "OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": KEY,
               "SYNAPSE_RECORD": str(cassette)}
        said, recorded = run_cells(tmp_path / "rec", env)
        served = len(server.requests)
    assert said.startswith(f"synapse_nb: recording model exchanges and tool results to {cassette}")
    assert served == 3
    assert KEY not in cassette.read_text()
    assert "50" in recorded[0].text()

    env = {**kernel_env(tmp_path / "rep"), "SYNAPSE_REPLAY": str(cassette)}  # no key, no base URL, no server
    said, replayed = run_cells(tmp_path / "rep", env)
    assert said.startswith(f"synapse_nb: replaying {cassette}: 3 model exchanges, 1 tool results")
    for before, after in zip(recorded, replayed, strict=True):
        assert shown(after) == shown(before)
        assert "recorded to run.jsonl" in before.text()
        assert "replayed from run.jsonl" in after.text()
