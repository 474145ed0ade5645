"""OAuthAccounts: a hub's OAuth side: its token store, its default sign-in, one OAuthSession per HTTP connect."""

from __future__ import annotations

import asyncio

from ...config import ServerConfig
from .provider import OAuthSession
from .redirect import SignIn, default_sign_in
from .storage import TokenStore

__all__ = ["OAuthAccounts"]


class OAuthAccounts:
    """Stored tokens of HTTP servers and how to sign in to them; the flow itself is provider.py's.

    `token_store` is made (TokenStore(): the keyring or a 0600 file under the data directory) the first
    time it is needed, so a hub of stdio servers never touches the keyring.
    """

    def __init__(self, token_store: TokenStore | None = None, sign_in: SignIn | None = None) -> None:
        self.token_store = token_store
        self.sign_in = sign_in

    def store(self) -> TokenStore:
        if self.token_store is None:
            self.token_store = TokenStore()
        return self.token_store

    def session(self, config: ServerConfig, sign_in: SignIn | None, *, turn: asyncio.Lock) -> OAuthSession | None:
        """HTTP servers get the OAuth side: a look at the token store and a loopback port per connect; the
        flow itself only runs when the server answers 401 (or 403 insufficient_scope). `turn` is shared by
        every server of the hub: one sign-in at a time, as a user answers one prompt at once."""
        if config.url is None or config.transport == "stdio":
            return None
        return OAuthSession(config.name, config.url, config.oauth, self.store(),
                            sign_in or self.sign_in or default_sign_in, turn=turn)

    def has_tokens(self, url: str | None) -> bool:
        """Whether tokens are stored for `url` (looks only at a store already made)."""
        return url is not None and self.token_store is not None and self.token_store.has_tokens(url)

    async def forget(self, url: str) -> bool:
        """Drop the stored tokens and registered client of `url`; whether anything was stored."""
        return await asyncio.to_thread(self.store().forget, url)

    async def forget_tokens(self, url: str) -> None:
        """Drop the stored tokens of `url`, keeping its registered client (signing in again reuses it)."""
        await asyncio.to_thread(self.store().forget_tokens, url)
