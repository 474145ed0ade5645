"""JwtBearerOAuthProvider: the RFC 7523 jwt-bearer grant with a workload's own JWT (workload identity federation).

A CI job or a cloud workload holds a JWT its platform issued (a Kubernetes projected service account token,
a GitHub Actions OIDC token, ...); the authorization server trusts that platform and exchanges the JWT for
an access token, with no browser and no stored secret. The JWT is read at each token request (from the
setting, or from its file, which platforms rotate), so an expired access token is replaced with a fresh
assertion. Everything else (discovery, the resource indicator, scopes, token storage) is the SDK's
OAuthClientProvider; a failed exchange (invalid_grant, invalid_scope, unauthorized_client) ends the flow
with the server's error: the grant is not retried and no other grant is tried.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

import httpx2
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.shared.auth import JWT_BEARER_GRANT_TYPE, OAuthClientInformationFull, OAuthClientMetadata

__all__ = ["JwtBearerOAuthProvider"]

AuthMethod = Literal["none", "client_secret_basic", "client_secret_post"]


class JwtBearerOAuthProvider(OAuthClientProvider):
    """OAuth for one MCP server with the jwt-bearer grant; `assertion()` gives the workload's current JWT."""

    def __init__(
        self, server_url: str, storage: TokenStorage, client_id: str, assertion: Callable[[], Awaitable[str]], *,
        client_secret: str | None = None, token_endpoint_auth_method: AuthMethod = "none", scope: str | None = None,
    ) -> None:
        metadata = OAuthClientMetadata(redirect_uris=None, grant_types=[JWT_BEARER_GRANT_TYPE],
                                       token_endpoint_auth_method=token_endpoint_auth_method, scope=scope)
        super().__init__(server_url, metadata, storage, None, None)
        self._assertion = assertion
        self._client = OAuthClientInformationFull(
            redirect_uris=None, client_id=client_id, client_secret=client_secret, grant_types=[JWT_BEARER_GRANT_TYPE],
            token_endpoint_auth_method=token_endpoint_auth_method, scope=scope,
        )

    async def _initialize(self) -> None:
        """Stored tokens, and the configured client (no registration: the platform's trust names the client)."""
        self.context.current_tokens = await self.context.storage.get_tokens()
        self.context.client_info = self._client
        self._initialized = True

    async def _perform_authorization(self) -> httpx2.Request:
        """The token request of RFC 7523 section 2.1: the workload's JWT as the grant."""
        data: dict[str, Any] = {"grant_type": JWT_BEARER_GRANT_TYPE, "assertion": await self._assertion(),
                                "client_id": self._client.client_id}
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        data, headers = self.context.prepare_token_auth(data, headers)
        if self.context.should_include_resource_param(self.context.protocol_version):
            data["resource"] = self.context.get_resource_url()  # RFC 8707
        if self.context.client_metadata.scope:
            data["scope"] = self.context.client_metadata.scope
        return httpx2.Request("POST", self._get_token_endpoint(), data=data, headers=headers)
