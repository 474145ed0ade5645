"""Enterprise-managed (cross-app) access, SEP-990 leg 1: the ID token exchanged at the IdP for an ID-JAG.

The SDK's IdentityAssertionOAuthProvider does leg 2 (the jwt-bearer grant at the MCP server's
authorization server) and leaves leg 1 to the deployment: here it is the RFC 8693 token exchange
at the configured `idp_token_endpoint`. Also `discover_issuer`, for a configuration without
`oauth.issuer`: the first authorization server of the server's protected resource metadata
(RFC 9728, found with the SDK's discovery helpers). Errors are one-line OAuthErrors without secrets.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx2
from mcp.client.auth.utils import build_protected_resource_metadata_discovery_urls, handle_protected_resource_response

from ...errors import OAuthError
from .masking import oauth_mask

__all__ = ["TOKEN_EXCHANGE_GRANT", "discover_issuer", "id_jag_exchange"]

TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
_TIMEOUT = 30.0


async def discover_issuer(server: str, url: str) -> str:
    """The authorization server the MCP server at `url` names first in its protected resource metadata."""
    try:
        async with httpx2.AsyncClient(timeout=_TIMEOUT) as http:
            for candidate in build_protected_resource_metadata_discovery_urls(None, url):
                prm = await handle_protected_resource_response(await http.get(candidate))
                if prm is not None and prm.authorization_servers:
                    return str(prm.authorization_servers[0])
    except httpx2.TransportError as exc:
        raise OAuthError(f"cannot reach MCP server {server!r} to find its authorization server "
                         f"({type(exc).__name__}); check the URL, or set oauth.issuer", server=server,
                         kind="unreachable") from None
    raise OAuthError(f"MCP server {server!r} publishes no protected resource metadata naming its authorization "
                     "server; set oauth.issuer", server=server, kind="failed")


def id_jag_exchange(server: str, endpoint: str, client_id: str, id_token: str) -> Callable[[str, str], Awaitable[str]]:
    """The SDK's `assertion_provider(audience, resource)`: exchange `id_token` at the IdP for an ID-JAG."""

    async def exchange(audience: str, resource: str) -> str:
        form = {"grant_type": TOKEN_EXCHANGE_GRANT, "requested_token_type": ID_JAG_TYPE, "subject_token": id_token,
                "subject_token_type": ID_TOKEN_TYPE, "audience": audience, "resource": resource,
                "client_id": client_id}
        try:
            async with httpx2.AsyncClient(timeout=_TIMEOUT) as http:
                response = await http.post(endpoint, data=form, headers={"Accept": "application/json"})
        except httpx2.TransportError as exc:
            raise OAuthError(f"cannot reach the identity provider of MCP server {server!r} at "
                             f"{httpx2.URL(endpoint).host} ({type(exc).__name__}); check oauth.idp_token_endpoint",
                             server=server, kind="unreachable") from None
        try:
            body = response.json()
        except ValueError:
            body = {}
        jag = body.get("access_token") if isinstance(body, dict) else None
        if response.status_code != 200 or not isinstance(jag, str) or not jag:
            error = body.get("error", f"HTTP {response.status_code}") if isinstance(body, dict) else "no JSON"
            raise OAuthError(f"the identity provider refused to exchange the ID token for MCP server {server!r} "
                             f"({oauth_mask()(str(error))[:100]}); check oauth.idp_id_token and oauth.idp_client_id",
                             server=server, kind="invalid_client" if error == "invalid_client" else "refused")
        oauth_mask().add_secret(jag)
        return jag

    return exchange
