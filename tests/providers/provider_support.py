"""Constants and types the provider tests share (imported by name; conftest modules are not importable reliably)."""

from __future__ import annotations

from collections.abc import Callable

from synapse_nb.providers._http import RetryPolicy
from synapse_nb.providers.anthropic import AnthropicProvider
from synapse_nb.providers.openai import OpenAIProvider

PLANTED_KEY = "sk-test-planted-7f3a9c1e5b2d4f60a8"
FAST_RETRY = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.05)

HttpProvider = OpenAIProvider | AnthropicProvider
MakeProvider = Callable[..., HttpProvider]
