"""OAuthSession: one HTTP server's OAuth, i.e. the SDK provider for its grant, wired to our storage and sign-in.

The SDK does the protocol (discovery, registration, PKCE, token requests, refresh, step-up); this
module only chooses the provider from the settings (authorization code, client credentials with a
secret or a private-key JWT, identity assertion, jwt-bearer: jwt_bearer.py), wraps it in DPoP proofs
when asked (dpop.py), gives it the TokenStore record of the server URL, the loopback redirect URI and
the sign-in step, and remembers why a flow failed, so that the
connection can say it in one line (failure.py) instead of the transport's "connection closed".
While the user signs in the connect deadline is paused (`pause`); the sign-in has its own timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import AnyUrl

from ..._version import __version__
from ...errors import OAuthError
from ...oauth_settings import OAuthSettings, revealed
from .identity import discover_issuer, id_jag_exchange
from .jwt_bearer import JwtBearerOAuthProvider
from .masking import install_log_masking, oauth_mask
from .redirect import LoopbackReceiver, SignIn, authorization_result, default_sign_in
from .storage import ServerTokens, TokenStore

if TYPE_CHECKING:
    from .dpop import DPoPKey

__all__ = ["OAuthSession"]

logger = logging.getLogger("synapse_nb.mcp.oauth")

Pause = Callable[[], AbstractContextManager[None]]


class OAuthSession:
    """The OAuth side of one server connection: build `auth()` per connect, `aclose()` when it ends."""

    def __init__(
        self, name: str, url: str, settings: OAuthSettings | None, store: TokenStore,
        sign_in: SignIn | None = None, pause: Pause | None = None, turn: asyncio.Lock | None = None,
    ) -> None:
        """`turn`, shared between servers, makes their sign-ins wait for each other (a user answers one
        prompt at a time); waiting for it counts towards neither the connect nor the sign-in timeout."""
        self.name = name
        self.turn = turn
        self.url = url
        self.settings = settings if settings is not None else OAuthSettings()
        self.store = store
        self.sign_in = sign_in or default_sign_in
        self.pause = pause or contextlib.nullcontext
        self.failure: BaseException | None = None
        self.discovered = False  # the failed flow had found OAuth metadata (else: a 401 without OAuth)
        self._receiver: LoopbackReceiver | None = None
        self._auth_url: str | None = None
        self._dpop_key: DPoPKey | None = None
        self._dpop_nonces: dict[str, str] = {}
        self._dpop_bound: set[str] = set()
        install_log_masking()
        for secret in self.settings.secrets:
            oauth_mask().add_secret(secret)

    def __repr__(self) -> str:
        return f"OAuthSession({self.name!r}, grant={self.settings.grant!r})"

    async def auth(self) -> httpx2.Auth:
        """The httpx2 auth for this connect: the SDK provider of the configured grant, failures recorded."""
        self.failure = None
        storage = _MaskingStorage(self.store.for_url(self.url))
        s = self.settings
        provider: httpx2.Auth
        if s.grant == "client_credentials":
            provider = await self._client_credentials(storage)
        elif s.grant == "identity_assertion":
            # OAuthSettings' checks made sure all of them are set
            assert s.client_id is not None
            assert s.client_secret is not None
            assert s.idp_token_endpoint is not None
            assert s.idp_client_id is not None
            assert s.idp_id_token is not None
            issuer = s.issuer or await discover_issuer(self.name, self.url)
            provider = IdentityAssertionOAuthProvider(
                server_url=self.url, storage=storage, client_id=s.client_id,
                client_secret=s.client_secret.get_secret_value(), issuer=issuer, scope=s.scope,
                token_endpoint_auth_method=_secret_method(s),
                assertion_provider=id_jag_exchange(self.name, s.idp_token_endpoint, s.idp_client_id,
                                                   s.idp_id_token.get_secret_value()),
            )
        elif s.grant == "jwt_bearer":
            provider = self._jwt_bearer(storage)
        else:
            provider = await self._authorization_code(storage)
        if s.dpop:
            from .dpop import DPoPAuth, DPoPKey  # PyJWT and cryptography: imported only for a DPoP server

            self._dpop_key = self._dpop_key or DPoPKey()
            provider = DPoPAuth(provider, self._dpop_key, self._dpop_nonces, self._dpop_bound)
        return _Recording(self, provider)

    async def aclose(self) -> None:
        if self._receiver is not None:
            await self._receiver.aclose()
            self._receiver = None

    # --- the grants ----------------------------------------------------------------------------------

    async def _authorization_code(self, storage: _MaskingStorage) -> OAuthClientProvider:
        s = self.settings
        if self._receiver is None:
            port = s.redirect_port or _registered_port(await storage.get_client_info())
            try:
                self._receiver = LoopbackReceiver(port)
            except OSError:
                if s.redirect_port:
                    raise OAuthError(f"cannot listen for the sign-in redirect on 127.0.0.1:{s.redirect_port} (in use?);"
                                     " change or drop oauth.redirect_port", server=self.name, kind="failed") from None
                self._receiver = LoopbackReceiver()  # the registered port is taken: a new one (RFC 8252 7.3)
        redirect = AnyUrl(self._receiver.redirect_uri)
        method = s.auth_method
        if s.client_id:
            storage.configured = OAuthClientInformationFull(
                client_id=s.client_id, client_secret=revealed(s.client_secret), redirect_uris=[redirect],
                token_endpoint_auth_method=method, grant_types=["authorization_code", "refresh_token"],
                scope=s.scope, issuer=s.issuer,
            )
        metadata = OAuthClientMetadata(
            client_name="synapse_nb", client_uri=None, software_id="synapse_nb", software_version=__version__,
            redirect_uris=[redirect], grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            token_endpoint_auth_method=method, scope=s.scope,
        )
        provider = OAuthClientProvider(
            server_url=self.url, client_metadata=metadata, storage=storage,
            redirect_handler=self._redirect, callback_handler=self._callback,
            client_metadata_url=s.client_metadata_url,
        )
        await storage.remember_discovery(provider)
        return provider

    async def _client_credentials(self, storage: _MaskingStorage) -> OAuthClientProvider:
        # imported here: it loads PyJWT and cryptography (a tenth of a second), which only this grant needs
        from mcp.client.auth.extensions.client_credentials import (
            ClientCredentialsOAuthProvider,
            PrivateKeyJWTOAuthProvider,
            SignedJWTParameters,
        )

        s = self.settings
        assert s.client_id is not None
        with warnings.catch_warnings():
            # Without `issuer` the SDK warns that discovery picks the authorization server; that is this
            # configuration's documented meaning (set oauth.issuer to pin it), not something to shout about.
            warnings.filterwarnings("ignore", message="Omitting `issuer` is deprecated")
            if s.auth_method == "private_key_jwt":
                key = (s.private_key.get_secret_value() if s.private_key else
                       await asyncio.to_thread(_read_file, self.name, "private_key_file", s.private_key_file or ""))
                oauth_mask().add_secret(key)
                jwt = SignedJWTParameters(issuer=s.client_id, subject=s.client_id, signing_key=key,
                                          signing_algorithm=s.signing_algorithm)
                return PrivateKeyJWTOAuthProvider(server_url=self.url, storage=storage, client_id=s.client_id,
                                                  assertion_provider=jwt.create_assertion_provider(), scope=s.scope,
                                                  issuer=s.issuer)
            assert s.client_secret is not None
            return ClientCredentialsOAuthProvider(server_url=self.url, storage=storage, client_id=s.client_id,
                                                  client_secret=s.client_secret.get_secret_value(),
                                                  token_endpoint_auth_method=_secret_method(s),
                                                  scope=s.scope, issuer=s.issuer)

    def _jwt_bearer(self, storage: _MaskingStorage) -> JwtBearerOAuthProvider:
        s = self.settings
        assert s.client_id is not None  # OAuthSettings' checks made sure

        async def assertion() -> str:
            jwt = revealed(s.assertion) or (await asyncio.to_thread(_read_file, self.name, "assertion_file",
                                                                    s.assertion_file or "")).strip()
            oauth_mask().add_secret(jwt)
            return jwt

        method = s.auth_method
        return JwtBearerOAuthProvider(self.url, storage, s.client_id, assertion,
                                      client_secret=revealed(s.client_secret),
                                      token_endpoint_auth_method="none" if method == "private_key_jwt" else method,
                                      scope=s.scope)

    # --- the sign-in step (SDK redirect and callback handlers) ---------------------------------------

    async def _redirect(self, authorization_url: str) -> None:
        self._auth_url = authorization_url

    async def _callback(self) -> AuthorizationCodeResult:
        assert self._receiver is not None
        assert self._auth_url is not None
        timeout = self.settings.sign_in_timeout
        loopback = asyncio.ensure_future(self._receiver.wait())
        try:
            with self.pause():
                async with self.turn if self.turn is not None else contextlib.AsyncExitStack():
                    with anyio.fail_after(timeout):
                        final = await self.sign_in(self.name, self._auth_url, loopback)
        except TimeoutError:
            raise OAuthError(f"nobody signed in to MCP server {self.name!r} within {timeout:g} s; run "
                             f"`%mcp auth {self.name}` to try again", server=self.name, kind="timeout") from None
        finally:
            loopback.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await loopback
            self._auth_url = None
        result = authorization_result(self.name, final)
        oauth_mask().add_secret(result.code)
        return result


class _MaskingStorage:
    """The server's TokenStorage, telling the mask every token and client secret that passes, and putting a
    client configured in the settings in front of a registered one."""

    def __init__(self, inner: ServerTokens) -> None:
        self.inner = inner
        self.configured: OAuthClientInformationFull | None = None
        self.provider: OAuthClientProvider | None = None

    async def remember_discovery(self, provider: OAuthClientProvider) -> None:
        """Give the provider the metadata found when the stored tokens were issued, and keep what it finds
        next: a refresh after a restart then goes to the real token endpoint (the SDK would guess
        `<server origin>/token`, wrong wherever the authorization server lives elsewhere)."""
        self.provider = provider
        found = await self.inner.get_discovery()
        with contextlib.suppress(ValueError):
            if found.get("oauth_metadata"):
                provider.context.oauth_metadata = OAuthMetadata.model_validate(found["oauth_metadata"])
            if found.get("protected_resource_metadata"):
                provider.context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(
                    found["protected_resource_metadata"])

    async def get_tokens(self) -> OAuthToken | None:
        tokens = await self.inner.get_tokens()
        _mask_tokens(tokens)
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        _mask_tokens(tokens)
        await self.inner.set_tokens(tokens)
        context = self.provider.context if self.provider is not None else None
        if context is not None and context.oauth_metadata is not None:
            prm = context.protected_resource_metadata
            await self.inner.set_discovery({
                "oauth_metadata": context.oauth_metadata.model_dump(mode="json", exclude_none=True),
                "protected_resource_metadata": prm.model_dump(mode="json", exclude_none=True) if prm else None,
            })

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        info = self.configured or await self.inner.get_client_info()
        if info is not None and info.client_secret:
            oauth_mask().add_secret(info.client_secret)
        return info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if client_info.client_secret:
            oauth_mask().add_secret(client_info.client_secret)
        if self.configured is None:
            await self.inner.set_client_info(client_info)


class _Recording(httpx2.Auth):
    """Runs the SDK provider's flow and records on the session why it failed, including the authorization
    server being unreachable (httpx2 closes the flow then, without telling it)."""

    def __init__(self, session: OAuthSession, inner: httpx2.Auth) -> None:
        self.session = session
        self.inner = inner
        self.requires_request_body = inner.requires_request_body
        self.requires_response_body = inner.requires_response_body

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = self.inner.async_auth_flow(request)
        outgoing: httpx2.Request | None = None
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if outgoing is request and response.status_code == 401:
                    self._configured_scope(response)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except GeneratorExit:
            if outgoing is not None and outgoing is not request and self.session.failure is None:
                self.session.failure = _Unreachable(str(outgoing.url))
            raise
        except Exception as exc:
            self.session.failure = exc
            context = getattr(self.inner, "context", None)
            self.session.discovered = context is None or context.oauth_metadata is not None or \
                context.protected_resource_metadata is not None
            raise
        finally:
            await flow.aclose()


    def _configured_scope(self, response: httpx2.Response) -> None:
        """Configured `scopes` are what to ask for unless the server's challenge names a scope: the SDK picks
        the challenge's scope first, then the metadata's, so a configured one goes in as the challenge's
        where the server gave none (a pre-registered client's scopes, as the user wrote them)."""
        scope = self.session.settings.scope
        challenge = response.headers.get("WWW-Authenticate", "")
        if scope and self.session.settings.grant == "authorization_code" and "scope=" not in challenge:
            response.headers["WWW-Authenticate"] = f'{challenge}, scope="{scope}"' if challenge else \
                f'Bearer scope="{scope}"'


class _Unreachable(Exception):
    """An authorization-flow request (metadata, registration, token) got no answer."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        super().__init__(f"{parts.scheme}://{parts.netloc}")
        self.origin = f"{parts.scheme}://{parts.netloc}"


def _mask_tokens(tokens: OAuthToken | None) -> None:
    if tokens is not None:
        for value in (tokens.access_token, tokens.refresh_token):
            if value:
                oauth_mask().add_secret(value)


def _registered_port(info: OAuthClientInformationFull | None) -> int | None:
    """The loopback port a stored registration was made with, so that its redirect URI still matches."""
    for uri in (info.redirect_uris or []) if info is not None else []:
        parts = urlsplit(str(uri))
        if parts.hostname == "127.0.0.1" and parts.port:
            return parts.port
    return None


def _secret_method(s: OAuthSettings) -> Literal["client_secret_basic", "client_secret_post"]:
    return "client_secret_post" if s.auth_method == "client_secret_post" else "client_secret_basic"


def _read_file(server: str, key: str, path: str) -> str:
    try:
        return Path(path).expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise OAuthError(f"cannot read oauth.{key} of MCP server {server!r} ({exc.strerror}): fix the "
                         "path", server=server, kind="failed") from None
