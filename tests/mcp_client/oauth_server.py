"""An OAuth-protected MCP server on 127.0.0.1 for the OAuth tests, built from the SDK's server-side auth pieces.

`serve_oauth()` runs an MCPServer with an in-memory authorization server provider (dynamic client
registration, authorization code with PKCE, refresh) under uvicorn in a thread, on a free port. The
provider approves every authorization at once (the "user" is always willing) unless `deny` is set;
`access_ttl` makes access tokens expire; `issued` keeps every token and code handed out, so tests
can plant-and-scan them. `pre_register()` adds a confidential client (for wrong-secret tests).
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


@dataclass
class Provider:
    """In-memory authorization server state (the SDK's OAuthAuthorizationServerProvider protocol)."""

    access_ttl: int = 3600
    deny: bool = False
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    issued: list[str] = field(default_factory=list)
    refreshes: int = 0
    authorizations: int = 0
    scopes_asked: list[list[str] | None] = field(default_factory=list)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        if client_info.client_secret:
            self.issued.append(client_info.client_secret)

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        self.authorizations += 1
        self.scopes_asked.append(params.scopes)
        if self.deny:
            return construct_redirect_uri(str(params.redirect_uri), error="access_denied", state=params.state)
        code = secrets.token_urlsafe(32)
        self.issued.append(code)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[code.code]
        return self._tokens(code.client_id, code.scopes, code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, token: str) -> RefreshToken | None:
        return self.refresh.get(token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refreshes += 1
        del self.refresh[token.token]
        return self._tokens(token.client_id, scopes or token.scopes, token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _tokens(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = f"at-{secrets.token_urlsafe(24)}", f"rt-{secrets.token_urlsafe(24)}"
        self.issued += [access, refresh]
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + self.access_ttl, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, refresh_token=refresh, expires_in=self.access_ttl,
                          scope=" ".join(scopes) or None)

    def pre_register(self, client_id: str, client_secret: str, redirect_uri: str) -> None:
        """A confidential client known to the server beforehand (client_secret_basic)."""
        self.issued.append(client_secret)
        self.clients[client_id] = OAuthClientInformationFull.model_validate({
            "client_id": client_id, "client_secret": client_secret, "redirect_uris": [redirect_uri],
            "token_endpoint_auth_method": "client_secret_basic", "grant_types": ["authorization_code", "refresh_token"],
        })

    def expire_access_tokens(self) -> None:
        for token in self.access.values():
            token.expires_at = int(time.time()) - 1


@dataclass
class OAuthServer:
    base: str
    provider: Provider

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"


@contextmanager
def serve_oauth(provider: Provider | None = None, *, issuer: str | None = None) -> Iterator[OAuthServer]:
    """The server, listening (the socket accepts at once; uvicorn serves it) until the block ends.

    `issuer` names another authorization server in the metadata (e.g. one that is down)."""
    provider = provider or Provider()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield from _serve(provider, sock, f"http://127.0.0.1:{sock.getsockname()[1]}", issuer)


def _serve(provider: Provider, sock: socket.socket, base: str, issuer: str | None) -> Iterator[OAuthServer]:
    settings = AuthSettings.model_validate({
        "issuer_url": issuer or base, "resource_server_url": f"{base}/mcp", "validate_token_resource": True,
        "client_registration_options": ClientRegistrationOptions(enabled=True),
    })
    mcp = MCPServer("oauth-test", auth_server_provider=provider, auth=settings)

    @mcp.tool()
    def whoami() -> str:
        """Says that the caller got in."""
        return "signed in"

    server = uvicorn.Server(uvicorn.Config(mcp.streamable_http_app(), log_level="warning", lifespan="on"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    try:
        yield OAuthServer(base, provider)
    finally:
        server.should_exit = True
        thread.join(10)
