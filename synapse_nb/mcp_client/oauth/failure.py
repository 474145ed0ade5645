"""Why an OAuth flow failed, as one OAuthError line that says what happened and what to do (no secrets)."""

from __future__ import annotations

import httpx2
from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError

from ...errors import OAuthError
from .masking import oauth_mask

__all__ = ["auth_error"]


def auth_error(server: str, exc: BaseException, *, discovered: bool = True) -> OAuthError:
    """The OAuthError for the failure recorded on an OAuthSession (see provider._Recording); `discovered`
    False says the server answered 401 without publishing any OAuth metadata."""
    if isinstance(exc, OAuthError):
        return exc
    if not discovered and isinstance(exc, OAuthRegistrationError):
        return OAuthError(f"MCP server {server!r} answered 401 Unauthorized and publishes no OAuth metadata: check "
                          "its URL and any Authorization header, or configure its oauth entry", server=server,
                          kind="failed")
    again = f"`%mcp auth {server}`"
    origin = getattr(exc, "origin", None)
    if origin is not None or isinstance(exc, httpx2.TransportError):
        where = origin or "its authorization server"
        return OAuthError(f"cannot reach the authorization server {where} of MCP server {server!r}; check the network "
                          f"(or the server's metadata), then run {again}", server=server, kind="unreachable")
    text = oauth_mask()(str(exc))
    if isinstance(exc, OAuthTokenError) and "invalid_client" in text:
        return OAuthError(f"the authorization server rejected the client credentials of MCP server {server!r} "
                          f"(invalid_client): check oauth.client_id and oauth.client_secret, or run `%mcp logout "
                          f"{server}` to register afresh, then {again}", server=server, kind="invalid_client")
    if isinstance(exc, OAuthTokenError) and "invalid_grant" in text:
        return OAuthError(f"the authorization server of MCP server {server!r} refused the grant (invalid_grant); "
                          f"run {again} to sign in again", server=server, kind="refused")
    if isinstance(exc, OAuthRegistrationError):
        return OAuthError(f"MCP server {server!r} asks for OAuth, but registering this client failed "
                          f"({_short(text)}); configure a pre-registered oauth.client_id for it", server=server,
                          kind="failed")
    if isinstance(exc, OAuthFlowError) and "does not match" in text and "resource" in text.lower():
        return OAuthError(f"MCP server {server!r} names another resource in its OAuth metadata; not signing in "
                          "there (check the server URL)", server=server, kind="refused")
    if isinstance(exc, OAuthFlowError):
        return OAuthError(f"signing in to MCP server {server!r} failed: {_short(text)}; run {again} to try again",
                          server=server, kind="failed")
    return OAuthError(f"signing in to MCP server {server!r} failed: {type(exc).__name__}: {_short(text)}",
                      server=server, kind="failed")


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 200 else line[:199] + "…"
