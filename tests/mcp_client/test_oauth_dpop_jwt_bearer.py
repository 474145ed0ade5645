"""DPoP-bound tokens (oauth.dpop) and the jwt-bearer grant (grant jwt_bearer) against tests/support/oauth_server.py.

The server's DPoP test mode checks every proof (signature, htm/htu, iat, jti, ath, the key a token is bound
to, its nonce) and refuses bearer use of a bound token; its jwt-bearer mode verifies the workload JWT's
signature and audience. Nothing here is mocked: the hub connects over HTTP and calls a tool.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
from collections.abc import Awaitable
from pathlib import Path

import jwt
import pytest

from synapse_nb.errors import ConfigError, OAuthError
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.mcp_client.oauth.dpop import DPoPKey
from synapse_nb.mcp_client.oauth.storage import TokenStore
from synapse_nb.oauth_settings import OAuthSettings
from tests.support.oauth_server import check_dpop_proof, dpop_thumbprint, follow, serve, workload_jwt

pytestmark = pytest.mark.anyio


async def browser(server: str, authorization_url: str, loopback: Awaitable[str]) -> str:
    await asyncio.to_thread(follow, authorization_url)
    return await loopback


@pytest.fixture
def store(tmp_path: Path) -> TokenStore:
    return TokenStore(tmp_path / "data", backend="file")


def test_a_proof_is_signed_by_its_key_and_names_the_request() -> None:
    key = DPoPKey()
    proof = key.proof("post", "https://as.test/token?x=1#f", nonce="n1", access_token="tok")
    header = jwt.get_unverified_header(proof)
    assert header["typ"] == "dpop+jwt"
    assert "d" not in header["jwk"]
    claims = jwt.decode(proof, jwt.PyJWK(header["jwk"]).key, algorithms=["ES256"])
    assert (claims["htm"], claims["htu"], claims["nonce"]) == ("POST", "https://as.test/token", "n1")
    assert claims["ath"] == base64.urlsafe_b64encode(hashlib.sha256(b"tok").digest()).rstrip(b"=").decode()
    assert key.thumbprint == dpop_thumbprint(header["jwk"])
    assert jwt.decode(key.proof("GET", "https://rs.test/"), options={"verify_signature": False})["jti"] != claims["jti"]


@pytest.mark.parametrize("nonce", [None, "server-nonce-1"])
async def test_dpop_bound_tokens_at_the_token_endpoint_and_on_every_request(
    store: TokenStore, nonce: str | None, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    with serve(dpop=True, dpop_nonce=nonce) as server:
        async with McpHub(token_store=store, sign_in=browser) as hub:
            await hub.connect("remote", url=server.url, oauth={"dpop": True})
            assert (await hub.call("remote__echo", {"text": "bound"})).text == "bound"
            assert (await hub.call("remote__add", {"a": 2, "b": 3})).text == "5"
        state = server.provider
        assert len(state.dpop_bound) == 1  # the one token, bound to the session's key
        assert state.counts["dpop_proofs"] >= 4  # the token request, then one fresh proof per MCP request
        # with a nonce: one challenge, at the token endpoint; the MCP endpoint is the same server (origin), so
        # its requests carry the nonce learnt there (the suite's auth/dpop-nonce has two origins, two challenges)
        assert state.counts["nonce_challenges"] == (1 if nonce else 0)
        assert [s[:6] for s in state.issued if s in caplog.text] == []  # tokens and codes never reach a log


async def test_without_dpop_a_server_that_requires_it_is_refused_in_one_line(store: TokenStore) -> None:
    with serve(dpop=True) as server:
        async with McpHub(token_store=store, sign_in=browser) as hub:
            with pytest.raises(OAuthError) as caught:
                await hub.connect("remote", url=server.url)
        assert "\n" not in str(caught.value)
        assert "remote" in str(caught.value)
        assert not server.provider.dpop_bound


def test_the_server_refuses_a_proof_for_another_request() -> None:
    with serve(dpop=True) as server:
        key = DPoPKey()
        url = f"{server.origin}/token"
        assert check_dpop_proof(server.provider, key.proof("POST", url), "POST", url)[1] == ""
        assert "htu" in check_dpop_proof(server.provider, key.proof("POST", url + "x"), "POST", url)[1]
        assert "ath" in check_dpop_proof(server.provider, key.proof("POST", url), "POST", url, token="t")[1]


async def test_jwt_bearer_exchanges_the_workload_jwt_read_from_its_file(store: TokenStore, tmp_path: Path) -> None:
    with serve(jwt_bearer=True, client_id="ci", client_secret="ci-secret") as server:
        token_file = tmp_path / "token"
        token_file.write_text(workload_jwt(server.origin) + "\n", encoding="utf-8")
        oauth = {"grant": "jwt_bearer", "client_id": "ci", "client_secret": "ci-secret",
                 "assertion_file": str(token_file)}
        async with McpHub(token_store=store, sign_in=browser) as hub:
            await hub.connect("ci", url=server.url, oauth=oauth)
            assert (await hub.call("ci__echo", {"text": "workload"})).text == "workload"
        assert (server.provider.counts["assertions"], server.provider.counts["authorizations"]) == (1, 0)


async def test_a_refused_workload_jwt_is_one_line_and_not_retried(store: TokenStore,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with serve(jwt_bearer=True, client_id="ci", client_secret="ci-secret") as server:
        wrong = workload_jwt("https://another-issuer.test")
        oauth = {"grant": "jwt_bearer", "client_id": "ci", "client_secret": "ci-secret", "assertion": wrong}
        async with McpHub(token_store=store, sign_in=browser) as hub:
            with pytest.raises(OAuthError) as caught:
                await hub.connect("ci", url=server.url, oauth=oauth)
        message = str(caught.value)
        assert "\n" not in message
        assert "invalid_grant" in message
        assert wrong not in message
        assert wrong not in caplog.text
        assert server.provider.counts["assertions"] == 1


def test_the_new_oauth_options_parse_and_say_what_is_wrong() -> None:
    s = OAuthSettings.from_mapping({"grant": "jwt_bearer", "client_id": "ci", "assertion": "${env:JWT}",
                                    "dpop": True}, environ={"JWT": "eyJ.secret.jwt"})
    assert s.assertion is not None
    assert (s.grant, s.assertion.get_secret_value(), s.dpop, s.auth_method) == ("jwt_bearer", "eyJ.secret.jwt", True,
                                                                              "none")
    assert "eyJ.secret.jwt" not in repr(s)
    assert "eyJ.secret.jwt" in s.secrets
    for raw, says in [({"grant": "jwt_bearer", "client_id": "ci"}, "needs client_id and assertion"),
                      ({"grant": "jwt_bearer", "client_id": "ci", "assertion": "a", "assertion_file": "f"},
                       "not both"),
                      ({"assertion": "a"}, "are for grant jwt_bearer"),
                      ({"dpop": "yes"}, "oauth.dpop must be true or false")]:
        with pytest.raises(ConfigError, match=says):
            OAuthSettings.from_mapping(json.loads(json.dumps(raw)))
