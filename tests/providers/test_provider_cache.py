"""ProviderCache: a key or base URL changed in the environment takes effect at the next call, never shown."""

from __future__ import annotations

import logging

import pytest

from synapse_nb.errors import AuthenticationError, MissingKeyError
from synapse_nb.protocols import Completion, Provider
from synapse_nb.providers.anthropic import AnthropicProvider
from synapse_nb.providers.openai import OpenAIProvider
from synapse_nb.providers.registry import ProviderCache
from synapse_nb.types import Message
from tests.support.llm_server import LlmServer, RecordedRequest, Reply, error, text

pytestmark = pytest.mark.anyio

OLD_KEY = "sk-old-rotated-0a1b2c3d4e5f6a7b"
NEW_KEY = "sk-new-fresh-9f8e7d6c5b4a3f2e"
MODELS = {"openai": ("openai:gpt-test", "OPENAI"), "anthropic": ("anthropic:claude-test", "ANTHROPIC")}


def sent_key(request: RecordedRequest) -> str:
    if request.wire == "anthropic":
        return request.headers.get("x-api-key", "")
    return request.headers.get("authorization", "").removeprefix("Bearer ")


def only_new_key(request: RecordedRequest) -> Reply:
    """The server's check: the new key gets an answer, anything else a 401."""
    return text("hello with the new key") if sent_key(request) == NEW_KEY else error(401, "invalid api key")


async def ask(provider: Provider) -> Completion:
    chunks = [c async for c in provider.stream([Message.user("hi")])]
    assert isinstance(chunks[-1], Completion)
    return chunks[-1]


def client_closed(provider: Provider) -> bool:
    assert isinstance(provider, OpenAIProvider | AnthropicProvider)
    return provider._http._client.is_closed


async def test_a_changed_key_is_used_at_the_next_call_and_the_old_provider_closed(
    llm_server: LlmServer, wire: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    llm_server.responder = only_new_key
    model, prefix = MODELS[wire]
    base_url = llm_server.openai_base_url if wire == "openai" else llm_server.anthropic_base_url
    env = {f"{prefix}_API_KEY": OLD_KEY, f"{prefix}_BASE_URL": base_url}
    cache = ProviderCache()
    old = cache.get(model, env=env)
    assert cache.get(model, env=env) is old, "an unchanged environment keeps the provider"
    with pytest.raises(AuthenticationError):
        await ask(old)

    env[f"{prefix}_API_KEY"] = NEW_KEY
    new = cache.get(model, env=env)
    assert new is not old
    assert (await ask(new)).message.content == "hello with the new key"
    assert [sent_key(r) for r in llm_server.requests] == [OLD_KEY, NEW_KEY]

    assert cache.retired == 1
    assert not client_closed(old)
    await cache.aclose_retired()
    assert client_closed(old)
    assert not client_closed(new)
    assert cache.get(model, env=env) is new

    shown = [repr(cache), repr(vars(cache)), repr(new), repr(old), caplog.text]
    for key in (OLD_KEY, NEW_KEY):
        assert not [s for s in shown if key in s or key[:12] in s]
    assert "the API key or base URL changed" in caplog.text
    await cache.aclose()
    assert client_closed(new)


async def test_a_changed_base_url_gives_a_provider_for_the_new_server(llm_server: LlmServer) -> None:
    env = {"OLLAMA_BASE_URL": "http://127.0.0.1:9/v1"}
    cache = ProviderCache()
    first = cache.get("ollama:qwen3", env=env)
    with LlmServer() as other:
        other.queue(text("from the other server"))
        env["OLLAMA_BASE_URL"] = other.openai_base_url
        second = cache.get("ollama:qwen3", env=env)
        assert second is not first
        assert (await ask(second)).message.content == "from the other server"
    await cache.aclose()
    assert client_closed(first)
    assert client_closed(second)


async def test_a_removed_key_is_refused_and_the_cached_provider_kept() -> None:
    env = {"OPENAI_API_KEY": OLD_KEY}
    cache = ProviderCache()
    first = cache.get("openai:gpt-test", env=env)
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        cache.get("openai:gpt-test", env={})
    assert cache.retired == 0
    assert cache.get("openai:gpt-test", env=env) is first
    await cache.aclose()


async def test_each_model_id_has_its_own_provider() -> None:
    cache = ProviderCache()
    demo = cache.get(None, env={})
    assert cache.get("scripted:demo", env={}) is demo
    env = {"OPENAI_API_KEY": OLD_KEY}
    mini = cache.get("openai:gpt-mini", env=env)
    assert cache.get("openai:gpt-other", env=env) is not mini
    assert repr(cache) == "ProviderCache(models=['openai:gpt-mini', 'openai:gpt-other', 'scripted:demo'], retired=0)"
    await cache.aclose()
