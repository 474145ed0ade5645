"""TokenStore: OAuth tokens and registered client credentials per server URL, in the OS keyring or a 0600 file.

The SDK's OAuthClientProvider reads and writes through `TokenStore.for_url(url)`, a `TokenStorage`.
Where the optional `keyring` package finds a usable backend (not its fail or null backend), each server
URL's record is one keyring entry; otherwise all records live in `oauth_tokens.json` under the synapse
data directory (config.data_dir()), a folder of mode 0700 with the file 0600 from its creation,
replaced atomically (temporary file + rename) under a lock, so two kernels never lose each other's
writes. Never next to a notebook. Nothing here logs a value.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

from ...config import data_dir

__all__ = ["KEYRING_SERVICE", "TOKEN_FILE", "ServerTokens", "TokenStore"]

logger = logging.getLogger("synapse_nb.mcp.oauth")

KEYRING_SERVICE = "synapse_nb-mcp-oauth"
"""The keyring service name; each entry's user name is the server URL."""
TOKEN_FILE = "oauth_tokens.json"
EXPIRY_MARGIN = 30.0
"""Seconds before its expiry at which a stored access token counts as expired (clock skew, a slow request)."""

Backend = Literal["auto", "keyring", "file"]


class TokenStore:
    """Per-server-URL records `{"tokens": ..., "client_info": ...}` in the keyring or the token file.

    `backend` "auto" uses the keyring when usable, else the file; "file" never touches the keyring
    (tests, the conformance driver); "keyring" insists on it. `directory` defaults to config.data_dir().
    """

    def __init__(self, directory: Path | str | None = None, *, backend: Backend = "auto") -> None:
        self.directory = Path(directory).expanduser() if directory is not None else data_dir()
        self._keyring: Any = None
        if backend != "file":
            self._keyring = usable_keyring()
            if self._keyring is None and backend == "keyring":
                raise RuntimeError("no usable keyring backend: install one, or use the file backend")

    @property
    def backend(self) -> str:
        """"keyring" or "file": where records go."""
        return "keyring" if self._keyring is not None else "file"

    @property
    def path(self) -> Path:
        """The token file (used when there is no keyring)."""
        return self.directory / TOKEN_FILE

    def __repr__(self) -> str:
        return f"TokenStore(backend={self.backend!r}, directory={str(self.directory)!r})"

    def for_url(self, url: str) -> ServerTokens:
        """The SDK `TokenStorage` of one server URL."""
        return ServerTokens(self, url)

    def has_tokens(self, url: str) -> bool:
        return bool(self.read(url).get("tokens"))

    def forget(self, url: str) -> bool:
        """Drop the server's tokens and registered client; True when there was something to drop."""
        if self._keyring is not None:
            from keyring.errors import PasswordDeleteError

            try:
                self._keyring.delete_password(KEYRING_SERVICE, url)
            except PasswordDeleteError:  # nothing stored
                return False
            return True
        with self._locked():
            records = self._load()
            found = records.pop(url, None) is not None
            if found:
                self._save(records)
        return found

    def forget_tokens(self, url: str) -> None:
        """Drop the server's tokens but keep its registered client (a new sign-in reuses it)."""
        if self.read(url).get("tokens"):
            self.update(url, tokens=None)

    # --- records -----------------------------------------------------------------------------------

    def read(self, url: str) -> dict[str, Any]:
        if self._keyring is not None:
            raw = self._keyring.get_password(KEYRING_SERVICE, url)
            return _record(raw)
        with self._locked():
            return dict(self._load().get(url) or {})

    def update(self, url: str, **fields: Any) -> None:
        """Merge `fields` into the server's record (read-modify-write under the lock)."""
        if self._keyring is not None:
            record = {**_record(self._keyring.get_password(KEYRING_SERVICE, url)), **fields}
            self._keyring.set_password(KEYRING_SERVICE, url, json.dumps(record))
            return
        with self._locked():
            records = self._load()
            records[url] = {**(records.get(url) or {}), **fields}
            self._save(records)

    # --- the file backend --------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The file's lock (POSIX flock; where there is none, e.g. Windows, writes are only atomic)."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.directory / (TOKEN_FILE + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            logger.warning("the OAuth token file %s cannot be read; signing in again will replace it", self.path)
            return {}
        return data if isinstance(data, dict) else {}

    def _save(self, records: dict[str, Any]) -> None:
        tmp = self.path.with_name(f".{TOKEN_FILE}.{os.getpid()}.tmp")
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # 0600 from the start: never readable
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(records, out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise


class ServerTokens:
    """The SDK `TokenStorage` of one server URL (file and keyring I/O run off the event loop)."""

    def __init__(self, store: TokenStore, url: str) -> None:
        self.store = store
        self.url = url

    def __repr__(self) -> str:
        return f"ServerTokens({self.url!r}, {self.store.backend})"

    async def get_tokens(self) -> OAuthToken | None:
        """The stored tokens. An access token past its expiry comes back empty when there is a refresh token:
        the SDK only learns expiry from a token response, so this is how it knows to refresh after a restart."""
        record = await asyncio.to_thread(self.store.read, self.url)
        raw = record.get("tokens")
        if not _valid(OAuthToken, raw):
            return None
        tokens = OAuthToken.model_validate(raw)
        expires_at = record.get("expires_at")
        if isinstance(expires_at, int | float):
            left = expires_at - time.time()
            if left <= EXPIRY_MARGIN and tokens.refresh_token:
                return tokens.model_copy(update={"access_token": "", "expires_in": 0})
            tokens = tokens.model_copy(update={"expires_in": max(int(left), 0)})
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires_at = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        await asyncio.to_thread(self.store.update, self.url, tokens=tokens.model_dump(mode="json", exclude_none=True),
                                expires_at=expires_at)

    async def get_discovery(self) -> dict[str, Any]:
        """The authorization server and resource metadata found when the tokens were issued (no secrets)."""
        found = (await asyncio.to_thread(self.store.read, self.url)).get("discovery")
        return found if isinstance(found, dict) else {}

    async def set_discovery(self, discovery: dict[str, Any]) -> None:
        await asyncio.to_thread(self.store.update, self.url, discovery=discovery)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = (await asyncio.to_thread(self.store.read, self.url)).get("client_info")
        return OAuthClientInformationFull.model_validate(raw) if _valid(OAuthClientInformationFull, raw) else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await asyncio.to_thread(self.store.update, self.url,
                                client_info=client_info.model_dump(mode="json", exclude_none=True))


def _valid(model: Any, raw: Any) -> bool:
    """Whether a stored record parses as `model` (one that does not is ignored: signing in replaces it)."""
    if not raw:
        return False
    try:
        model.model_validate(raw)
    except ValueError:
        logger.warning("a stored OAuth record did not parse; it is ignored (signing in again replaces it)")
        return False
    return True


def _record(raw: str | None) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def usable_keyring() -> Any:
    """The keyring backend when the optional `keyring` package is installed and has a real one, else None."""
    try:
        import keyring
        from keyring.backends import fail, null
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:  # a broken keyring configuration: fall back to the file
        logger.debug("the keyring backend could not be loaded", exc_info=True)
        return None
    if isinstance(backend, fail.Keyring | null.Keyring) or getattr(backend, "priority", 1) <= 0:
        return None
    return backend
