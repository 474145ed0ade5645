"""Prompt caching on the wire: OpenAI requests keep a byte-stable prefix across iterations; Anthropic requests
carry at most 4 cache_control breakpoints on the stable prefix; cached tokens come back in the usage.

The local server (tests/support/llm_server.py with tests/support/llm_cache.py's PromptCache) counts prompt tokens itself
and reports what the providers' caches would: so these tests fail if a prefix changes between requests.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tools import ToolRegistry, tool
from synapse_nb.events import LlmCallFinished
from synapse_nb.providers.anthropic import MAX_BREAKPOINTS, AnthropicProvider, mark_cache_breakpoints
from synapse_nb.providers.openai import OpenAIProvider
from tests.support.llm_cache import PromptCache, blocks_of
from tests.support.llm_server import LlmServer, call, text, tool_calls

pytestmark = pytest.mark.anyio
TIMEOUT = 30.0
ITERATIONS = 10


@tool
async def lookup(key: str, options: dict[str, Any] | None = None) -> str:
    """Look a key up (returns a longish text, like a real tool)."""
    return f"value of {key}: " + "x" * 200


def _provider(wire: str, server: LlmServer) -> Any:
    if wire == "openai":
        return OpenAIProvider("gpt-test", api_key="k", base_url=server.openai_base_url)
    return AnthropicProvider("claude-test", api_key="k", base_url=server.anthropic_base_url)


def _script(server: LlmServer, iterations: int = ITERATIONS) -> None:
    # Arguments with nested objects and several keys: their serialisation must not drift between requests.
    replies = [
        tool_calls(call("lookup", {"key": f"k{i}", "options": {"z": 1, "a": [1, 2], "m": {"y": None}}}))
        for i in range(iterations - 1)
    ]
    server.queue(*replies, text("All looked up."))


async def _turns(wire: str, server: LlmServer, prompts: list[str]) -> list[LlmCallFinished]:
    registry = ToolRegistry()
    registry.register(lookup)
    calls: list[LlmCallFinished] = []
    provider = _provider(wire, server)
    try:
        agent = Agent(provider, registry, system="You look keys up. " * 20, sinks=[
            lambda e: calls.append(e) if isinstance(e, LlmCallFinished) else None
        ])
        for prompt in prompts:
            result = await asyncio.wait_for(agent.ask(prompt), TIMEOUT)
            assert result.status == "finished", result.error
    finally:
        await provider.aclose()
    return calls


async def test_openai_requests_are_byte_prefixes_of_the_next_one() -> None:
    with LlmServer(prompt_cache=PromptCache()) as server:
        _script(server)
        calls = await _turns("openai", server, ["Look up ten keys."])
        raw = [r.raw for r in server.requests]
    assert len(raw) == ITERATIONS
    for before, after in itertools.pairwise(raw):
        assert before.endswith(b"]}")  # messages are the last member: everything before the close is prefix
        assert after.startswith(before[:-2])
    # The server's cache saw it: each request read the whole previous prompt from the cache.
    for before_call, after_call in itertools.pairwise(calls):
        assert after_call.usage.cached_input_tokens == before_call.usage.input_tokens > 0
    assert calls[0].usage.cached_input_tokens == 0


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_iterations_and_follow_up_turns_read_the_previous_prompt_from_the_cache(wire: str) -> None:
    with LlmServer(prompt_cache=PromptCache()) as server:
        _script(server, 3)
        _script(server, 2)
        calls = await _turns(wire, server, ["First question.", "A follow-up."])
        bodies = [r.body for r in server.requests]
    assert len(calls) == 5
    for body in bodies:
        marks = sum(b.breakpoint for b in blocks_of(wire, body))
        if wire == "openai":
            assert marks == 0
        else:
            assert 3 <= marks <= MAX_BREAKPOINTS  # tools, system, and the end of the prompt at least
    # Every request, within a turn and across the follow-up cell, reads all of the previous request's prompt.
    for before, after in itertools.pairwise(calls):
        assert after.usage.cached_input_tokens == before.usage.input_tokens
        if wire == "anthropic":
            # ... and writes the rest of its own prompt (up to its last breakpoint, the end).
            assert after.usage.cache_write_tokens == after.usage.input_tokens - before.usage.input_tokens
    assert calls[0].usage.cached_input_tokens == 0


def test_breakpoints_mark_tools_system_and_the_previous_and_current_prompt_end() -> None:
    body: dict[str, Any] = {
        "system": "Be brief.",
        "tools": [{"name": "a"}, {"name": "b"}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "q1"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "a1"}]},
            {"role": "user", "content": [{"type": "text", "text": "q2"}, {"type": "text", "text": "more"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "a", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": []}]},
        ],
    }
    mark_cache_breakpoints(body)
    eph = {"type": "ephemeral"}
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][1]["cache_control"] == eph
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": eph}]
    marked = [
        (i, j) for i, m in enumerate(body["messages"]) for j, b in enumerate(m["content"]) if "cache_control" in b
    ]
    assert marked == [(2, 1), (4, 0)]  # the end of the previous request's prompt, and of this one

    bare: dict[str, Any] = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    mark_cache_breakpoints(bare)
    assert bare["messages"][0]["content"][0]["cache_control"] == eph
    assert "system" not in bare


def test_the_servers_cache_model_needs_breakpoints_for_anthropic_and_honours_the_minimum() -> None:
    plain: dict[str, Any] = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hello " * 20}]}]}
    cache = PromptCache()
    total = cache.account("anthropic", plain)[0]
    assert total > 0
    assert cache.account("anthropic", plain) == (total, 0, 0)  # no cache_control: nothing read or written
    marked: dict[str, Any] = {"messages": [{"role": "user", "content": [
        {"type": "text", "text": "hello " * 20, "cache_control": {"type": "ephemeral"}}]}]}
    assert cache.account("anthropic", marked) == (total, 0, total)  # written (cache_control is not content)
    assert cache.account("anthropic", marked) == (total, total, 0)  # then read
    openai: dict[str, Any] = {"messages": [{"role": "user", "content": "hello " * 20}]}
    assert cache.account("openai", openai)[1] == 0
    assert cache.account("openai", openai)[1] == cache.account("openai", openai)[0]  # automatic: seen prefixes
    strict = PromptCache(min_tokens=10**6)
    strict.account("openai", openai)
    assert strict.account("openai", openai)[1] == 0  # below the minimum nothing is cached
