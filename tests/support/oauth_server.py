"""The one local OAuth-protected MCP server for tests: the SDK's auth routes and bearer middleware over an in-memory AS.

It serves streamable HTTP at ORIGIN/mcp, its protected-resource metadata, and an authorization server
(metadata, /authorize, /token, /register, /revoke) on the same origin, tools `add` and `echo`. The
authorization endpoint approves at once, as a user clicking "Allow" would (`deny` answers `access_denied`).
Test-only route `GET /test/state`: every secret the server issued or was given (codes, access and refresh
tokens, registered and planted client secrets, the PKCE verifiers of token requests) for the tests' scans;
counts of authorizations, refreshes, registrations and denials, to tell a reconnect from a new sign-in; the
access tokens still live, to wait for a short `access_ttl` to pass.

Test modes: `dpop=True` requires DPoP (RFC 9449: a valid proof at the token endpoint, tokens issued as
`token_type: DPoP` bound to the proof's key, and `Authorization: DPoP` with a matching proof on every MCP
request; `dpop_nonce` also demands that nonce, answering use_dpop_nonce first); `jwt_bearer=True` accepts
the RFC 7523 jwt-bearer grant with a workload JWT signed by WORKLOAD_KEY for this server's issuer
(`workload_jwt()` makes one), from a confidential client.

Three ways to run it, all yielding an `OAuthServer`:
- `serve(**options)`: in this process, uvicorn in a thread (fixtures; `.provider` can be changed directly);
- `spawn(folder, *argv)`: a subprocess with the command-line options below (e.g. for kernels' tests);
- `python tests/support/oauth_server.py [--port PORT] [options]`: by hand; prints the URL once it listens.
`follow(link)` and `redirect_of(link)` do what a browser does with a sign-in link; `nowhere()` is an
origin where nothing listens, for `issuer`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import http.client
import json
import math
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    IdentityAssertionParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import JWT_BEARER_GRANT_TYPE, InvalidRedirectUriError, OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

if not __package__:  # run by path, as a server: its imports name the tests package of this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support.local_servers import free_port

SCOPE = "notes"
WORKLOAD_KEY = ec.generate_private_key(ec.SECP256R1())
"""The key of the workload platform this server's jwt-bearer grant trusts (test mode `jwt_bearer`)."""


def workload_jwt(issuer: str, *, subject: str = "ci-job", expires_in: int = 300) -> str:
    """A workload JWT as a platform would issue it for the authorization server `issuer` (its audience)."""
    now = int(time.time())
    claims = {"iss": "https://platform.test", "sub": subject, "aud": issuer, "iat": now, "exp": now + expires_in,
              "jti": secrets.token_hex(8)}
    return jwt.encode(claims, WORKLOAD_KEY, algorithm="ES256")


class LoopbackClient(OAuthClientInformationFull):
    """A pre-registered client whose redirect may use any port on the loopback address (RFC 8252 §7.3)."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None or redirect_uri.host not in ("127.0.0.1", "localhost", "[::1]", "::1"):
            raise InvalidRedirectUriError(f"Redirect URI '{redirect_uri}' is not a loopback address")
        return redirect_uri


class MemoryAuthServer:
    """An OAuthAuthorizationServerProvider holding clients, codes and tokens in memory."""

    def __init__(self, *, access_ttl: int, deny: bool, resource: str, scope: str | None = SCOPE,
                 issuer: str = "") -> None:
        self.access_ttl = access_ttl
        self.issuer = issuer
        self.deny = deny
        self.resource = resource
        self.scope = scope
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.issued: list[str] = []  # every secret value handed out or planted, for the tests' scans
        self.counts = {"authorizations": 0, "refreshes": 0, "registrations": 0, "denied": 0, "verifiers": 0,
                       "assertions": 0, "dpop_proofs": 0, "nonce_challenges": 0}
        self.dpop_bound: dict[str, str] = {}  # access token -> the JWK thumbprint of the key it is bound to
        self.dpop_jtis: set[str] = set()
        self.scopes_asked: list[list[str] | None] = []  # the `scope` of each authorization request

    def expire_access_tokens(self) -> None:
        """Every access token handed out so far is expired (without waiting for `access_ttl`)."""
        for token in self.access.values():
            token.expires_at = int(time.time()) - 1

    def plant_client(self, client_id: str, client_secret: str | None, method: str = "client_secret_basic") -> None:
        """A client known beforehand (confidential with a secret, else public); any loopback redirect port."""
        method = method if client_secret else "none"
        self.clients[client_id] = LoopbackClient(
            client_id=client_id, client_secret=client_secret, token_endpoint_auth_method=method,
            redirect_uris=[AnyUrl("http://127.0.0.1/callback")], scope=self.scope,
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
        self.scopes_asked.append(params.scopes)
        if self.deny:
            self.counts["denied"] += 1
            raise AuthorizeError("access_denied", "the user did not allow access")
        self.counts["authorizations"] += 1
        code = AuthorizationCode(
            code=_secret("code"), scopes=params.scopes or ([self.scope] if self.scope else []),
            expires_at=time.time() + 300,
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

    async def exchange_identity_assertion(self, client: OAuthClientInformationFull,
                                          params: IdentityAssertionParams) -> OAuthToken:
        """The jwt-bearer grant (test mode `jwt_bearer`): a workload JWT signed by WORKLOAD_KEY, for this issuer."""
        self.counts["assertions"] += 1
        self.issued.append(params.assertion)
        try:
            jwt.decode(params.assertion, WORKLOAD_KEY.public_key(), algorithms=["ES256"], audience=self.issuer)
        except jwt.PyJWTError as exc:
            raise TokenError("invalid_grant", f"the workload JWT was refused: {exc}") from None
        return self._tokens(client.client_id, params.scopes or ([self.scope] if self.scope else []), params.resource)

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
                                          resource=resource, subject="test-user")
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                             resource=resource, subject="test-user")
        self.issued += [access, refresh]
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=self.access_ttl,
                          refresh_token=refresh, scope=" ".join(scopes) or None)


def _secret(kind: str) -> str:
    return f"{kind}_{secrets.token_urlsafe(24)}"


def build_server(port: int, *, access_ttl: int = 3600, deny: bool = False, client_id: str | None = None,
                 client_secret: str | None = None, auth_method: str = "client_secret_basic",
                 registration: bool = True, issuer: str | None = None, scope: str | None = SCOPE,
                 jwt_bearer: bool = False) -> tuple[MCPServer[Any], MemoryAuthServer]:
    """The MCP server (tools `add` and `echo`, behind OAuth) and its authorization server.

    `scope` is the one scope the server requires and advertises (None: it names none, so the client
    asks for what it is configured with); `issuer` advertises another authorization server (one that is
    down, say)."""
    origin = f"http://127.0.0.1:{port}"
    provider = MemoryAuthServer(access_ttl=access_ttl, deny=deny, resource=f"{origin}/mcp", scope=scope,
                                issuer=issuer or origin)
    if client_id:
        provider.plant_client(client_id, client_secret, auth_method)
        if jwt_bearer:
            provider.clients[client_id].grant_types = [JWT_BEARER_GRANT_TYPE]
    scopes = [scope] if scope else None
    auth = AuthSettings(
        issuer_url=AnyUrl(issuer or origin), resource_server_url=AnyUrl(f"{origin}/mcp"),
        validate_token_resource=True, required_scopes=scopes,
        client_registration_options=ClientRegistrationOptions(enabled=registration, valid_scopes=scopes,
                                                              default_scopes=scopes),
        revocation_options=RevocationOptions(enabled=True), identity_assertion_enabled=jwt_bearer,
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


@dataclass
class OAuthServer:
    """A running test server: in this process (`local` set) or a subprocess (`process` and `log` set)."""

    origin: str
    local: MemoryAuthServer | None = None
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    @property
    def url(self) -> str:
        return f"{self.origin}/mcp"

    @property
    def provider(self) -> MemoryAuthServer:
        """The authorization server's state, to change directly (a server from serve() only)."""
        if self.local is None:
            raise RuntimeError("a spawned server's provider is in its process: use state()")
        return self.local

    def state(self) -> dict[str, Any]:
        """`GET /test/state`: the issued secrets and the counters (the same for both ways of running)."""
        with urllib.request.urlopen(f"{self.origin}/test/state", timeout=10) as response:
            return dict(json.load(response))


@contextmanager
def serve(*, dpop: bool = False, dpop_nonce: str | None = None, **options: Any) -> Iterator[OAuthServer]:
    """The server in this process, uvicorn in a thread, on a free port, until the block ends.

    `options` are build_server's; `dpop` and `dpop_nonce` are the DPoP test mode (module docstring).
    The socket listens before uvicorn starts, so it is ready at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        port = int(sock.getsockname()[1])
        mcp, provider = build_server(port, **options)
        app = recording_verifiers(mcp.streamable_http_app(), provider)
        if dpop:
            app = requiring_dpop(app, provider, f"http://127.0.0.1:{port}", dpop_nonce)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
        thread.start()
        try:
            yield OAuthServer(f"http://127.0.0.1:{port}", local=provider)
        finally:
            server.should_exit = True
            thread.join(10)


@contextmanager
def spawn(folder: Path, *argv: str) -> Iterator[OAuthServer]:
    """`python tests/support/oauth_server.py --port 0 *argv` in a subprocess, its stderr in a log under `folder`;
    ready once it printed its URL (it listens by then), killed when the block ends."""
    log = folder / f"oauth-server-{secrets.token_hex(4)}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen([sys.executable, __file__, "--port", "0", *argv],
                                   stdout=subprocess.PIPE, stderr=sink)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()  # empty at once if the server ends instead
        if not line.startswith("http://"):
            raise RuntimeError(f"the OAuth test server did not start:\n{log.read_text()}")
        yield OAuthServer(line.strip().removesuffix("/mcp"), process=process, log=log)
    finally:
        process.kill()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


def nowhere() -> str:
    """An origin on 127.0.0.1 where nothing listens: an authorization server that is down (`issuer`)."""
    return f"http://127.0.0.1:{free_port()}"


def follow(link: str) -> str:
    """What a browser does with a sign-in link: GET it and follow the redirects (to the client's loopback
    listener); returns the address it ends on. A refused redirect fails (HTTPError)."""
    with urllib.request.urlopen(link, timeout=30) as response:
        return str(response.url)


def redirect_of(link: str) -> str:
    """The address a browser that cannot reach the client's listener ends on (the redirect, not followed)."""
    parts = urlsplit(link)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    try:
        connection.request("GET", f"{parts.path}?{parts.query}")
        response = connection.getresponse()
        assert response.status == 302, response.status
        return str(response.getheader("Location"))
    finally:
        connection.close()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python tests/support/oauth_server.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0, the default: any free one)")
    parser.add_argument("--access-ttl", type=int, default=3600, help="access-token lifetime in seconds")
    parser.add_argument("--deny", action="store_true", help="the user refuses consent (access_denied)")
    parser.add_argument("--client-id", help="a pre-registered client's id")
    parser.add_argument("--client-secret", help="the pre-registered client's secret (none: a public client)")
    parser.add_argument("--auth-method", default="client_secret_basic",
                        choices=("client_secret_basic", "client_secret_post"),
                        help="how the pre-registered client sends its secret to the token endpoint")
    parser.add_argument("--no-registration", action="store_true", help="turn dynamic client registration off")
    parser.add_argument("--issuer", help="advertise this authorization server instead (e.g. one that is down)")
    parser.add_argument("--no-scope", action="store_true", help=f"require and advertise no scope (not {SCOPE!r})")
    parser.add_argument("--dpop", action="store_true", help="require DPoP proofs and issue DPoP-bound tokens")
    parser.add_argument("--dpop-nonce", help="with --dpop: demand this nonce (use_dpop_nonce first)")
    parser.add_argument("--jwt-bearer", action="store_true",
                        help="accept the jwt-bearer grant with a WORKLOAD_KEY-signed JWT (a confidential client)")
    options = parser.parse_args(argv)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", options.port))
        sock.listen(64)
        port = int(sock.getsockname()[1])
        server, provider = build_server(port, access_ttl=options.access_ttl, deny=options.deny,
                                        client_id=options.client_id, client_secret=options.client_secret,
                                        auth_method=options.auth_method, registration=not options.no_registration,
                                        issuer=options.issuer, scope=None if options.no_scope else SCOPE,
                                        jwt_bearer=options.jwt_bearer)
        app = recording_verifiers(server.streamable_http_app(), provider)
        if options.dpop:
            app = requiring_dpop(app, provider, f"http://127.0.0.1:{port}", options.dpop_nonce)
        print(f"http://127.0.0.1:{port}/mcp", flush=True)  # listening already: spawn() waits for this line
        uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[sock])


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


def dpop_thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638: the SHA-256 of the key's required members, canonical JSON."""
    members = {k: jwk[k] for k in ("crv", "kty", "x", "y")}
    digest = hashlib.sha256(json.dumps(members, sort_keys=True, separators=(",", ":")).encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def check_dpop_proof(provider: MemoryAuthServer, proof: str | None, method: str, url: str, *,
                     token: str | None = None, nonce: str | None = None) -> tuple[str, str]:
    """The proof's key thumbprint and "" when RFC 9449 section 4.3's checks pass, else ("", the problem)."""
    if not proof:
        return "", "missing DPoP proof"
    try:
        header = jwt.get_unverified_header(proof)
        if header.get("typ") != "dpop+jwt" or not isinstance(header.get("jwk"), dict):
            return "", "typ must be dpop+jwt, with the public key as jwk"
        key = ECAlgorithm.from_jwk(json.dumps(header["jwk"]))
        claims = jwt.decode(proof, key, algorithms=["ES256"])  # type: ignore[arg-type]
    except (jwt.PyJWTError, ValueError) as exc:
        return "", f"bad proof: {exc}"
    if claims.get("htm") != method or claims.get("htu") != url:
        return "", f"htm/htu {claims.get('htm')} {claims.get('htu')} are not {method} {url}"
    if abs(time.time() - float(claims.get("iat", 0))) > 60 or claims.get("jti") in provider.dpop_jtis:
        return "", "stale or replayed proof"
    if token is not None:
        ath = base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=").decode()
        if claims.get("ath") != ath:
            return "", "ath does not match the access token"
    if nonce is not None and claims.get("nonce") != nonce:
        return "", "use_dpop_nonce"
    provider.dpop_jtis.add(str(claims["jti"]))
    provider.counts["dpop_proofs"] += 1
    return dpop_thumbprint(header["jwk"]), ""


def requiring_dpop(app: ASGIApp, provider: MemoryAuthServer, origin: str, nonce: str | None) -> ASGIApp:
    """The app behind DPoP (test mode `dpop`): proofs at /token and on /mcp, tokens bound to the proof's key."""

    async def refuse(send: Send, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        raw = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode()),
            *((k.encode(), v.encode()) for k, v in headers.items())]})
        await send({"type": "http.response.body", "body": raw})

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in ("/token", "/mcp"):
            await app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        url, proof = f"{origin}{scope['path']}", headers.get("dpop")
        if scope["path"] == "/token":
            jkt, problem = check_dpop_proof(provider, proof, scope["method"], url, nonce=nonce)
            if problem == "use_dpop_nonce":
                provider.counts["nonce_challenges"] += 1
                await refuse(send, 400, {"error": "use_dpop_nonce"}, {"DPoP-Nonce": nonce or ""})
            elif problem:
                await refuse(send, 400, {"error": "invalid_dpop_proof", "error_description": problem}, {})
            else:
                await app(scope, receive, binding(send, jkt))
            return
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if not token:
            await app(scope, receive, send)  # the SDK's 401 with the resource metadata
            return
        jkt, problem = check_dpop_proof(provider, proof, scope["method"], url, token=token, nonce=nonce)
        if problem == "use_dpop_nonce":
            provider.counts["nonce_challenges"] += 1
            await refuse(send, 401, {"error": "use_dpop_nonce"},
                         {"WWW-Authenticate": 'DPoP error="use_dpop_nonce"', "DPoP-Nonce": nonce or ""})
        elif scheme.lower() != "dpop" or problem or provider.dpop_bound.get(token) != jkt:
            why = problem or "the token is not bound to this key"
            await refuse(send, 401, {"error": "invalid_token"},
                         {"WWW-Authenticate": f'DPoP error="invalid_token", error_description="{why}"'})
        else:
            scope = dict(scope, headers=[(k, v) for k, v in scope["headers"] if k.lower() != b"authorization"]
                         + [(b"authorization", f"Bearer {token}".encode())])
            await app(scope, receive, send)

    def binding(send: Send, jkt: str) -> Send:
        """The token endpoint's answer with its token bound to `jkt` and typed DPoP."""
        start: Message | None = None
        chunks: list[bytes] = []

        async def sending(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            assert start is not None
            body = b"".join(chunks)
            if start["status"] == 200:
                answer = json.loads(body)
                answer["token_type"] = "DPoP"
                provider.dpop_bound[answer["access_token"]] = jkt
                body = json.dumps(answer).encode()
            start["headers"] = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"] + [
                (b"content-length", str(len(body)).encode())]
            await send(start)
            await send({"type": "http.response.body", "body": body})

        return sending

    return wrapped


if __name__ == "__main__":
    main()
