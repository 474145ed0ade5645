"""A local OAuth-protected MCP server for tests: the SDK's auth routes and bearer middleware over an in-memory AS.

Run `python tests/oauth_server.py --port PORT [options]`; it serves streamable HTTP at
http://127.0.0.1:PORT/mcp, its protected-resource metadata, and an authorization server (metadata,
/authorize, /token, /register, /revoke) on the same origin. The authorization endpoint approves at once,
as a user clicking "Allow" would (`--deny` answers `access_denied` instead). Test-only routes:
`GET /test/state` lists every secret the server issued or was given (codes, access and refresh tokens,
registered and planted client secrets, the PKCE verifiers of token requests), so a test can scan for
them, counts authorizations, refreshes and registrations, so it can tell a reconnect from a new sign-in,
and the access tokens still live, so it can wait for a short `--access-ttl` to pass.
"""

from __future__ import annotations

import argparse
import math
import secrets
import sys
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qs

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SCOPE = "notes"


class LoopbackClient(OAuthClientInformationFull):
    """A pre-registered client whose redirect may use any port on the loopback address (RFC 8252 §7.3)."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None or redirect_uri.host not in ("127.0.0.1", "localhost", "[::1]", "::1"):
            raise InvalidRedirectUriError(f"Redirect URI '{redirect_uri}' is not a loopback address")
        return redirect_uri


class MemoryAuthServer:
    """An OAuthAuthorizationServerProvider holding clients, codes and tokens in memory."""

    def __init__(self, *, access_ttl: int, deny: bool, resource: str) -> None:
        self.access_ttl = access_ttl
        self.deny = deny
        self.resource = resource
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.issued: list[str] = []  # every secret value handed out or planted, for the tests' scans
        self.counts = {"authorizations": 0, "refreshes": 0, "registrations": 0, "denied": 0, "verifiers": 0}

    def plant_client(self, client_id: str, client_secret: str | None, method: str = "client_secret_basic") -> None:
        method = method if client_secret else "none"
        self.clients[client_id] = LoopbackClient(
            client_id=client_id, client_secret=client_secret, token_endpoint_auth_method=method,
            redirect_uris=[AnyUrl("http://127.0.0.1/callback")], scope=SCOPE,
            grant_types=["authorization_code", "refresh_token"],
        )
        if client_secret:
            self.issued.append(client_secret)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.counts["registrations"] += 1
        self.clients[client_info.client_id] = client_info
        if client_info.client_secret:
            self.issued.append(client_info.client_secret)

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if self.deny:
            self.counts["denied"] += 1
            raise AuthorizeError("access_denied", "the user did not allow access")
        self.counts["authorizations"] += 1
        code = AuthorizationCode(
            code=_secret("code"), scopes=params.scopes or [SCOPE], expires_at=time.time() + 300,
            client_id=client.client_id, code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource,
            subject="test-user",
        )
        self.codes[code.code] = code
        self.issued.append(code.code)
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str
                                      ) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "the authorization code was used already")
        return self._tokens(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        token = self.refresh.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        self.counts["refreshes"] += 1
        self.refresh.pop(refresh_token.token, None)  # rotated, as the spec asks of public clients
        return self._tokens(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        access = self.access.get(token)
        if access is None or (access.expires_at is not None and access.expires_at <= time.time()):
            return None
        return access

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _tokens(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = _secret("at"), _secret("rt")
        # A second of leeway past what the client is told (expires_in), as servers allow for clock skew:
        # once the server holds a token expired, the client's own clock has expired it too, so the
        # client refreshes instead of meeting a 401 (which would start a new sign-in).
        expires = math.ceil(time.time()) + self.access_ttl + 1
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes, expires_at=expires,
                                          resource=resource or self.resource, subject="test-user")
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                             resource=resource, subject="test-user")
        self.issued += [access, refresh]
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=self.access_ttl,
                          refresh_token=refresh, scope=" ".join(scopes))


def _secret(kind: str) -> str:
    return f"{kind}_{secrets.token_urlsafe(24)}"


def build_server(port: int, *, access_ttl: int = 3600, deny: bool = False, client_id: str | None = None,
                 client_secret: str | None = None, auth_method: str = "client_secret_basic",
                 registration: bool = True, issuer: str | None = None) -> tuple[MCPServer[Any], MemoryAuthServer]:
    """The MCP server (tools `add` and `echo`, behind OAuth) and its authorization server."""
    origin = f"http://127.0.0.1:{port}"
    provider = MemoryAuthServer(access_ttl=access_ttl, deny=deny, resource=f"{origin}/mcp")
    if client_id:
        provider.plant_client(client_id, client_secret, auth_method)
    auth = AuthSettings(
        issuer_url=issuer or origin, resource_server_url=f"{origin}/mcp", validate_token_resource=False,
        required_scopes=[SCOPE],
        client_registration_options=ClientRegistrationOptions(enabled=registration, valid_scopes=[SCOPE],
                                                              default_scopes=[SCOPE]),
        revocation_options=RevocationOptions(enabled=True),
    )
    server: MCPServer[Any] = MCPServer("oauth-test", auth_server_provider=provider, auth=auth, log_level="WARNING")

    @server.tool(structured_output=False)
    def add(a: int, b: int) -> str:
        """Add two integers."""
        return str(a + b)

    @server.tool(structured_output=False)
    def echo(text: str) -> str:
        """Say the text back."""
        return text

    @server.custom_route("/test/state", methods=["GET"])
    async def state(request: Request) -> Response:
        live = sum(1 for t in provider.access.values() if t.expires_at is None or t.expires_at > time.time())
        return JSONResponse({"issued": provider.issued, "live_access_tokens": live, **provider.counts})

    return server, provider


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python tests/oauth_server.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True, help="port on 127.0.0.1")
    parser.add_argument("--access-ttl", type=int, default=3600, help="access-token lifetime in seconds")
    parser.add_argument("--deny", action="store_true", help="the user refuses consent (access_denied)")
    parser.add_argument("--client-id", help="a pre-registered client's id")
    parser.add_argument("--client-secret", help="the pre-registered client's secret (none: a public client)")
    parser.add_argument("--auth-method", default="client_secret_basic",
                        choices=("client_secret_basic", "client_secret_post"),
                        help="how the pre-registered client sends its secret to the token endpoint")
    parser.add_argument("--no-registration", action="store_true", help="turn dynamic client registration off")
    parser.add_argument("--issuer", help="advertise this authorization server instead (e.g. one that is down)")
    options = parser.parse_args(argv)
    server, provider = build_server(options.port, access_ttl=options.access_ttl, deny=options.deny,
                                    client_id=options.client_id, client_secret=options.client_secret,
                                    auth_method=options.auth_method, registration=not options.no_registration,
                                    issuer=options.issuer)
    url = f"http://127.0.0.1:{options.port}/mcp"
    print(f"oauth-test: serving streamable HTTP on {url}", file=sys.stderr, flush=True)
    app = recording_verifiers(server.streamable_http_app(), provider)
    uvicorn.run(app, host="127.0.0.1", port=options.port, log_level="warning")


def recording_verifiers(app: ASGIApp, provider: MemoryAuthServer) -> ASGIApp:
    """The app, with the PKCE `code_verifier` of each token request kept in `provider.issued` (the SDK's
    token handler checks it but does not hand it to the provider), so the tests scan for it too."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/token":
            await app(scope, receive, send)
            return
        messages: list[Message] = []
        body = b""
        while True:
            message = await receive()
            messages.append(message)
            body += message.get("body", b"")
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        verifiers = parse_qs(body.decode("utf-8", "replace")).get("code_verifier", [])
        provider.issued += verifiers
        provider.counts["verifiers"] += len(verifiers)

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await app(scope, replay, send)

    return wrapped


if __name__ == "__main__":
    main()
