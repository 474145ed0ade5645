"""Fixtures for provider tests: the local wire-compatible `llm_server`, and providers pointed at it."""

from __future__ import annotations

from typing import Any

import pytest

from synapse_nb.providers.anthropic import AnthropicProvider
from synapse_nb.providers.openai import OpenAIProvider
from tests.providers.provider_support import FAST_RETRY, PLANTED_KEY, HttpProvider, MakeProvider
from tests.support.llm_server import LlmServer


@pytest.fixture(params=["openai", "anthropic"])
def wire(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_provider(llm_server: LlmServer) -> MakeProvider:
    """`make_provider(wire, **options)`: an adapter talking to llm_server with the planted key and fast retries."""

    def make(wire: str, **options: Any) -> HttpProvider:
        options.setdefault("api_key", PLANTED_KEY)
        options.setdefault("retry", FAST_RETRY)
        if wire == "openai":
            return OpenAIProvider("gpt-test", base_url=llm_server.openai_base_url, **options)
        return AnthropicProvider("claude-test", base_url=llm_server.anthropic_base_url, **options)

    return make
