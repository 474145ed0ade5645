"""OAuthSettings: the `oauth` key of an MCP server entry (DESIGN.md section 10), parsed and checked.

    "linear": {"url": "https://mcp.linear.app/mcp",
               "oauth": {"client_id": "abc", "client_secret": "${env:LINEAR_SECRET}", "scopes": ["read"]}}

No `oauth` key at all is fine: a server that answers 401 with OAuth metadata is signed in to with
dynamic client registration (or a client ID metadata document) and the authorization-code grant.
The key is for what cannot be discovered: a pre-registered client, the client-credentials grant of a
service account or CI job (client secret or private-key JWT), the identity-assertion grant of
enterprise-managed (cross-app) access, the jwt-bearer grant of workload identity federation, DPoP-bound
tokens, scopes to ask for, the loopback port and the sign-in wait.
Secret values (`client_secret`, `private_key`, `idp_id_token`, `assertion`) never show in a repr.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from .envvars import expand_vars
from .errors import ConfigError
from .masking import MASK

__all__ = ["DEFAULT_SIGN_IN_TIMEOUT", "GRANTS", "OAUTH_KEYS", "TOKEN_AUTH_METHODS", "OAuthSettings", "parse_oauth"]

Grant = Literal["authorization_code", "client_credentials", "identity_assertion", "jwt_bearer"]
TokenAuthMethod = Literal["client_secret_basic", "client_secret_post", "none", "private_key_jwt"]

GRANTS: tuple[Grant, ...] = ("authorization_code", "client_credentials", "identity_assertion", "jwt_bearer")
TOKEN_AUTH_METHODS: tuple[TokenAuthMethod, ...] = ("client_secret_basic", "client_secret_post", "none",
                                                    "private_key_jwt")
DEFAULT_SIGN_IN_TIMEOUT = 300.0
"""Seconds a connect waits for the user to sign in before it gives up."""
_SECRET_FIELDS = frozenset({"client_secret", "private_key", "idp_id_token", "assertion"})


@dataclass(frozen=True, slots=True, repr=False)
class OAuthSettings:
    """How to authorise with one MCP server. Every field is optional; see the module docstring.

    `grant`: "authorization_code" (a user signs in in the browser), "client_credentials" (a service
    account: `client_id` + `client_secret`, or `private_key`/`private_key_file` for private_key_jwt)
    or "identity_assertion" (SEP-990: an ID token of the enterprise IdP, `idp_id_token`, exchanged
    at `idp_token_endpoint` for an ID-JAG, then presented with `client_id` + `client_secret`)
    or "jwt_bearer" (RFC 7523, workload identity federation: the workload's own JWT, `assertion` or
    `assertion_file` (read at each token request, as platforms rotate it), exchanged with `client_id`
    and, where the server wants one, `client_secret`). `dpop`: ask for DPoP-bound tokens (RFC 9449) and
    prove the key on every request, whatever the grant.
    `scopes`: what to ask for; a browser sign-in still asks for the scope a server's 401 challenge names
    (the MCP scope-selection rule), and None lets the server decide (its challenge, then its metadata).
    `token_endpoint_auth_method` None picks client_secret_basic with a secret, private_key_jwt with
    a key, none otherwise. `issuer` names the authorization server the credentials belong to (then no
    other is trusted with them). `client_metadata_url`: an https URL of a client ID metadata document
    you publish, used where the server supports those instead of registration. `redirect_port`: the
    loopback port (None: a free one, kept once registered). `sign_in_timeout`: seconds to wait.
    """

    grant: Grant = "authorization_code"
    client_id: str | None = None
    client_secret: str | None = None
    scopes: tuple[str, ...] | None = None
    token_endpoint_auth_method: TokenAuthMethod | None = None
    private_key: str | None = None
    private_key_file: str | None = None
    signing_algorithm: str = "RS256"
    issuer: str | None = None
    client_metadata_url: str | None = None
    redirect_port: int | None = None
    sign_in_timeout: float = DEFAULT_SIGN_IN_TIMEOUT
    idp_token_endpoint: str | None = None
    idp_client_id: str | None = None
    idp_id_token: str | None = None
    assertion: str | None = None
    assertion_file: str | None = None
    dpop: bool = False

    def __repr__(self) -> str:
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or value == f.default:
                continue
            shown.append(f"{f.name}={MASK if f.name in _SECRET_FIELDS else repr(value)}")
        return f"OAuthSettings({', '.join(shown)})"

    __str__ = __repr__

    @property
    def secrets(self) -> tuple[str, ...]:
        """The secret values set here, for masking."""
        return tuple(v for v in (self.client_secret, self.private_key, self.idp_id_token, self.assertion) if v)

    @property
    def auth_method(self) -> TokenAuthMethod:
        """The token endpoint auth method in effect (the configured one, else what the credentials imply)."""
        if self.token_endpoint_auth_method is not None:
            return self.token_endpoint_auth_method
        if (self.private_key or self.private_key_file) and self.grant != "jwt_bearer":
            return "private_key_jwt"
        return "client_secret_basic" if self.client_secret else "none"

    @property
    def scope(self) -> str | None:
        """`scopes` as the space-separated string OAuth sends (None when not configured)."""
        return " ".join(self.scopes) if self.scopes else None

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any], *, environ: Mapping[str, str] | None = None) -> OAuthSettings:
        """Parse an `oauth` object (as in the config file; `${env:VAR}` expanded); raises ConfigError."""
        env = os.environ if environ is None else environ
        missing: list[str] = []
        settings, problems = parse_oauth(raw, lambda key, value: expand_vars(value, env, missing, key))
        if missing:
            problems.append("environment variable(s) not set: " + ", ".join(dict.fromkeys(missing)))
        if problems or settings is None:
            raise ConfigError("; ".join(problems or ["oauth must be an object"]))
        return settings


OAUTH_KEYS = frozenset(f.name for f in fields(OAuthSettings))
"""The keys an `oauth` object may have."""


def parse_oauth(raw: Any, expand: Callable[[str, str], str]) -> tuple[OAuthSettings | None, list[str]]:
    """Check an `oauth` object. Returns the settings (None when unusable) and one-line problems, each
    naming its key and the fix. `expand(key, value)` expands `${env:VAR}` in string values.
    Unknown keys are problems too: a mistyped `client_secret` must not silently sign in without it.
    """
    if not isinstance(raw, Mapping):
        return None, ["oauth must be an object, e.g. {\"client_id\": \"...\", \"scopes\": [\"read\"]}"]
    problems: list[str] = []
    for key in raw:
        if key not in OAUTH_KEYS:
            problems.append(f"oauth.{key} is not a known key (known: {', '.join(sorted(OAUTH_KEYS))})")

    def text(key: str) -> str | None:
        value = raw.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            problems.append(f"oauth.{key} must be a non-empty string")
            return None
        return expand(f"oauth.{key}", value).strip() or None

    def choice(key: str, allowed: tuple[str, ...]) -> Any:
        value = raw.get(key)
        if value is not None and value not in allowed:
            problems.append(f"oauth.{key} must be one of {', '.join(allowed)} (got {value!r})")
            return None
        return value

    grant: Grant = choice("grant", GRANTS) or "authorization_code"
    method = choice("token_endpoint_auth_method", TOKEN_AUTH_METHODS)
    scopes: tuple[str, ...] | None = None
    if raw.get("scopes") is not None:
        value = raw["scopes"]
        if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            problems.append("oauth.scopes must be a list of strings, e.g. [\"read\", \"write\"]")
        else:
            scopes = tuple(s for s in value if s.strip())
    port = raw.get("redirect_port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535):
        problems.append("oauth.redirect_port must be a port number (0 or leave it out for a free one)")
        port = None
    wait = raw.get("sign_in_timeout", DEFAULT_SIGN_IN_TIMEOUT)
    if isinstance(wait, bool) or not isinstance(wait, int | float) or wait <= 0:
        problems.append("oauth.sign_in_timeout must be a positive number of seconds")
        wait = DEFAULT_SIGN_IN_TIMEOUT
    dpop = raw.get("dpop", False)
    if not isinstance(dpop, bool):
        problems.append("oauth.dpop must be true or false")
        dpop = False
    settings = OAuthSettings(
        grant=grant, client_id=text("client_id"), client_secret=text("client_secret"), scopes=scopes,
        token_endpoint_auth_method=method, private_key=text("private_key"),
        private_key_file=text("private_key_file"), signing_algorithm=text("signing_algorithm") or "RS256",
        issuer=text("issuer"), client_metadata_url=text("client_metadata_url"), redirect_port=port or None,
        sign_in_timeout=float(wait), idp_token_endpoint=text("idp_token_endpoint"),
        idp_client_id=text("idp_client_id"), idp_id_token=text("idp_id_token"), assertion=text("assertion"),
        assertion_file=text("assertion_file"), dpop=dpop,
    )
    problems.extend(_consistency(settings))
    return (None if problems else settings), problems


def _consistency(s: OAuthSettings) -> list[str]:
    """What the combination of keys cannot do, each with the fix."""
    problems: list[str] = []
    has_key = bool(s.private_key or s.private_key_file)
    if s.private_key and s.private_key_file:
        problems.append("oauth: give private_key or private_key_file, not both")
    if s.client_secret and not s.client_id:
        problems.append("oauth.client_secret needs oauth.client_id (the client it belongs to)")
    if s.client_metadata_url and not s.client_metadata_url.startswith("https://"):
        problems.append("oauth.client_metadata_url must be an https URL of your client ID metadata document")
    method = s.auth_method
    if method in ("client_secret_basic", "client_secret_post") and not s.client_secret:
        problems.append(f"oauth.token_endpoint_auth_method {method} needs oauth.client_secret")
    if method == "private_key_jwt" and (not has_key or s.grant != "client_credentials"):
        problems.append("oauth.token_endpoint_auth_method private_key_jwt needs grant client_credentials and "
                        "private_key or private_key_file")
    if s.grant == "client_credentials" and (not s.client_id or not (s.client_secret or has_key)):
        problems.append("oauth.grant client_credentials needs client_id and client_secret (or private_key_file "
                        "for private_key_jwt)")
    if s.grant == "identity_assertion":
        needed = [k for k in ("client_id", "client_secret", "idp_token_endpoint", "idp_client_id", "idp_id_token")
                  if not getattr(s, k)]
        if needed:
            problems.append(f"oauth.grant identity_assertion needs {', '.join('oauth.' + k for k in needed)}")
        if method not in ("client_secret_basic", "client_secret_post"):
            problems.append("oauth.grant identity_assertion authenticates with client_secret_basic or "
                            "client_secret_post")
    if s.grant == "jwt_bearer":
        if not s.client_id or not (s.assertion or s.assertion_file):
            problems.append("oauth.grant jwt_bearer needs client_id and assertion (or assertion_file)")
        if s.assertion and s.assertion_file:
            problems.append("oauth: give assertion or assertion_file, not both")
        if method == "private_key_jwt":
            problems.append("oauth.grant jwt_bearer authenticates with none, client_secret_basic or "
                            "client_secret_post")
    elif s.assertion or s.assertion_file:
        problems.append("oauth.assertion and oauth.assertion_file are for grant jwt_bearer")
    return problems

