"""The providers' TLS context: one per process for https (loading the CA bundle once), none loaded for http."""

from __future__ import annotations

import ssl

import certifi
import pytest

from synapse_nb.providers.anthropic import AnthropicProvider
from synapse_nb.providers.openai import OpenAIProvider


def context_of(provider: OpenAIProvider | AnthropicProvider) -> ssl.SSLContext:
    """The context the provider's connections would use (httpx's transport hands it to httpcore's pool)."""
    context = provider._http._client._transport._pool._ssl_context  # type: ignore[attr-defined]
    assert isinstance(context, ssl.SSLContext)
    return context


def test_https_providers_share_one_verifying_context() -> None:
    first = OpenAIProvider("gpt-test", api_key="sk-a")
    second = AnthropicProvider("claude-test", api_key="sk-b")
    third = OpenAIProvider("other", api_key="sk-c", base_url="https://api.deepseek.com", name="deepseek")
    context = context_of(first)
    assert context_of(second) is context
    assert context_of(third) is context
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0  # the CA bundle is loaded: real servers verify


def test_a_plain_http_provider_loads_no_certificates_and_still_verifies() -> None:
    local = OpenAIProvider("llama", base_url="http://127.0.0.1:11434/v1", name="ollama", key_variable=None)
    context = context_of(local)
    assert context.cert_store_stats()["x509_ca"] == 0
    assert context.verify_mode == ssl.CERT_REQUIRED  # a redirect to https would fail, not go unchecked
    assert context.check_hostname


def test_the_ca_settings_of_the_environment_are_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    before = context_of(OpenAIProvider("gpt-test", api_key="sk-a"))
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    after = context_of(OpenAIProvider("gpt-test", api_key="sk-a"))
    assert after is not before
    assert after.cert_store_stats()["x509_ca"] > 0
