"""Record notebooks/replay_demo.ipynb's cassette against the local wire-compatible server, then replay it.

    python scripts/record_replay_demo.py

1. Starts tests/support/llm_server.py (an OpenAI-compatible HTTP server on 127.0.0.1) as the model: for a question
   it asks the demo MCP server's `query` tool, and answers from the tool's result.
2. Runs the notebook in a real kernel with REPLAY_DEMO_MODE=record, OPENAI_BASE_URL pointing at that server
   and a placeholder key: `%synapse record` writes notebooks/cassettes/replay_demo.jsonl.
3. Stops the server and runs the notebook again, offline (no key, no server: `%synapse replay`), saving it
   in place with those outputs, which nbval compares in `make test`.

Run it after changing the notebook's questions (or the demo server's tools, which a request's fingerprint
covers), and commit the notebook with its cassette.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "replay_demo.ipynb"
CASSETTE = REPO / "notebooks" / "cassettes" / "replay_demo.jsonl"
PLACEHOLDER_KEY = "sk-placeholder-for-the-local-server-000000"  # masked in the cassette like any key

sys.path[:0] = [str(REPO), str(REPO / "scripts")]

from run_notebooks import execute  # noqa: E402

from tests.support.llm_server import LlmServer, RecordedRequest, Reply, call, text, tool_calls  # noqa: E402

TOP_PRODUCTS = (
    "SELECT p.name AS product, p.category, ROUND(SUM(o.quantity * o.unit_price), 2) AS revenue "
    "FROM orders o JOIN products p ON p.product_id = o.product_id "
    "WHERE o.status IN ('delivered', 'shipped') GROUP BY p.product_id, p.name, p.category "
    "ORDER BY revenue DESC LIMIT 3"
)


def respond(request: RecordedRequest) -> Reply:
    """The stand-in model: a question about products queries the shop; a tool result is summarised."""
    messages = request.body["messages"]
    last = messages[-1]
    if last["role"] == "tool":
        return text(f"The top 3 products by revenue (delivered and shipped orders):\n\n{last['content']}\n\n"
                    "Equipment leads: the espresso machine alone brings in more than the coffee.", pieces=6)
    question = str(last["content"]).lower()
    if "product" in question:
        return tool_calls(call("demo__query", {"sql": TOP_PRODUCTS}))
    return text("Two of the three are equipment (the espresso machine and the grinder), one is coffee.", pieces=4)


def main() -> int:
    CASSETTE.parent.mkdir(parents=True, exist_ok=True)
    with LlmServer() as server:
        server.responder = respond
        env = {"REPLAY_DEMO_MODE": "record", "OPENAI_BASE_URL": server.openai_base_url,
               "OPENAI_API_KEY": PLACEHOLDER_KEY}
        execute(NOTEBOOK, REPO / "demo_out" / "replay_demo.recorded.ipynb", env=env)
        print(f"recorded {CASSETTE.relative_to(REPO)}: {len(server.requests)} model requests")
    if PLACEHOLDER_KEY in CASSETTE.read_text():
        raise SystemExit("the key reached the cassette: not saving the notebook")
    execute(NOTEBOOK, machine_free=True)  # the server is stopped: every answer comes from the cassette
    print(f"replayed offline and saved {NOTEBOOK.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
