"""Constants and types the provider tests share (imported by name; conftest modules are not importable reliably)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

# tests/ holds llm_server.py; pytest's rootdir conftest usually puts it on sys.path already.
_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from synapse_nb.providers._http import RetryPolicy  # noqa: E402
from synapse_nb.providers.anthropic import AnthropicProvider  # noqa: E402
from synapse_nb.providers.openai import OpenAIProvider  # noqa: E402

PLANTED_KEY = "sk-test-planted-7f3a9c1e5b2d4f60a8"
FAST_RETRY = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.05)

HttpProvider = OpenAIProvider | AnthropicProvider
MakeProvider = Callable[..., HttpProvider]
