"""One owner for secret masking: the same secrets and rules give the same text on every path that masks."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from synapse_nb.config import ServerConfig
from synapse_nb.errors import AuthenticationError
from synapse_nb.history.redact import Redactor
from synapse_nb.masking import (
    MASK,
    MIN_SECRET_LENGTH,
    SecretMask,
    command_line,
    config_secrets,
    is_secret_name,
    looks_like_key,
    mask_argv,
    mask_url,
    secret_env_values,
)
from synapse_nb.mcp_client.failure import Scrubber
from synapse_nb.notebook.commands.mcp import _mask as display_mask
from synapse_nb.notebook.state import SynapseState
from synapse_nb.providers._http import HttpStreamer
from synapse_nb.providers.openai import OpenAIProvider
from synapse_nb.types import Message
from tests.support.llm_server import LlmServer, error

ENV_SECRET = "envsecret-7f3c2a91d0"
HEADER = "Bearer hdr-value-q8w7e6r5t4"
ENV_VALUE = "srv-env-value-55aa"
API_KEY = "sk-proj-PLANTEDkey0123456789abcd"

# Planted text: literal secrets (registered, from the environment, the credentials of a header value),
# and pattern-only secrets nobody registered (a GitHub token, a URL's api_key, a URL password).
PLANTED = (
    f"env {ENV_SECRET} hdr [{HEADER}] creds-only hdr-value-q8w7e6r5t4 srv {ENV_VALUE} key {API_KEY} "
    "gh ghp_abcdefghijklmnopqrstuvwxyz0123456789 url https://api.example.com/v1?api_key=abcd1234&q=ok "
    "db postgres://ada:pa55word-x@db.example.com/orders canary-visible"
)
EXPECTED = (
    f"env {MASK} hdr [{MASK}] creds-only {MASK} srv {MASK} key {MASK} "
    f"gh {MASK} url https://api.example.com/v1?api_key={MASK}&q=ok "
    f"db postgres://ada:{MASK}@db.example.com/orders canary-visible"
)
SECRETS = [ENV_SECRET, HEADER, "hdr-value-q8w7e6r5t4", ENV_VALUE, API_KEY, "ghp_abcdef", "abcd1234", "pa55word"]


@pytest.fixture
def planted_env(clean_env: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_SERVICE_TOKEN", ENV_SECRET)


def _history(text: str) -> str:
    redactor = Redactor()
    for value in (HEADER, ENV_VALUE, API_KEY):
        redactor.add_secret(value)
    return redactor.redact_text(text)


def _mcp_error(text: str) -> str:
    config = ServerConfig("demo", command="demo-server", env={"SRV_TOKEN": ENV_VALUE, "OTHER": API_KEY},
                          headers={"Authorization": HEADER})
    return Scrubber(config)(text)


def _provider_error(text: str) -> str:
    streamer = HttpStreamer(provider="openai", base_url="http://127.0.0.1:9", secrets=(API_KEY, HEADER, ENV_VALUE))
    return streamer.scrub(text)


def _display(text: str) -> str:
    state = SynapseState(None)
    for value in (HEADER, ENV_VALUE, API_KEY):
        state.add_secret(value)
    return display_mask(state, text)


PATHS: dict[str, Callable[[str], str]] = {
    "history": _history, "mcp error": _mcp_error, "provider error": _provider_error, "display": _display,
}


@pytest.mark.usefixtures("planted_env")
@pytest.mark.parametrize("path", PATHS)
def test_every_path_masks_planted_secrets_the_same_way(path: str) -> None:
    out = PATHS[path](PLANTED)
    assert out == EXPECTED
    assert not [s for s in SECRETS if s in out]


@pytest.mark.usefixtures("planted_env")
@pytest.mark.parametrize("path", PATHS)
def test_one_minimum_length_on_every_path(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    short, enough = "q" * (MIN_SECRET_LENGTH - 1), "z" * MIN_SECRET_LENGTH
    monkeypatch.setenv("SHORT_TOKEN", short)
    monkeypatch.setenv("LONG_TOKEN", enough)
    assert PATHS[path](f"a {short} b {enough} c") == f"a {short} b {MASK} c"


@pytest.mark.anyio
async def test_a_provider_error_echoing_secrets_is_masked_like_the_rest(
    planted_env: None, llm_server: LlmServer
) -> None:
    # The provider knows its own key and the environment's secrets (not an MCP server's header values).
    planted, expected = PLANTED.split(" hdr ")[0], EXPECTED.split(" hdr ")[0]
    tail = PLANTED.split(" key ")[1]
    llm_server.queue(error(401, f"{planted} key {tail}"))
    async with OpenAIProvider("gpt-test", api_key=API_KEY, base_url=llm_server.openai_base_url) as provider:
        with pytest.raises(AuthenticationError) as caught:
            async for _ in provider.stream([Message.user("hi")]):
                pass
    assert f"{expected} key {EXPECTED.split(' key ')[1]}" in str(caught.value)
    assert llm_server.requests[0].headers["authorization"] == f"Bearer {API_KEY}", "the key was really sent"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("x-api-key: sk-ant-api03-whatever0123", f"x-api-key: {MASK}"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", f"Authorization: {MASK}"),
        ("call https://maps.example.com/geo?key=AIzaNOTREAL&z=1", f"call https://maps.example.com/geo?key={MASK}&z=1"),
        ("GET /x?access_token=tok123456&page=2", f"GET /x?access_token={MASK}&page=2"),
        ("export GITHUB_TOKEN=abcdef12345", f"export GITHUB_TOKEN={MASK}"),
        ('{"client_secret": "s3cr3t-value"}', f'{{"client_secret": "{MASK}"}}'),
    ],
)
def test_pattern_rules(text: str, masked: str) -> None:
    assert SecretMask(environ={}).mask(text) == masked


SECRET_KEYS = ["api_key", "apiKey", "X-Api-Key", "client-secret", "password", "passwd", "passphrase", "token",
               "access_token", "refresh-token", "auth_token", "id_token", "session_token", "Authorization",
               "proxy-authorization", "cookie", "Set-Cookie", "private_key", "github.token"]


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_a_secret_looking_key_in_json_and_in_json_inside_json(key: str) -> None:
    mask = SecretMask(environ={})
    assert mask.mask(f'{{"{key}": "value-1234"}}') == f'{{"{key}": "{MASK}"}}'
    inner = json.dumps({"args": json.dumps({key: "value-1234", "n": 1})})
    assert "value-1234" not in mask.mask(inner)
    assert MASK in mask.mask(inner)


def test_text_without_secrets_is_returned_untouched() -> None:
    mask = SecretMask(["registered-value-1"], environ={})
    text = "SELECT count(*) FROM orders; input_tokens=12, the bearer of news, a token of thanks, http://localhost:8888/lab"
    assert mask.mask(text) == text
    plain = "rows: 1, 2, 3, 4, 5, 6, 7, 8, 9"  # no trigger word and no registered form: the fast path
    assert mask.mask(plain) is plain


def test_scheme_credentials_are_registered_alone_too() -> None:
    mask = SecretMask(environ={})
    mask.add_secret("Token abcdef-98765")
    assert mask.mask("sent abcdef-98765 alone") == f"sent {MASK} alone"


def test_no_secret_in_a_repr() -> None:
    mask = SecretMask([API_KEY], environ={"X_TOKEN": ENV_SECRET})
    assert API_KEY not in repr(mask)
    assert ENV_SECRET not in repr(mask)
    assert repr(mask) == "SecretMask(2 literal secrets)"


def test_names_env_values_and_urls() -> None:
    assert is_secret_name("X-Api-Key")
    assert is_secret_name("db_password")
    assert not is_secret_name("max_tokens")
    assert secret_env_values({"A_KEY": " abcdefgh ", "B_TOKEN": "abc", "HOME": "/root/home"}) == ["abcdefgh"]
    assert mask_url("https://ada:pw@host.example/mcp?token=t&x=1#f") == f"https://host.example/mcp?token={MASK}&x={MASK}#f"


def test_a_command_line_is_shown_with_its_url_password_and_secret_flags_masked() -> None:
    argv = ["node", "index.js", "postgresql://reader:readerpw@127.0.0.1:5432/shop", "--api-token", "tok_1",
            "--db-password=hunter22", "--verbose", "--name", "a b"]
    assert command_line(argv[0], argv[1:]) == (
        f"node index.js postgresql://reader:{MASK}@127.0.0.1:5432/shop --api-token {MASK} --db-password={MASK} "
        "--verbose --name 'a b'"
    )
    assert mask_argv(["--key", "k", "--secret=s", "--keyboard", "us"]) == ["--key", MASK, f"--secret={MASK}",
                                                                         "--keyboard", "us"]
    assert command_line(None) == ""


def test_secret_flags_in_free_text_are_masked_but_help_text_stays() -> None:
    mask = SecretMask(environ={})
    assert mask("started with --api-token tok_abc123 --port 80") == f"started with --api-token {MASK} --port 80"
    assert mask("node srv.js --client-secret=s3") == f"node srv.js --client-secret={MASK}"
    assert mask("pass your key with the --api-key flag") == "pass your key with the --api-key flag"


def test_a_servers_env_values_are_secrets_when_they_say_or_look_so() -> None:
    env = {"DOCUMENT_ID": "notebook.ipynb", "REGION": "production-eu-west-1", "API_TOKEN": "plain words",
           "PGPASSWORD": "hunter22", "AUTHOR": "Ada Lovelace", "RANDOM": "a9F3kQ7zL2mX8vB4nR6t",
           "OPENAI": "sk-abcdefghijklmnopqrstuv", "DB": "postgresql://reader:pw4db55@db/shop"}
    assert config_secrets(env, {"X-Trace": "abc"}) == ["abc", "plain words", "hunter22", "a9F3kQ7zL2mX8vB4nR6t",
                                                       "sk-abcdefghijklmnopqrstuv", "pw4db55"]
    assert looks_like_key("Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==")
    assert not looks_like_key("MyQuarterlyReport2024")
    assert not looks_like_key("/home/ada/data/run-20240101")
