"""Prompt caching benchmark (row 16 of bench/run.py): how much of a 10-iteration turn's prompt is a cached prefix.

    python bench/bench_cost.py [--small]     # this module's own table
    python bench/run.py --only 16             # the same measurement as a row of results.md

A real agent turn of 10 iterations (a tool call in each of the first 9 replies) against the local
wire-compatible server (tests/support/llm_server.py) with its model of the providers' prompt caches
(tests/support/llm_cache.py: OpenAI caches every prefix it has seen; Anthropic the prefixes ending at the
`cache_control` breakpoints the adapter sets; both only from 1,024 tokens, as the real ones). The
prompt has a realistic shape: a ~1,500-token system prompt, 3 tool schemas and ~400-token tool results.
Baseline: every prompt token the turn sent; measured: the tokens the server reported read from its
cache (`cached_tokens` / `cache_read_input_tokens`). Target: at least 80% of the prompt is a cache hit.
The ratio is a share, not a time.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import Measure, Row, Size, run_async, table

from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tools import ToolRegistry, tool
from synapse_nb.events import Event, LlmCallFinished
from synapse_nb.providers.anthropic import AnthropicProvider
from synapse_nb.providers.openai import OpenAIProvider
from tests.support.llm_cache import PromptCache
from tests.support.llm_server import LlmServer, call, text, tool_calls

__all__ = ["row_prompt_cache"]

TARGET = 0.80
SYSTEM = " ".join(f"Rule {i}: answer from the tools' data only, cite the table and the column used." for i in range(90))


@tool
async def query(sql: str) -> str:
    """Run a read-only SQL query against the sales warehouse and return the rows as CSV."""
    return "region,month,revenue\n" + "\n".join(f"r{i},2026-{i % 12 + 1:02d},{1000 + i * 37}" for i in range(60))


@tool
async def describe(table: str) -> str:
    """Describe a table: its columns, their types and a sample row."""
    return f"{table}: region VARCHAR, month VARCHAR, revenue DOUBLE"


@tool
async def chart(sql: str, kind: str = "bar") -> str:
    """Draw a chart of a query's result."""
    return "chart drawn"


async def _turn(wire: str, iterations: int) -> tuple[int, int, int]:
    """(prompt tokens sent, read from the cache, written to it) over one turn of `iterations` model calls."""
    calls: list[LlmCallFinished] = []

    def keep(event: Event) -> None:
        if isinstance(event, LlmCallFinished):
            calls.append(event)

    with LlmServer(prompt_cache=PromptCache(min_tokens=1024)) as server:
        server.queue(*[tool_calls(call("query", {"sql": f"select * from sales where q = {i}"}))
                       for i in range(iterations - 1)], text("Revenue grew in every region."))
        provider: Any
        if wire == "openai":
            provider = OpenAIProvider("gpt-bench", api_key="k", base_url=server.openai_base_url)
        else:
            provider = AnthropicProvider("claude-bench", api_key="k", base_url=server.anthropic_base_url)
        registry = ToolRegistry()
        for fn in (query, describe, chart):
            registry.register(fn)
        try:
            agent = Agent(provider, registry, system=SYSTEM, max_iterations=iterations, sinks=[keep])
            result = await agent.ask("How did revenue develop by region? Query the sales table step by step.")
        finally:
            await provider.aclose()
            registry.close()
    assert result.status == "finished", result.error
    total = sum(c.usage.input_tokens for c in calls)
    return total, sum(c.usage.cached_input_tokens for c in calls), sum(c.usage.cache_write_tokens for c in calls)


async def _rows(size: Size) -> list[Row]:
    iterations = 10  # about a second: the small run (make test) measures the same turn
    del size
    rows = []
    for sub, wire in (("a", "openai"), ("b", "anthropic")):
        total, read, written = await _turn(wire, iterations)
        share = read / total if total else 0.0
        how = ("automatic caching: every prefix seen before" if wire == "openai" else
               f"cache_control breakpoints: {written:,} tokens written to the cache")
        rows.append(Row(
            f"16{sub}", f"prompt caching, {wire}: a {iterations}-iteration turn against the local wire server",
            Measure("prompt tokens sent", float(total), f"{total:,} tokens"),
            Measure("read from the cache", float(read), f"{read:,} tokens ({share:.0%})"),
            f"≥ {TARGET:.0%} cache hits", share >= TARGET,
            note=f"{how}; {iterations} model calls, caches from 1,024 tokens (tests/support/llm_cache.py); the "
                 "ratio is the share of prompt tokens read from the cache",
            why="" if share >= TARGET else
                f"only {share:.0%} of the prompt was a cache hit: check that the request prefix is stable across "
                "iterations (providers/openai.py request_body, providers/anthropic.py mark_cache_breakpoints)",
        ))
    return rows


def row_prompt_cache(size: Size) -> list[Row]:
    return run_async(_rows(size))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true")
    args = parser.parse_args()
    print(table(row_prompt_cache(Size(small=args.small)), markdown=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
