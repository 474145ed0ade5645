"""OAuthSettings: the `oauth` key of an MCP server entry (DESIGN.md section 10), nested in ServerConfig (pydantic).

    "linear": {"url": "https://mcp.linear.app/mcp",
               "oauth": {"client_id": "abc", "client_secret": "${env:LINEAR_SECRET}", "scopes": ["read"]}}

No `oauth` key at all is fine: a server that answers 401 with OAuth metadata is signed in to with
dynamic client registration (or a client ID metadata document) and the authorization-code grant.
The key is for what cannot be discovered: a pre-registered client, the client-credentials grant of a
service account or CI job (client secret or private-key JWT), the identity-assertion grant of
enterprise-managed (cross-app) access, the jwt-bearer grant of workload identity federation, DPoP-bound
tokens, scopes to ask for, the loopback port and the sign-in wait.

Pydantic checks each key (the fields are the table: a `Literal` lists the choices, a description says what a
value must be) and `_consistency` the combinations; `problems()` turns its errors into one-line problems,
each naming its key and the fix. The secret values (`client_secret`, `private_key`, `idp_id_token`,
`assertion`) are `SecretStr`: no repr, str, dump or error message shows them; `revealed()` hands one to
the SDK that sends it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SecretStr, ValidationError, model_validator
from pydantic_core import ErrorDetails, PydanticCustomError

from .envvars import expand_vars
from .errors import ConfigError

__all__ = [
    "DEFAULT_SIGN_IN_TIMEOUT",
    "GRANTS",
    "OAUTH_KEYS",
    "TOKEN_AUTH_METHODS",
    "Grant",
    "OAuthSettings",
    "TokenAuthMethod",
    "expand_oauth",
    "problems",
    "revealed",
]

Grant = Literal["authorization_code", "client_credentials", "identity_assertion", "jwt_bearer"]
TokenAuthMethod = Literal["client_secret_basic", "client_secret_post", "none", "private_key_jwt"]

GRANTS: tuple[Grant, ...] = get_args(Grant)
TOKEN_AUTH_METHODS: tuple[TokenAuthMethod, ...] = get_args(TokenAuthMethod)
_CHOICES: dict[str, tuple[str, ...]] = {"grant": GRANTS, "token_endpoint_auth_method": TOKEN_AUTH_METHODS}
DEFAULT_SIGN_IN_TIMEOUT = 300.0
"""Seconds a connect waits for the user to sign in before it gives up."""
_EXAMPLE = '{"client_id": "...", "scopes": ["read"]}'


def _text(value: object) -> object:
    """A non-empty string, stripped (a SecretStr given as such is taken as it is)."""
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if not isinstance(value, str) or not value.strip():
        raise PydanticCustomError("text", "not a non-empty string")
    return value.strip()


def _scopes(value: object) -> object:
    """A list of strings (blank ones left out); a single string is a mistake, not one scope."""
    if isinstance(value, str) or not isinstance(value, list | tuple) or not all(isinstance(s, str) for s in value):
        raise PydanticCustomError("scopes", "not a list of strings")
    return tuple(s for s in value if s.strip())


_Text = Annotated[str, BeforeValidator(_text)]
_Secret = Annotated[SecretStr, BeforeValidator(_text)]
_TEXT = "a non-empty string"


class OAuthSettings(BaseModel):
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

    model_config = ConfigDict(frozen=True, extra="forbid")

    grant: Grant = "authorization_code"
    client_id: _Text | None = Field(default=None, description=_TEXT)
    client_secret: _Secret | None = Field(default=None, description=_TEXT)
    scopes: Annotated[tuple[str, ...], BeforeValidator(_scopes)] | None = Field(
        default=None, description='a list of strings, e.g. ["read", "write"]')
    token_endpoint_auth_method: TokenAuthMethod | None = None
    private_key: _Secret | None = Field(default=None, description=_TEXT)
    private_key_file: _Text | None = Field(default=None, description=_TEXT)
    signing_algorithm: _Text = Field(default="RS256", description=_TEXT)
    issuer: _Text | None = Field(default=None, description=_TEXT)
    client_metadata_url: _Text | None = Field(default=None, description=_TEXT)
    redirect_port: Annotated[int, Field(ge=0, le=65535, strict=True)] | None = Field(
        default=None, description="a port number (0 or leave it out for a free one)")
    sign_in_timeout: Annotated[float, Field(gt=0, strict=True)] = Field(
        default=DEFAULT_SIGN_IN_TIMEOUT, description="a positive number of seconds")
    idp_token_endpoint: _Text | None = Field(default=None, description=_TEXT)
    idp_client_id: _Text | None = Field(default=None, description=_TEXT)
    idp_id_token: _Secret | None = Field(default=None, description=_TEXT)
    assertion: _Secret | None = Field(default=None, description=_TEXT)
    assertion_file: _Text | None = Field(default=None, description=_TEXT)
    dpop: Annotated[bool, Field(strict=True)] = Field(default=False, description="true or false")

    @model_validator(mode="after")
    def _consistent(self) -> OAuthSettings:
        found = _consistency(self)
        if self.redirect_port == 0:  # 0 says "a free one", as leaving it out does
            object.__setattr__(self, "redirect_port", None)
        if found:
            raise PydanticCustomError("oauth_consistency", "{problems}", {"problems": "; ".join(found)})
        return self

    @property
    def secrets(self) -> tuple[str, ...]:
        """The secret values set here, for masking."""
        return tuple(s.get_secret_value() for s in (self.client_secret, self.private_key, self.idp_id_token,
                                                    self.assertion) if s is not None)

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
        missing: list[str] = []
        found: list[str] = []
        settings: OAuthSettings | None = None
        try:
            settings = cls.model_validate(expand_oauth(raw, os.environ if environ is None else environ, missing))
        except ValidationError as exc:
            found = problems(exc.errors())
        if missing:
            found.append("environment variable(s) not set: " + ", ".join(dict.fromkeys(missing)))
        if found or settings is None:
            raise ConfigError("; ".join(found or [f"oauth must be an object, e.g. {_EXAMPLE}"]))
        return settings


OAUTH_KEYS = frozenset(OAuthSettings.model_fields)
"""The keys an `oauth` object may have."""


def revealed(secret: SecretStr | None) -> str | None:
    """The value of a secret setting, for the one place that sends it (the SDK's OAuth providers)."""
    return secret.get_secret_value() if secret is not None else None


def expand_oauth(raw: object, environ: Mapping[str, str], missing: list[str]) -> object:
    """`raw` (an `oauth` object) with `${env:VAR}` expanded in its string values; a value that expands to
    nothing is left out (the unset variable is reported once, in `missing`). Anything else is returned as is."""
    if not isinstance(raw, Mapping):
        return raw
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, str) and value.strip():
            value = expand_vars(value, environ, missing, f"oauth.{key}")
            if not value.strip():
                continue
        out[key] = value
    return out


def problems(errors: Sequence[ErrorDetails]) -> list[str]:
    """One line per bad key of pydantic's errors about an `oauth` object (their `loc` relative to it), each
    naming the key and the fix. Never shows a value (it may be a secret under the wrong key)."""
    lines: dict[str, None] = {}
    for error in errors:
        loc, kind = error["loc"], error["type"]
        if kind in ("model_type", "model_attributes_type", "dict_type"):
            lines[f"oauth must be an object, e.g. {_EXAMPLE}"] = None
        elif not loc:  # the combination of keys (_consistency), already worded
            lines[error["msg"]] = None
        elif kind == "extra_forbidden":
            lines[f"oauth.{loc[0]} is not a known key (known: {', '.join(sorted(OAUTH_KEYS))})"] = None
        elif str(loc[0]) in _CHOICES:  # the value not echoed: a secret pasted under the wrong key stays hidden
            lines[f"oauth.{loc[0]} must be one of {', '.join(_CHOICES[str(loc[0])])}"] = None
        else:
            description = OAuthSettings.model_fields[str(loc[0])].description or "valid"
            lines[f"oauth.{loc[0]} must be {description}"] = None
    return list(lines)


def _consistency(s: OAuthSettings) -> list[str]:
    """What the combination of keys cannot do, each with the fix."""
    found: list[str] = []
    has_key = bool(s.private_key or s.private_key_file)
    if s.private_key and s.private_key_file:
        found.append("oauth: give private_key or private_key_file, not both")
    if s.client_secret and not s.client_id:
        found.append("oauth.client_secret needs oauth.client_id (the client it belongs to)")
    if s.client_metadata_url and not s.client_metadata_url.startswith("https://"):
        found.append("oauth.client_metadata_url must be an https URL of your client ID metadata document")
    method = s.auth_method
    if method in ("client_secret_basic", "client_secret_post") and not s.client_secret:
        found.append(f"oauth.token_endpoint_auth_method {method} needs oauth.client_secret")
    if method == "private_key_jwt" and (not has_key or s.grant != "client_credentials"):
        found.append("oauth.token_endpoint_auth_method private_key_jwt needs grant client_credentials and "
                     "private_key or private_key_file")
    if s.grant == "client_credentials" and (not s.client_id or not (s.client_secret or has_key)):
        found.append("oauth.grant client_credentials needs client_id and client_secret (or private_key_file "
                     "for private_key_jwt)")
    if s.grant == "identity_assertion":
        needed = [k for k in ("client_id", "client_secret", "idp_token_endpoint", "idp_client_id", "idp_id_token")
                  if not getattr(s, k)]
        if needed:
            found.append(f"oauth.grant identity_assertion needs {', '.join('oauth.' + k for k in needed)}")
        if method not in ("client_secret_basic", "client_secret_post"):
            found.append("oauth.grant identity_assertion authenticates with client_secret_basic or "
                         "client_secret_post")
    if s.grant == "jwt_bearer":
        if not s.client_id or not (s.assertion or s.assertion_file):
            found.append("oauth.grant jwt_bearer needs client_id and assertion (or assertion_file)")
        if s.assertion and s.assertion_file:
            found.append("oauth: give assertion or assertion_file, not both")
        if method == "private_key_jwt":
            found.append("oauth.grant jwt_bearer authenticates with none, client_secret_basic or "
                         "client_secret_post")
    elif s.assertion or s.assertion_file:
        found.append("oauth.assertion and oauth.assertion_file are for grant jwt_bearer")
    return found
