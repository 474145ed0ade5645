"""DPoP (RFC 9449): access tokens bound to a key the client holds, proven with a fresh signed proof per request.

`DPoPKey` is the key pair (EC P-256, ES256) and signs proofs with PyJWT; `DPoPAuth` wraps the SDK's OAuth
provider (any grant) and, without changing its flow:
- puts a proof in the `DPoP` header of every token request (so the authorization server binds the token to
  the key), and of every MCP request that carries a bound token, which it presents as `Authorization: DPoP`
  with the token's hash (`ath`) in the proof;
- answers a server's nonce challenge (`use_dpop_nonce` with a `DPoP-Nonce` header, sections 8 and 9) by
  sending the same request once more with a proof carrying that nonce, and keeps each server's latest nonce;
- shows the SDK a DPoP token response as the Bearer one it knows (its token model only has "Bearer") and
  remembers which access tokens are bound, so that only those are presented with the DPoP scheme.
The key lives as long as the server's OAuth session (the kernel): a token stored by an earlier kernel is
bound to a key that is gone, so the server refuses it and the SDK's provider gets a new one.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from collections.abc import AsyncGenerator
from typing import Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm
from mcp.client.auth.oauth2 import OAuthContext

__all__ = ["DPoPAuth", "DPoPKey"]

ALGORITHM = "ES256"
NONCE_HEADER = "DPoP-Nonce"


class DPoPKey:
    """A DPoP key pair: the private half signs proofs, the public half travels in each proof's header."""

    def __init__(self) -> None:
        self._private = ec.generate_private_key(ec.SECP256R1())
        public: dict[str, Any] = json.loads(ECAlgorithm.to_jwk(self._private.public_key()))
        self.jwk = {k: public[k] for k in ("kty", "crv", "x", "y")}

    def __repr__(self) -> str:
        return f"DPoPKey({self.thumbprint[:8]}...)"

    @property
    def thumbprint(self) -> str:
        """The JWK SHA-256 thumbprint (RFC 7638) that a bound token's `cnf.jkt` names."""
        canonical = json.dumps(self.jwk, sort_keys=True, separators=(",", ":")).encode()
        return _b64(hashlib.sha256(canonical).digest())

    def proof(self, method: str, url: str, *, nonce: str | None = None, access_token: str | None = None) -> str:
        """A fresh proof (its own `jti`) for one request: `htu` is the URL without query and fragment."""
        parts = urlsplit(url)
        claims: dict[str, Any] = {"jti": str(uuid.uuid4()), "htm": method.upper(),
                                  "htu": urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")),
                                  "iat": int(time.time())}
        if nonce:
            claims["nonce"] = nonce
        if access_token:
            claims["ath"] = _b64(hashlib.sha256(access_token.encode("ascii")).digest())
        return jwt.encode(claims, self._private, algorithm=ALGORITHM, headers={"typ": "dpop+jwt", "jwk": self.jwk})


class DPoPAuth(httpx2.Auth):
    """The SDK provider's flow with DPoP proofs added (see the module docstring). One per connect; the key,
    the nonces and the bound tokens are the session's, so they outlive a reconnect."""

    requires_request_body = True
    requires_response_body = True

    def __init__(self, inner: httpx2.Auth, key: DPoPKey, nonces: dict[str, str], bound: set[str]) -> None:
        self.inner = inner
        self.key = key
        self.nonces = nonces  # origin -> the latest nonce that server gave
        self.bound = bound  # access tokens issued as DPoP-bound

    @property
    def context(self) -> OAuthContext | None:
        """The wrapped SDK provider's flow state (what it discovered), for whoever records why a flow failed."""
        context = getattr(self.inner, "context", None)
        return context if isinstance(context, OAuthContext) else None

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = self.inner.async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                if _is_token_request(outgoing):
                    response = yield self._prove(outgoing)
                    if await self._nonce_challenge(response, 400):
                        response = yield self._prove(outgoing)
                    response = await self._unbind_type(response)
                elif outgoing is request:
                    response = yield self._present(outgoing)
                    if outgoing.headers.get("DPoP") and await self._nonce_challenge(response, 401):
                        response = yield self._present(outgoing)
                else:
                    response = yield outgoing
                self._remember_nonce(response)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    def _prove(self, request: httpx2.Request, access_token: str | None = None) -> httpx2.Request:
        request.headers["DPoP"] = self.key.proof(request.method, str(request.url),
                                                 nonce=self.nonces.get(_origin(request.url)),
                                                 access_token=access_token)
        return request

    def _present(self, request: httpx2.Request) -> httpx2.Request:
        """A bound token goes as `DPoP <token>` with a proof; anything else as the SDK set it."""
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() in ("bearer", "dpop") and token in self.bound:
            request.headers["Authorization"] = f"DPoP {token}"
            return self._prove(request, access_token=token)
        request.headers.pop("DPoP", None)
        return request

    def _remember_nonce(self, response: httpx2.Response) -> None:
        nonce = response.headers.get(NONCE_HEADER)
        if nonce:
            self.nonces[_origin(response.request.url)] = nonce

    async def _nonce_challenge(self, response: httpx2.Response, status: int) -> bool:
        """The server wants a proof with its nonce (and gave one we had not used): remember it, say retry."""
        nonce = response.headers.get(NONCE_HEADER)
        if response.status_code != status or not nonce:
            return False
        origin = _origin(response.request.url)
        if self.nonces.get(origin) == nonce:
            return False  # already sent with this nonce: the refusal is about something else
        if status == 401:
            asked = "use_dpop_nonce" in response.headers.get("WWW-Authenticate", "")
        else:
            asked = _json(await response.aread()).get("error") == "use_dpop_nonce"
        if asked:
            self.nonces[origin] = nonce
        return asked

    async def _unbind_type(self, response: httpx2.Response) -> httpx2.Response:
        """A `token_type: DPoP` answer: its token is remembered as bound and the SDK sees `Bearer`."""
        if response.status_code not in (200, 201):
            return response
        body = _json(await response.aread())
        if str(body.get("token_type", "")).lower() != "dpop" or not isinstance(body.get("access_token"), str):
            return response
        self.bound.add(body["access_token"])
        body["token_type"] = "Bearer"
        headers = {k: v for k, v in response.headers.items() if k.lower() not in ("content-length", "content-encoding")}
        return httpx2.Response(response.status_code, headers=headers, content=json.dumps(body).encode(),
                               request=response.request)


def _is_token_request(request: httpx2.Request) -> bool:
    """A POST of a form with a `grant_type`: what every grant sends to the token endpoint."""
    if request.method != "POST" or "application/x-www-form-urlencoded" not in request.headers.get("Content-Type", ""):
        return False
    return "grant_type" in parse_qs(request.content.decode("utf-8", "replace"))


def _origin(url: httpx2.URL) -> str:
    return f"{url.scheme}://{url.netloc.decode('ascii')}"


def _json(content: bytes) -> dict[str, Any]:
    try:
        value = json.loads(content)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")
