"""Model ids to providers: prefixes, defaults, keys, base URLs, display lines, and a resolved model over HTTP."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from synapse_nb.errors import ConfigError, MissingKeyError
from synapse_nb.protocols import Completion, Provider
from synapse_nb.providers import (
    AnthropicProvider,
    OpenAIProvider,
    default_model_id,
    describe_model,
    is_offline,
    model_info,
    parse_model_id,
    resolve_provider,
)
from synapse_nb.types import Message
from tests.providers.provider_support import PLANTED_KEY
from tests.support.llm_server import LlmServer, text


def test_parse_splits_at_the_first_colon() -> None:
    assert parse_model_id("anthropic:claude-sonnet-4-5") == ("anthropic", "claude-sonnet-4-5")
    assert parse_model_id(" ollama:qwen3:8b ") == ("ollama", "qwen3:8b")
    assert parse_model_id("OpenAI:gpt-4.1-mini") == ("openai", "gpt-4.1-mini")


@pytest.mark.parametrize(
    ("model_id", "suggestion"),
    [
        ("gpt-4.1-mini", "'openai:gpt-4.1-mini'"),
        ("claude-sonnet-4-5", "'anthropic:claude-sonnet-4-5'"),
        ("o3-mini", "'openai:o3-mini'"),
        ("deepseek-chat", "'deepseek:deepseek-chat'"),
        ("qwen3", "'ollama:qwen3'"),
    ],
)
def test_a_bare_id_is_refused_with_the_prefixed_form(model_id: str, suggestion: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_model_id(model_id)
    message = str(info.value)
    assert "\n" not in message
    assert "no provider prefix" in message
    assert suggestion in message
    assert "anthropic, openai, deepseek, ollama, scripted" in message


def test_an_unknown_prefix_or_empty_model_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown provider 'mistral'"):
        parse_model_id("mistral:large")
    with pytest.raises(ConfigError, match="names no model"):
        parse_model_id("openai:")


def test_default_is_the_offline_model(clean_env: Path) -> None:
    assert default_model_id() == "scripted:demo"
    assert is_offline()
    assert model_info().is_default
    assert "offline" in describe_model()


def test_keys_alone_do_not_pick_a_model_but_the_display_suggests_one(
    monkeypatch: pytest.MonkeyPatch, clean_env: Path
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLANTED_KEY)
    assert default_model_id() == "scripted:demo"
    line = describe_model()
    assert "offline" in line
    assert "ANTHROPIC_API_KEY is set" in line
    assert "SYNAPSE_MODEL=anthropic:" in line
    assert PLANTED_KEY not in line


def test_synapse_model_names_the_default(monkeypatch: pytest.MonkeyPatch, clean_env: Path) -> None:
    monkeypatch.setenv("SYNAPSE_MODEL", " deepseek:deepseek-chat ")
    assert default_model_id() == "deepseek:deepseek-chat"
    assert not is_offline()
    assert not model_info().is_default


def test_an_explicit_scripted_model_is_offline_but_not_the_default() -> None:
    info = model_info("scripted:demo", env={})
    assert info.is_offline
    assert not info.is_default
    assert describe_model("scripted:demo", env={}) == "scripted:demo (offline scripted model, no API calls)"


@pytest.mark.parametrize(
    ("model_id", "variable"),
    [
        ("anthropic:claude-x", "ANTHROPIC_API_KEY"),
        ("openai:gpt-x", "OPENAI_API_KEY"),
        ("deepseek:deepseek-chat", "DEEPSEEK_API_KEY"),
    ],
)
def test_a_missing_key_names_the_variable(model_id: str, variable: str) -> None:
    with pytest.raises(MissingKeyError) as info:
        resolve_provider(model_id, env={variable: "   "})
    err = info.value
    assert err.variable == variable
    assert err.provider == model_id.split(":")[0]
    assert f"set {variable}" in str(err)
    assert "\n" not in str(err)


def test_describe_a_remote_model_shows_where_and_a_missing_key() -> None:
    env = {"OPENAI_API_KEY": PLANTED_KEY}
    assert (
        describe_model("openai:gpt-x", env=env) == "openai:gpt-x (OpenAI Chat Completions at https://api.openai.com/v1)"
    )
    line = describe_model("anthropic:claude-x", env=env)
    assert "https://api.anthropic.com" in line
    assert "ANTHROPIC_API_KEY is not set" in line
    assert PLANTED_KEY not in line


@pytest.mark.anyio
async def test_providers_and_base_urls() -> None:
    env = {
        "ANTHROPIC_API_KEY": "a",
        "OPENAI_API_KEY": "o",
        "DEEPSEEK_API_KEY": "d",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1/",
    }
    made = [
        resolve_provider(m, env=env) for m in ("anthropic:c", "openai:g", "deepseek:deepseek-chat", "ollama:qwen3:8b")
    ]
    try:
        anthropic, openai, deepseek, ollama = made
        assert isinstance(anthropic, AnthropicProvider)
        assert anthropic.base_url == "https://api.anthropic.com"
        assert isinstance(openai, OpenAIProvider)
        assert openai.base_url == "http://127.0.0.1:9/v1"
        assert isinstance(deepseek, OpenAIProvider)
        assert deepseek.base_url == "https://api.deepseek.com"
        assert isinstance(ollama, OpenAIProvider)
        assert ollama.base_url == "http://localhost:11434/v1"
        assert [(p.name, p.model) for p in made] == [
            ("anthropic", "c"),
            ("openai", "g"),
            ("deepseek", "deepseek-chat"),
            ("ollama", "qwen3:8b"),
        ]
        assert all(isinstance(p, Provider) for p in made)
    finally:
        for p in made:
            await p.aclose()


def test_a_base_url_must_be_http() -> None:
    with pytest.raises(ConfigError, match="OLLAMA_BASE_URL='localhost:11434' is not an http"):
        resolve_provider("ollama:qwen3", env={"OLLAMA_BASE_URL": "localhost:11434"})


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("model_id", "key_var", "url_var", "auth_header"),
    [
        ("anthropic:claude-x", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "x-api-key"),
        ("openai:gpt-x", "OPENAI_API_KEY", "OPENAI_BASE_URL", "authorization"),
        ("deepseek:deepseek-chat", "DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", "authorization"),
        ("ollama:qwen3", None, "OLLAMA_BASE_URL", None),
    ],
)
async def test_resolved_from_the_environment_and_streaming_over_http(
    llm_server: LlmServer,
    monkeypatch: pytest.MonkeyPatch,
    clean_env: Path,
    model_id: str,
    key_var: str | None,
    url_var: str,
    auth_header: str | None,
) -> None:
    url = llm_server.anthropic_base_url if model_id.startswith("anthropic") else llm_server.openai_base_url
    monkeypatch.setenv("SYNAPSE_MODEL", model_id)
    monkeypatch.setenv(url_var, url)
    if key_var:
        monkeypatch.setenv(key_var, PLANTED_KEY)
    llm_server.queue(text("hello from afar"))
    provider = resolve_provider()
    try:
        chunks = [c async for c in provider.stream([Message.user("hi")])]
    finally:
        await provider.aclose()
    assert isinstance(chunks[-1], Completion)
    assert chunks[-1].message.content == "hello from afar"
    (request,) = llm_server.requests
    assert request.body["model"] == model_id.split(":", 1)[1]
    if auth_header:
        assert request.headers[auth_header].endswith(PLANTED_KEY)
    else:
        assert "authorization" not in request.headers
        assert "x-api-key" not in request.headers


def test_scripted_ids_resolve_to_the_scripted_provider() -> None:
    provider = resolve_provider("scripted:demo", env={})
    assert (provider.name, provider.model) == ("scripted", "demo")


@pytest.mark.anyio
async def test_a_scripted_id_may_name_a_json_script_file(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('["Hello from a file"]')
    provider = resolve_provider(f"scripted:{script}", env={})
    chunks = [c async for c in provider.stream([Message.user("hi")])]
    await provider.aclose()
    assert isinstance(chunks[-1], Completion)
    assert chunks[-1].message.content == "Hello from a file"


@pytest.mark.process
def test_importing_the_package_does_not_import_httpx() -> None:
    code = "import sys, synapse_nb.providers as p; p.describe_model(); print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
