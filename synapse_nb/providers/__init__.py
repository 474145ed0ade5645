"""LLM providers: one httpx adapter per wire format, the offline scripted model, and model-id resolution.

`resolve_provider("anthropic:claude-sonnet-4-5")` gives a Provider; the adapters load on first use, so
importing this package (or the scripted model) does not import httpx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .registry import (
    DEFAULT_MODEL,
    ModelInfo,
    default_model_id,
    describe_model,
    is_offline,
    model_info,
    parse_model_id,
    resolve_provider,
)

if TYPE_CHECKING:
    from ._http import RetryPolicy
    from .anthropic import AnthropicProvider
    from .openai import OpenAIProvider
    from .scripted import ScriptedProvider

__all__ = [
    "DEFAULT_MODEL",
    "AnthropicProvider",
    "ModelInfo",
    "OpenAIProvider",
    "RetryPolicy",
    "ScriptedProvider",
    "default_model_id",
    "describe_model",
    "is_offline",
    "model_info",
    "parse_model_id",
    "resolve_provider",
]

_LAZY = {
    "AnthropicProvider": ".anthropic",
    "OpenAIProvider": ".openai",
    "RetryPolicy": "._http",
    "ScriptedProvider": ".scripted",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
