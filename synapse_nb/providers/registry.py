"""Model ids (`provider:model`) to Provider instances, keys and base URLs from the environment.

    anthropic:MODEL   ANTHROPIC_API_KEY  ANTHROPIC_BASE_URL (default https://api.anthropic.com)
    openai:MODEL      OPENAI_API_KEY     OPENAI_BASE_URL    (default https://api.openai.com/v1)
    deepseek:MODEL    DEEPSEEK_API_KEY   DEEPSEEK_BASE_URL  (default https://api.deepseek.com)
    ollama:MODEL      OLLAMA_API_KEY (optional)  OLLAMA_BASE_URL (default http://localhost:11434/v1)
    scripted:NAME     no key: the offline model (NAME = a built-in script such as `demo`, or a JSON file)

With no model given, `SYNAPSE_MODEL` names it; with none set, the default is `scripted:demo`, the offline
model, whether or not a key is set (a real model is always an explicit choice). A bare id such as
`gpt-4.1` is refused with the prefixed form to use; the prefix is never guessed silently. Adapters are
imported only when resolved, so reading this module loads neither httpx nor a script.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ConfigError, MissingKeyError
from ..protocols import Provider

if TYPE_CHECKING:
    import httpx

    from ._http import RetryPolicy

__all__ = [
    "DEFAULT_MODEL",
    "PROVIDERS",
    "ModelInfo",
    "ProviderCache",
    "ProviderSpec",
    "default_model_id",
    "describe_model",
    "is_offline",
    "model_info",
    "parse_model_id",
    "resolve_provider",
]

DEFAULT_MODEL = "scripted:demo"

logger = logging.getLogger("synapse_nb.providers")


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """What a provider prefix means: wire format, key variable, base URL variable and default."""

    name: str
    wire: str  # "anthropic" | "openai" | "scripted"
    title: str
    key_variable: str | None = None
    key_required: bool = False
    base_url_variable: str | None = None
    default_base_url: str | None = None
    example: str | None = None


PROVIDERS: Mapping[str, ProviderSpec] = {
    "anthropic": ProviderSpec(
        "anthropic", "anthropic", "Anthropic Messages API", "ANTHROPIC_API_KEY", True, "ANTHROPIC_BASE_URL",
        "https://api.anthropic.com", "anthropic:claude-sonnet-4-5",
    ),
    "openai": ProviderSpec(
        "openai", "openai", "OpenAI Chat Completions", "OPENAI_API_KEY", True, "OPENAI_BASE_URL",
        "https://api.openai.com/v1", "openai:gpt-4.1-mini",
    ),
    "deepseek": ProviderSpec(
        "deepseek", "openai", "DeepSeek (OpenAI-compatible)", "DEEPSEEK_API_KEY", True, "DEEPSEEK_BASE_URL",
        "https://api.deepseek.com", "deepseek:deepseek-chat",
    ),
    "ollama": ProviderSpec(
        "ollama", "openai", "Ollama (OpenAI-compatible)", "OLLAMA_API_KEY", False, "OLLAMA_BASE_URL",
        "http://localhost:11434/v1", "ollama:qwen3",
    ),
    "scripted": ProviderSpec("scripted", "scripted", "offline scripted model"),
}

# Only for the hint in the error about a bare id; never applied without the user writing the prefix.
_PREFIX_HINTS = (
    ("claude", "anthropic"), ("gpt-", "openai"), ("chatgpt", "openai"), ("o1", "openai"), ("o3", "openai"),
    ("o4", "openai"), ("deepseek", "deepseek"),
)


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A resolved model id, for display: no secrets, only whether the key is there."""

    model_id: str
    provider: str
    model: str
    title: str
    base_url: str | None
    key_variable: str | None
    has_key: bool
    is_offline: bool
    is_default: bool


def _choices() -> str:
    return ", ".join(PROVIDERS)


def parse_model_id(model_id: str) -> tuple[str, str]:
    """`"provider:model"` -> (provider, model). Splits at the first colon (`ollama:qwen3:8b` works)."""
    model_id = model_id.strip()
    prefix, colon, model = model_id.partition(":")
    prefix = prefix.strip().lower()
    if not colon or prefix not in PROVIDERS:
        guess = next((p for start, p in _PREFIX_HINTS if model_id.lower().startswith(start)), "ollama")
        what = "has no provider prefix" if not colon else f"names an unknown provider {prefix!r}"
        raise ConfigError(
            f"model id {model_id!r} {what}: write it as PROVIDER:MODEL, e.g. '{guess}:{model_id}' "
            f"(providers: {_choices()})"
        )
    model = model.strip()
    if not model:
        raise ConfigError(f"model id {model_id!r} names no model: write it as {prefix}:MODEL")
    return prefix, model


def default_model_id(env: Mapping[str, str] = os.environ) -> str:
    """`SYNAPSE_MODEL` if set and not empty, else `scripted:demo` (the offline model)."""
    return env.get("SYNAPSE_MODEL", "").strip() or DEFAULT_MODEL


def _key(spec: ProviderSpec, env: Mapping[str, str]) -> str | None:
    return (env.get(spec.key_variable, "").strip() or None) if spec.key_variable else None


def _base_url(spec: ProviderSpec, env: Mapping[str, str]) -> str | None:
    if spec.base_url_variable is None:
        return None
    url = env.get(spec.base_url_variable, "").strip() or spec.default_base_url
    if url is not None and not url.startswith(("http://", "https://")):
        raise ConfigError(f"{spec.base_url_variable}={url!r} is not an http:// or https:// URL")
    return url


def model_info(model_id: str | None = None, *, env: Mapping[str, str] = os.environ) -> ModelInfo:
    """What `model_id` (default: `default_model_id(env)`) resolves to, without creating a provider."""
    is_default = model_id is None or not model_id.strip()
    resolved = default_model_id(env) if model_id is None or not model_id.strip() else model_id
    provider, model = parse_model_id(resolved)
    spec = PROVIDERS[provider]
    return ModelInfo(
        model_id=f"{provider}:{model}", provider=provider, model=model, title=spec.title,
        base_url=_base_url(spec, env), key_variable=spec.key_variable, has_key=_key(spec, env) is not None,
        is_offline=spec.wire == "scripted", is_default=is_default and not env.get("SYNAPSE_MODEL", "").strip(),
    )


def is_offline(model_id: str | None = None, *, env: Mapping[str, str] = os.environ) -> bool:
    """True when the model is the offline scripted one (no network, no key)."""
    return model_info(model_id, env=env).is_offline


def describe_model(model_id: str | None = None, *, env: Mapping[str, str] = os.environ) -> str:
    """One line for the display: which model, where, and whether it is the offline one."""
    info = model_info(model_id, env=env)
    if info.is_offline:
        line = f"{info.model_id} (offline scripted model, no API calls"
        if info.is_default:
            keyed = [s for s in PROVIDERS.values() if s.key_required and _key(s, env) is not None]
            if keyed:
                line += f"; {keyed[0].key_variable} is set: choose it with SYNAPSE_MODEL={keyed[0].example}"
            else:
                line += "; for a real model set SYNAPSE_MODEL (e.g. anthropic:claude-sonnet-4-5) and its API key"
        return line + ")"
    line = f"{info.model_id} ({info.title} at {info.base_url})"
    spec = PROVIDERS[info.provider]
    if spec.key_required and not info.has_key:
        line += f"; {spec.key_variable} is not set"
    return line


def resolve_provider(
    model_id: str | None = None,
    *,
    env: Mapping[str, str] = os.environ,
    timeout: httpx.Timeout | float | None = None,
    retry: RetryPolicy | None = None,
    max_tokens: int | None = None,
) -> Provider:
    """A Provider for `model_id` (default: `default_model_id(env)`); MissingKeyError names the variable to set.

    `timeout` (httpx.Timeout or read seconds; default connect 10 s, read 120 s), `retry` and `max_tokens`
    (Anthropic's required limit, default 4096) apply to the HTTP providers.
    """
    info = model_info(model_id, env=env)
    spec = PROVIDERS[info.provider]
    if spec.wire == "scripted":
        from .scripted import ScriptedProvider

        return ScriptedProvider(info.model, model=info.model)
    key = _key(spec, env)
    if spec.key_required and key is None:
        raise MissingKeyError(
            f"{info.model_id} needs an API key: set {spec.key_variable} (or use {DEFAULT_MODEL} to work offline)",
            provider=info.provider, variable=str(spec.key_variable),
        )
    base_url = info.base_url or ""
    if spec.wire == "anthropic":
        from .anthropic import DEFAULT_MAX_TOKENS, AnthropicProvider

        return AnthropicProvider(
            info.model, api_key=key, base_url=base_url, max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
            key_variable=spec.key_variable, timeout=timeout, retry=retry,
        )
    from .openai import OpenAIProvider

    return OpenAIProvider(
        info.model, api_key=key, base_url=base_url, name=info.provider, key_variable=spec.key_variable,
        timeout=timeout, retry=retry,
    )


class ProviderCache:
    """One provider per model id, replaced when the key or base URL the environment gives it changes.

    The key is never kept here, nor put in a cache key, a repr or a log: each entry holds an HMAC of
    (key, base URL) under a random secret of this cache, compared in constant time. A replaced provider
    is kept for `aclose_retired` (it may own open connections; closing them needs the event loop).
    """

    def __init__(self) -> None:
        self._secret = os.urandom(32)
        self._entries: dict[str, tuple[bytes, Provider]] = {}
        self._retired: list[Provider] = []

    def __repr__(self) -> str:
        return f"ProviderCache(models={sorted(self._entries)!r}, retired={len(self._retired)})"

    def get(self, model_id: str | None = None, *, env: Mapping[str, str] = os.environ) -> Provider:
        """The provider for `model_id` (default: `default_model_id(env)`), new if its key or base URL changed.

        Raises what `resolve_provider` raises (ConfigError, MissingKeyError); the cached one then stays.
        """
        info = model_info(model_id, env=env)
        spec = PROVIDERS[info.provider]
        stamp = self._stamp(_key(spec, env), info.base_url)
        entry = self._entries.get(info.model_id)
        if entry is not None and hmac.compare_digest(entry[0], stamp):
            return entry[1]
        provider = resolve_provider(info.model_id, env=env)
        if entry is not None:
            logger.info("%s: the API key or base URL changed; using a new provider", info.model_id)
            self._retired.append(entry[1])
        self._entries[info.model_id] = (stamp, provider)
        return provider

    def _stamp(self, key: str | None, base_url: str | None) -> bytes:
        message = f"{key is not None}\0{key or ''}\0{base_url or ''}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).digest()

    @property
    def retired(self) -> int:
        """How many replaced providers wait for `aclose_retired`."""
        return len(self._retired)

    async def aclose_retired(self) -> None:
        """Close the providers that were replaced (a failure to close one is logged, not raised)."""
        retired, self._retired = self._retired, []
        for provider in retired:
            await _close(provider)

    async def aclose(self) -> None:
        """Close every provider, current and replaced; the cache is empty afterwards."""
        current = [provider for _, provider in self._entries.values()]
        self._entries.clear()
        await self.aclose_retired()
        for provider in current:
            await _close(provider)


async def _close(provider: Provider) -> None:
    try:
        await provider.aclose()
    except Exception:  # closing goes on whatever one provider does
        logger.exception("closing provider %s failed", provider.name)
