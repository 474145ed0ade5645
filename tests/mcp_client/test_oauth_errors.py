"""OAuth failures become one-line OAuthErrors, and OAuth values never reach a message or a log record."""

from __future__ import annotations

import logging

import httpx2
import pytest
from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError

from synapse_nb.mcp_client.oauth.failure import auth_error
from synapse_nb.mcp_client.oauth.masking import MASKED_LOGGERS, install_log_masking, oauth_mask
from synapse_nb.mcp_client.oauth.provider import OAuthSession
from synapse_nb.mcp_client.oauth.storage import TokenStore
from synapse_nb.oauth_settings import OAuthSettings

SECRET = "planted-client-secret-c0ffee"
TOKEN = "planted-access-token-feed42"


@pytest.mark.parametrize(("exc", "kind", "says"), [
    (OAuthTokenError(f'Token exchange failed (401): {{"error":"invalid_client","secret":"{SECRET}"}}'),
     "invalid_client", "check oauth.client_id and oauth.client_secret"),
    (OAuthTokenError('Token exchange failed (400): {"error":"invalid_grant"}'), "refused", "sign in again"),
    (OAuthRegistrationError(f"Registration failed: 404 {SECRET}"), "failed", "pre-registered oauth.client_id"),
    (OAuthFlowError("Protected resource https://evil.example/mcp does not match expected https://x/mcp"), "refused",
     "names another resource"),
    (OAuthFlowError(f"State parameter mismatch: {TOKEN} != x"), "failed", "%mcp auth remote"),
    (httpx2.ConnectError("connection refused"), "unreachable", "cannot reach the authorization server"),
    (RuntimeError(f"weird {TOKEN}"), "failed", "RuntimeError"),
])
def test_each_failure_is_one_line_saying_what_to_do_without_secrets(exc: Exception, kind: str, says: str) -> None:
    OAuthSession("remote", "https://x.example/mcp", OAuthSettings(client_id="c", client_secret=SECRET),
                 TokenStore(backend="file"))  # the session tells the mask about the configured secret
    oauth_mask().add_secret(TOKEN)
    error = auth_error("remote", exc)
    assert error.kind == kind
    assert says in str(error)
    assert "\n" not in str(error)
    assert SECRET not in str(error)
    assert TOKEN not in str(error)
    assert error.server == "remote"


def test_log_records_of_the_sdk_are_masked_with_their_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    install_log_masking()
    oauth_mask().add_secret(TOKEN)
    caplog.set_level(logging.DEBUG)
    sdk = logging.getLogger("mcp.client.auth.oauth2")
    try:
        raise OAuthTokenError(f"Token exchange failed: {TOKEN}")
    except OAuthTokenError:
        sdk.exception("OAuth flow error with %s", TOKEN)
    logging.getLogger("httpcore2.http11").debug(
        "receive_response_headers.complete return_value=[(b'location', b'http://127.0.0.1:9/callback?code=%s&state=s')]",
        "never-seen-code-123456")
    assert "mcp.client.auth.oauth2" in MASKED_LOGGERS
    assert TOKEN not in caplog.text
    assert "never-seen-code-123456" not in caplog.text
    assert "[REDACTED]" in caplog.text
    assert "OAuthTokenError" in caplog.text  # the traceback is still there, masked
