"""TokenStore: per server URL, a 0600 file under the data directory, or the keyring (keyring's own backend API)."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backend
import pytest
from keyring.backends import fail
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from synapse_nb.config import data_dir
from synapse_nb.mcp_client.oauth.storage import KEYRING_SERVICE, TokenStore, usable_keyring

pytestmark = pytest.mark.anyio

URL = "https://mcp.example.com/mcp"
OTHER = "https://other.example.com/mcp"


class MemoryKeyring(keyring.backend.KeyringBackend):
    """A keyring backend that keeps passwords in a dict (keyring ships none; this is its backend API)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.entries.pop((service, username), None) is None:
            raise keyring.errors.PasswordDeleteError(username)


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    before = keyring.get_keyring()
    ring = MemoryKeyring()
    keyring.set_keyring(ring)
    try:
        yield ring
    finally:
        keyring.set_keyring(before)


def tokens(access: str = "at-planted-0001", refresh: str | None = "rt-planted-0001", ttl: int = 3600) -> OAuthToken:
    return OAuthToken(access_token=access, refresh_token=refresh, expires_in=ttl, scope="read")


async def test_file_backend_round_trip_mode_0600_and_forget(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "data", backend="file")
    assert store.backend == "file"
    one, two = store.for_url(URL), store.for_url(OTHER)
    assert await one.get_tokens() is None
    await one.set_tokens(tokens())
    await one.set_client_info(OAuthClientInformationFull(client_id="cid", client_secret="cs-planted-9",
                                                         redirect_uris=None))
    await two.set_tokens(tokens("at-other-0002"))
    got = await one.get_tokens()
    assert got is not None
    assert (got.access_token, got.refresh_token, got.scope) == ("at-planted-0001", "rt-planted-0001", "read")
    info = await one.get_client_info()
    assert info is not None
    assert (info.client_id, info.client_secret) == ("cid", "cs-planted-9")
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(store.directory).st_mode) == 0o700
    assert [p.name for p in store.directory.iterdir() if p.name.endswith(".tmp")] == []
    assert store.has_tokens(URL)
    assert store.has_tokens(OTHER)

    store.forget_tokens(URL)  # `%mcp auth`: the registration stays
    assert not store.has_tokens(URL)
    assert await one.get_client_info() is not None
    assert store.forget(URL) is True
    assert store.forget(URL) is False
    assert await one.get_client_info() is None
    assert store.has_tokens(OTHER)  # the other server keeps its tokens


async def test_an_expired_access_token_comes_back_empty_so_the_sdk_refreshes(tmp_path: Path) -> None:
    store = TokenStore(tmp_path, backend="file")
    server = store.for_url(URL)
    await server.set_tokens(tokens(ttl=3600))
    fresh = await server.get_tokens()
    assert fresh is not None
    assert fresh.access_token == "at-planted-0001"
    assert fresh.expires_in is not None
    assert 3500 < fresh.expires_in <= 3600
    store.update(URL, expires_at=time.time() - 1)
    stale = await server.get_tokens()
    assert stale is not None
    assert (stale.access_token, stale.refresh_token) == ("", "rt-planted-0001")
    await server.set_tokens(tokens(refresh=None))  # no refresh token: the SDK will meet the 401 instead
    store.update(URL, expires_at=time.time() - 1)
    unrefreshable = await server.get_tokens()
    assert unrefreshable is not None
    assert unrefreshable.access_token == "at-planted-0001"


async def test_a_corrupt_file_is_ignored_not_fatal(tmp_path: Path) -> None:
    store = TokenStore(tmp_path, backend="file")
    store.path.write_text("{not json", encoding="utf-8")
    assert await store.for_url(URL).get_tokens() is None
    await store.for_url(URL).set_tokens(tokens())
    assert json.loads(store.path.read_text(encoding="utf-8"))[URL]["tokens"]["access_token"] == "at-planted-0001"


async def test_keyring_backend_keeps_records_out_of_the_data_directory(
    tmp_path: Path, memory_keyring: MemoryKeyring,
) -> None:
    store = TokenStore(tmp_path / "data")
    assert store.backend == "keyring"
    await store.for_url(URL).set_tokens(tokens())
    got = await store.for_url(URL).get_tokens()
    assert got is not None
    assert got.access_token == "at-planted-0001"
    assert (KEYRING_SERVICE, URL) in memory_keyring.entries
    assert not (tmp_path / "data").exists()
    assert store.has_tokens(URL)
    assert store.forget(URL) is True
    assert memory_keyring.entries == {}
    assert store.forget(URL) is False


def test_the_fail_backend_means_the_file(tmp_path: Path) -> None:
    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        assert usable_keyring() is None
        assert TokenStore(tmp_path).backend == "file"
        with pytest.raises(RuntimeError, match="no usable keyring"):
            TokenStore(tmp_path, backend="keyring")
    finally:
        keyring.set_keyring(before)


def test_the_default_directory_is_the_data_directory_not_the_history_folder(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SYNAPSE_DB", str(clean_env / "work" / "history.duckdb"))  # next to a notebook
    store = TokenStore(backend="file")
    assert store.directory == data_dir()
    assert store.directory == clean_env / "home" / ".local" / "share" / "synapse"
