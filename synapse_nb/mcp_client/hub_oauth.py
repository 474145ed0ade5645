"""The hub's OAuth sign-in wiring: stored tokens of HTTP servers, logging out and signing in again."""

from __future__ import annotations

import asyncio

from ..errors import McpError
from .hub_core import HubCore
from .info import ServerInfo
from .oauth.redirect import SignIn
from .oauth.storage import TokenStore

__all__ = ["HubOAuth"]


class HubOAuth(HubCore):
    """McpHub's OAuth methods (oauth/ holds the flow itself; HubCore gives each HTTP server its OAuthSession)."""

    def has_tokens(self, name: str) -> bool:
        """Whether OAuth tokens are stored for the server's URL (a reconnect needs no sign-in)."""
        url = self._conn(name).config.url
        return url is not None and self.token_store is not None and self.token_store.has_tokens(url)

    async def logout(self, name: str) -> bool:
        """Forget the server's stored OAuth tokens and registered client, and disconnect it.

        Returns whether anything was stored. The next connect signs in afresh."""
        conn = self._conn(name)
        url = conn.config.url
        if url is None:
            raise McpError(f"MCP server {name!r} is a stdio server; it has no OAuth sign-in", server=name)
        await self.disconnect(name)
        store = self.token_store if self.token_store is not None else TokenStore()
        return await asyncio.to_thread(store.forget, url)

    async def authenticate(self, name: str, *, sign_in: SignIn | None = None) -> ServerInfo:
        """Sign in to the server again (its stored tokens are dropped, its registered client kept) and reconnect.

        Raises OAuthError when the sign-in does not work (the server is then "failed")."""
        config = self._conn(name).config
        if config.url is None:
            raise McpError(f"MCP server {name!r} is a stdio server; it has no OAuth sign-in", server=name)
        store = self.token_store if self.token_store is not None else TokenStore()
        await asyncio.to_thread(store.forget_tokens, config.url)
        self.token_store = store
        async with self._lock(name):
            old = self._conns.get(name)
            if old is not None:
                await old.stop(reason="signing in again")
        return await self._start(config, sign_in=sign_in)
