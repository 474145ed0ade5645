"""The `oauth` key of a server entry: parsed into OAuthSettings, each bad value one line naming key and fix."""

from __future__ import annotations

import json

import pytest

from synapse_nb.config import parse_mcp_config
from synapse_nb.errors import ConfigError
from synapse_nb.oauth_settings import OAuthSettings


def entry(oauth: object, **extra: object) -> str:
    return json.dumps({"mcpServers": {"remote": {"url": "https://mcp.example.com/mcp", "oauth": oauth, **extra}}})


def test_a_pre_registered_client_with_its_secret_from_the_environment() -> None:
    secret = "planted-client-secret-77aa"
    config = parse_mcp_config(
        entry({"client_id": "abc", "client_secret": "${env:REMOTE_SECRET}", "scopes": ["read", "write"]}),
        environ={"REMOTE_SECRET": secret},
    )["remote"]
    assert config.problem is None
    oauth = config.oauth
    assert oauth is not None
    assert oauth.client_secret is not None
    assert (oauth.client_id, oauth.client_secret.get_secret_value(), oauth.scope) == ("abc", secret, "read write")
    assert (oauth.grant, oauth.auth_method) == ("authorization_code", "client_secret_basic")
    assert secret not in repr(config)
    assert secret not in repr(oauth)
    assert "client_secret=SecretStr('**********')" in repr(oauth)


def test_no_oauth_key_means_discovery_and_registration() -> None:
    config = parse_mcp_config(json.dumps({"mcpServers": {"r": {"url": "https://x.example/mcp"}}}))["r"]
    assert config.oauth is None
    assert OAuthSettings().auth_method == "none"


def test_client_credentials_with_a_private_key_file() -> None:
    settings = OAuthSettings.from_mapping(
        {"grant": "client_credentials", "client_id": "svc", "private_key_file": "~/keys/svc.pem",
         "signing_algorithm": "ES256"}, environ={})
    assert (settings.auth_method, settings.signing_algorithm) == ("private_key_jwt", "ES256")


@pytest.mark.parametrize(("oauth", "says"), [
    ({"grant": "implicit"}, "oauth.grant must be one of authorization_code, client_credentials, identity_assertion"),
    ({"scopes": "read write"}, "oauth.scopes must be a list of strings"),
    ({"grant": "client_credentials", "client_id": "svc"}, "needs client_id and client_secret"),
    ({"client_secret": "s3cr3t-value"}, "oauth.client_secret needs oauth.client_id"),
    ({"clientSecret": "x"}, "oauth.clientSecret is not a known key"),
    ({"token_endpoint_auth_method": "client_secret_post"}, "client_secret_post needs oauth.client_secret"),
    ({"token_endpoint_auth_method": "tls_client_auth"}, "oauth.token_endpoint_auth_method must be one of"),
    ({"redirect_port": 70000}, "oauth.redirect_port must be a port number"),
    ({"sign_in_timeout": 0}, "oauth.sign_in_timeout must be a positive number of seconds"),
    ({"client_metadata_url": "http://insecure.example/c.json"}, "must be an https URL"),
    ({"grant": "identity_assertion", "client_id": "c", "client_secret": "s3cr3t-value"},
     "needs oauth.idp_token_endpoint, oauth.idp_client_id, oauth.idp_id_token"),
    ("yes", "oauth must be an object"),
    ({"client_id": "abc", "client_secret": "${env:NOT_SET_ANYWHERE}"}, "NOT_SET_ANYWHERE (in oauth.client_secret)"),
])
def test_bad_values_are_one_line_problems_naming_the_key(oauth: object, says: str) -> None:
    config = parse_mcp_config(entry(oauth), source="servers.json", environ={})["remote"]
    assert config.problem is not None
    assert says in config.problem
    assert "\n" not in config.problem
    assert config.problem.startswith("servers.json:")
    with pytest.raises(ConfigError, match="oauth"):
        OAuthSettings.from_mapping(oauth if isinstance(oauth, dict) else {"x": oauth}, environ={})


def test_oauth_on_a_stdio_server_is_a_problem() -> None:
    text = json.dumps({"mcpServers": {"local": {"command": "echo", "oauth": {"client_id": "abc"}}}})
    problem = parse_mcp_config(text)["local"].problem
    assert problem is not None
    assert "oauth applies to http and sse servers only" in problem


def test_hub_connect_with_a_bad_oauth_mapping_is_a_one_line_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        OAuthSettings.from_mapping({"grant": "password"}, environ={})
    assert str(caught.value).startswith("oauth.grant must be one of")
    assert "\n" not in str(caught.value)
