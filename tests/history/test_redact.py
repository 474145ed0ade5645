"""Secrets never reach the spool or the DuckDB file: patterns, registered values, secret env values."""

from __future__ import annotations

from pathlib import Path

import pytest

from synapse_nb import events as ev
from synapse_nb.history.reader import History
from synapse_nb.history.redact import REDACTED, Redactor
from synapse_nb.history.store import HistoryStore
from synapse_nb.types import Message
from tests.history.history_events import conversation


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ("key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123 ok", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"),
        ("key=sk-proj-ABCDEFGHIJKLMNOP1234567890", "sk-proj-ABCDEFGHIJKLMNOP1234567890"),
        ("Authorization: Bearer abc.def-123456789xyz", "abc.def-123456789xyz"),
        ("curl -H 'authorization: Basic dXNlcjpwYXNzd29yZA=='", "dXNlcjpwYXNzd29yZA=="),
        ("token is Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlMTIz", "eyJhbGciOiJIUzI1NiJ9"),
        ("export OPENAI_API_KEY=abcd1234efgh", "abcd1234efgh"),
        ('{"api_key": "plainvalue99", "n": 1}', "plainvalue99"),
        ("gh token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
        ("aws AKIAABCDEFGHIJKLMNOP here", "AKIAABCDEFGHIJKLMNOP"),
    ],
)
def test_patterns_redact_key_like_strings(text: str, gone: str) -> None:
    out = Redactor(environ={}).redact_text(text)
    assert gone not in out
    assert REDACTED in out


def test_ordinary_text_is_left_alone() -> None:
    text = "SELECT count(*) FROM orders; input_tokens=12, the bearer of news, a token of thanks, sk-short"
    assert Redactor(environ={}).redact_text(text) == text


def test_nested_values_and_secret_keys_are_redacted() -> None:
    r = Redactor(environ={})
    r.add_secret("corp-zebra-horse-77")
    out = r.redact(
        {
            "headers": {"Authorization": "anything", "X-Api-Key": "k-1234567", "Accept": "json"},
            "args": [("corp-zebra-horse-77 inside", {"password": "pw-1234"}), {"max_tokens": 100, "token": "abcdef"}],
        }
    )
    assert out == {
        "headers": {"Authorization": REDACTED, "X-Api-Key": REDACTED, "Accept": "json"},
        "args": [[f"{REDACTED} inside", {"password": REDACTED}], {"max_tokens": 100, "token": REDACTED}],
    }


def test_env_secrets_are_taken_at_creation_and_short_values_ignored() -> None:
    r = Redactor(environ={"MY_SERVICE_TOKEN": "tok-4f8a9b2c", "DB_PASSWORD": "short", "HOME": "/root-home-dir"})
    assert r.redact_text("a tok-4f8a9b2c b short /root-home-dir") == f"a {REDACTED} b short /root-home-dir"
    r.add_secret("1")  # too short to register: it would blank every "1"
    assert r.redact_text("1 + 1") == "1 + 1"


def _scan(paths: list[Path], needles: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in paths:
        data = path.read_bytes()
        for needle in needles:
            if needle.encode() in data:
                found.setdefault(needle, []).append(path.name)
    return found


def test_planted_secrets_reach_neither_the_spool_nor_the_file(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_secret = "envsecret-7f3c2a91d0"
    registered = "hdr-value-q8w7e6r5t4"
    api_key = "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3"
    monkeypatch.setenv("ACME_SERVICE_TOKEN", env_secret)
    canary = "canary-visible-text-1b2c3d"  # recorded like the secrets, but not secret: proves the scan sees text

    store = HistoryStore.open(db_path, strict=True)
    store.redactor.add_secret(registered)
    secrets = [env_secret, registered, api_key]
    planted = f"{canary} {env_secret} {registered} {api_key}"
    for event in conversation("s1", secret=planted):
        store.record(event)
    store.record(
        ev.MessageAdded(
            session_id="s1", message_id="x", seq=9, message=Message.user(f"Authorization: Bearer {registered} {canary}")
        )
    )
    spools = [p for p in store.spool_path.parent.iterdir()] if store.spool_path else []
    assert spools
    assert _scan(spools, [*secrets, canary]) == {canary: [p.name for p in spools]}

    store.flush()
    store.close()
    files = [p for p in db_path.parent.rglob("*") if p.is_file() and p.name.startswith("history")]
    found = _scan(files, [*secrets, canary])
    assert found == {canary: ["history.duckdb"]}

    h = History(db_path)
    text = h.sql("SELECT * FROM messages").to_string() + h.tool_calls().to_string() + h.server_events().to_string()
    assert canary in text
    assert not any(s in text for s in secrets)


def test_json_text_is_redacted_in_place_and_stays_json() -> None:
    import json

    r = Redactor(environ={})
    r.add_secret('quote"and\\slash-secret')
    line = json.dumps(
        {
            "t": "tool_calls",
            "r": {
                "arguments": {"headers": {"Authorization": "x1"}, "db_password": "pw-1234"},
                "result_text": json.dumps({"api_key": "plainvalue99", "n": 1}),  # JSON inside a JSON string
                "error": 'failed with quote"and\\slash-secret',
                "input_tokens": 12,
            },
        }
    )
    out = r.redact_text(line)
    row = json.loads(out)["r"]
    assert row["arguments"] == {"headers": {"Authorization": REDACTED}, "db_password": REDACTED}
    assert json.loads(row["result_text"]) == {"api_key": REDACTED, "n": 1}
    assert row["error"] == f"failed with {REDACTED}"
    assert row["input_tokens"] == 12
