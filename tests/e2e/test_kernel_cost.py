"""Cost and budgets in a real kernel (jupyter_client): a budget stops a turn between iterations with one line,
the partial transcript is kept and the history says budget_exceeded; `%synapse cost --by server` charges
the demo MCP server for what its tool result added to the next prompt.

The model is the local OpenAI-compatible server (tests/support/llm_server.py); prices come from a test file:
$0.001 a prompt token, $0.002 an output token.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.support import tools_server
from tests.support.kernel_session import Kernel, running_kernel
from tests.support.llm_server import LlmServer, call, text, tool_calls

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.kernel]

DEMO = tools_server.COMMAND

PRICES = {"openai:gpt-test": {"input_per_mtok": 1000, "output_per_mtok": 2000}}
ECHOED = "x" * 120


@pytest.fixture(scope="module")
def server() -> Iterator[LlmServer]:
    with LlmServer() as s:
        yield s


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, server: LlmServer) -> Iterator[Kernel]:
    tmp = tmp_path_factory.mktemp("kernel-cost")
    prices = tmp / "prices.json"
    prices.write_text(json.dumps(PRICES))
    with running_kernel(tmp) as k:
        k.ok(
            f"import os\nos.environ['SYNAPSE_PRICES'] = {str(prices)!r}\n"
            f"os.environ['OPENAI_BASE_URL'] = {server.openai_base_url!r}\n"
            "os.environ['OPENAI_API_KEY'] = 'sk-fake-key-for-cost-tests'\n%load_ext synapse_nb"
        )
        connect = k.ok(f"import sys\n%mcp connect demo -- {DEMO}")
        assert connect.text().startswith("✓ demo: connected")
        yield k


def test_a_budget_stops_the_turn_with_one_line_and_cost_by_server_charges_the_tool(
    kernel: Kernel, server: LlmServer
) -> None:
    server.queue(
        tool_calls(call("demo__echo", {"text": ECHOED}), usage=(1000, 100)),
        text("never sent"),
    )
    # Only echo is offered: the first call's projection (prompt + one tool schema, ~50 tokens) stays far below
    # the budget whatever else the demo server offers.
    run = kernel.ok(
        "%%synapse --model openai:gpt-test --session costly --budget 1.5 --tools demo__echo\necho the text"
    )
    assert run.error is None  # not a traceback, not even a UsageError: the partial result is the cell's outcome
    assert run.stderr == ""
    out = run.text()
    lines = [line for line in out.splitlines() if "past --budget $1.5" in line]
    assert len(lines) == 1, out
    assert "this turn spent $1.20 and" in lines[0]
    assert "budget exceeded" in out
    assert len(server.requests) == 1
    state = kernel.ok(
        "import synapse_nb\n"
        "print(_synapse.status, [m.role for m in _synapse.messages], _synapse.tool_calls.result_text.tolist())\n"
        "print(synapse_nb.history().turns().status.tolist(), round(_synapse.usage.cost_usd, 6))"
    )
    assert state.stdout.splitlines() == [
        f"budget_exceeded ['user', 'assistant', 'tool'] ['{ECHOED}']",
        "['budget_exceeded'] 1.2",
    ]

    # The next cell continues the session without a budget. Its prompt grew by 1310 - 1000 - 100 = 210 tokens:
    # the echo result (120 characters) and the new prompt "go on" (5), so the result's share is
    # round(210 x 120 / 125) = 202 tokens of a 1310-token prompt costing $1.31: $0.202 to the demo server.
    server.clear()
    server.queue(text("Echoed.", usage=(1310, 10)))
    kernel.ok("%%synapse --model openai:gpt-test --session costly --tools demo__echo\ngo on")
    [request] = server.requests
    assert request.body["messages"][-2]["role"] == "tool"  # the kept transcript was sent on
    by_server = kernel.ok(
        "_c = %synapse cost --by server\nprint(_c.server.tolist(), [round(v, 6) for v in _c.cost_usd])"
    )
    assert by_server.stdout.strip() == "['demo'] [0.202]"
