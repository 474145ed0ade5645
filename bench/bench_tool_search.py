"""Bench row 24: ten real MCP servers connected (tests/support/catalog_servers.py), one turn's first model request
through the wire-format model server: the tool definitions offered with tool search (a budget of 40) against every
tool offered (the old way), in the same run, and the search's top-3 rate on the eval's requests."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from _common import Measure, Row, Size, run_async, table

from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tool_search import DEFAULT_TOOL_BUDGET, ToolSearch
from synapse_nb.agent.tools import ToolRegistry
from synapse_nb.agent.turn import TurnOptions
from synapse_nb.providers.openai import OpenAIProvider
from tests.support.catalog_servers import connected, server_entries
from tests.support.llm_cache import tokens_of
from tests.support.llm_server import LlmServer, text


async def _first_request_tokens(entries: dict[str, dict[str, object]]) -> tuple[int, int, int, int]:
    """(tokens of the tool definitions with the search, their count, tokens of every tool, their count)."""
    async with connected(entries) as hub:
        registry = ToolRegistry(hub)
        about = {i.name: " ".join(p for p in (i.server_name, i.server_title, i.instructions) if p) for i in hub.servers}
        out: list[tuple[int, int]] = []
        with LlmServer() as server:
            provider = OpenAIProvider("gpt-bench", api_key="k", base_url=server.openai_base_url)
            try:
                for budget in (DEFAULT_TOOL_BUDGET, 0):
                    server.clear()
                    server.queue(text("ok"))
                    agent = Agent(TurnOptions(provider, tool_search=ToolSearch(budget, about=lambda: about)), registry)
                    await agent.ask("what time is it in Tokyo?")
                    tools = server.requests[0].body.get("tools", [])
                    out.append((tokens_of(json.dumps(tools, ensure_ascii=False).encode()), len(tools)))
            finally:
                await provider.aclose()
                registry.close()
    (searched, n_searched), (every, n_every) = out
    return searched, n_searched, every, n_every


def row_tool_search(size: Size) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="synapse-bench-search-") as scratch, \
            server_entries(Path(scratch)) as entries:
        searched, n_searched, every, n_every = run_async(_first_request_tokens(entries))
    ratio = searched / every
    return [Row(
        "24", "ten real servers connected: tool definitions in the first model request, tool search vs every tool",
        Measure(f"every tool offered ({n_every} definitions)", every, f"{every:,} tokens"),
        Measure(f"tools__search offered ({n_searched} definition)", searched, f"{searched:,} tokens"),
        "≤ 1/5 of offering every tool (< 0.2)", ratio <= 0.2,
        note=f"budget {DEFAULT_TOOL_BUDGET}; tokens as the wire server counts them (4 bytes each) of the request's "
             "`tools`; the eval (tests/agent/test_tool_search_eval.py) checks the ranking",
    )]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true")
    args = parser.parse_args()
    print(table(row_tool_search(Size(small=args.small))))


if __name__ == "__main__":
    main()
