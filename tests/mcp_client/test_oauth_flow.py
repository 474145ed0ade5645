"""McpHub against a real OAuth-protected MCP server on 127.0.0.1 (tests/support/oauth_server.py, in this process).

Signing in goes through the real loopback listener: the test's `sign_in` does what a browser does
(oauth_server.follow: GET the link, follow the redirects). Every token, code and secret the server hands
out is then looked for in every log record, server event, exception message and server listing: none
may appear.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import logging
import os
import re
import stat
import threading
from collections.abc import Awaitable, Iterator
from pathlib import Path

import pytest

from synapse_nb.errors import OAuthError
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.mcp_client.oauth.storage import TokenStore
from tests.mcp_client.mcp_helpers import Events, WebServer
from tests.support.local_servers import free_port
from tests.support.oauth_server import OAuthServer, follow, nowhere, serve

pytestmark = pytest.mark.anyio


class Browser:
    """The user: follows the sign-in link like a browser; counts how often it was asked."""

    def __init__(self) -> None:
        self.asked = 0

    async def __call__(self, server: str, authorization_url: str, loopback: Awaitable[str]) -> str:
        self.asked += 1
        await asyncio.to_thread(follow, authorization_url)
        return await loopback


async def never_signs_in(server: str, authorization_url: str, loopback: Awaitable[str]) -> str:
    return await loopback  # the browser never comes back


def refuse(server: str, authorization_url: str, loopback: Awaitable[str]) -> Awaitable[str]:
    raise AssertionError(f"{server} asked for a sign-in; stored tokens should have sufficed")


@pytest.fixture
def oauth_server() -> Iterator[OAuthServer]:
    with serve() as server:
        yield server


@pytest.fixture
def store(tmp_path: Path) -> TokenStore:
    return TokenStore(tmp_path / "data", backend="file")


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    return caplog


def leaked(secrets: list[str], texts: list[str]) -> list[str]:
    """The secrets found, each with the start of the first text that holds it."""
    return [f"{s[:6]}... in {next(t for t in texts if s in t)[:300]!r}" for s in secrets if any(s in t for t in texts)]


def everything_said(hub: McpHub, events: Events, logs: pytest.LogCaptureFixture, *errors: BaseException) -> list[str]:
    texts = [r.getMessage() for r in logs.records] + [logs.text]
    texts += [repr(e) for e in events.items] + [repr(s) for s in hub.servers] + [str(e) for e in errors]
    return texts


async def test_sign_in_then_reconnect_from_stored_tokens_then_refresh_then_logout(
    oauth_server: OAuthServer, store: TokenStore, events: Events, logs: pytest.LogCaptureFixture,
) -> None:
    browser = Browser()
    async with McpHub(token_store=store, sign_in=browser, on_event=events) as hub:
        info = await hub.connect("remote", url=oauth_server.url)
        assert (info.state, info.tool_count, browser.asked) == ("connected", 2, 1)
        assert (await hub.call("remote__echo", {"text": "hi"})).text == "hi"
        assert hub.has_tokens("remote")
        said = everything_said(hub, events, logs)

    mode = stat.S_IMODE(os.stat(store.path).st_mode)
    assert mode == 0o600, oct(mode)
    assert stat.S_IMODE(os.stat(store.directory).st_mode) == 0o700

    # a new hub (a restarted kernel): the stored token, no sign-in
    async with McpHub(token_store=store, sign_in=refuse, on_event=events) as hub:
        await hub.connect("remote", url=oauth_server.url)
        assert (await hub.call("remote__echo", {"text": "hi"})).text == "hi"
        said += everything_said(hub, events, logs)

    # the access token expired meanwhile (on the server and by its stored expiry): refreshed, no sign-in
    oauth_server.provider.expire_access_tokens()
    record = store.read(oauth_server.url)
    store.update(oauth_server.url, expires_at=record["expires_at"] - 7200)
    async with McpHub(token_store=store, sign_in=refuse, on_event=events) as hub:
        await hub.connect("remote", url=oauth_server.url)
        assert oauth_server.provider.counts["refreshes"] == 1
        assert (await hub.call("remote__echo", {"text": "hi"})).text == "hi"
        said += everything_said(hub, events, logs)

        assert await hub.logout("remote") is True
        assert not store.has_tokens(oauth_server.url)
        assert [s.name for s in hub.servers] == []  # disconnected

    browser.asked = 0
    async with McpHub(token_store=store, sign_in=browser) as hub:  # logged out: signing in again
        await hub.connect("remote", url=oauth_server.url)
        assert browser.asked == 1
        await hub.authenticate("remote")  # `%mcp auth`: a fresh sign-in, connected again
        assert (browser.asked, hub.server("remote").state) == (2, "connected")

    issued = oauth_server.provider.issued
    assert len(issued) >= 6
    assert leaked(issued, said) == []
    # the PKCE verifier is made inside the SDK and never known to the test: no unmasked one anywhere
    assert not [t for t in said if re.search(r"code_verifier=(?!\[REDACTED\])\w", t)]


async def test_denied_consent_is_one_line_and_leaves_nothing_connected(
    store: TokenStore, events: Events, logs: pytest.LogCaptureFixture,
) -> None:
    with serve(deny=True) as server:
        async with McpHub(token_store=store, sign_in=Browser(), on_event=events) as hub:
            with pytest.raises(OAuthError) as caught:
                await hub.connect("remote", url=server.url)
            assert caught.value.kind == "denied"
            message = str(caught.value)
            assert "declined" in message
            assert "%mcp auth remote" in message
            assert "\n" not in message
            assert (hub.server("remote").state, hub.tools) == ("failed", [])
            assert not store.has_tokens(server.url)
            said = everything_said(hub, events, logs, caught.value)
        assert leaked(server.provider.issued, said) == []


async def test_sign_in_times_out(oauth_server: OAuthServer, store: TokenStore) -> None:
    async with McpHub(token_store=store, sign_in=never_signs_in) as hub:
        with pytest.raises(OAuthError) as caught:
            await hub.connect("remote", url=oauth_server.url, oauth={"sign_in_timeout": 0.5})
        assert caught.value.kind == "timeout"
        assert "within 0.5 s" in str(caught.value)
        assert "%mcp auth remote" in str(caught.value)
        assert hub.server("remote").state == "failed"


async def test_cancelling_a_connect_that_waits_for_sign_in_stops_it(
    oauth_server: OAuthServer, store: TokenStore,
) -> None:
    asked = asyncio.Event()

    async def ask(server: str, url: str, loopback: Awaitable[str]) -> str:
        asked.set()
        return await loopback

    async with McpHub(token_store=store, sign_in=ask) as hub:
        connect = asyncio.ensure_future(hub.connect("remote", url=oauth_server.url, connect_timeout=60))
        await asyncio.wait_for(asked.wait(), 10)
        connect.cancel()
        with pytest.raises(asyncio.CancelledError):
            await connect
        assert hub.server("remote").state == "stopped"


async def test_wrong_client_secret_is_invalid_client(
    oauth_server: OAuthServer, store: TokenStore, events: Events, logs: pytest.LogCaptureFixture,
) -> None:
    port = free_port()
    oauth_server.provider.plant_client("pre-client", "the-right-secret-4411")
    wrong = "planted-wrong-secret-9d1e"
    async with McpHub(token_store=store, sign_in=Browser(), on_event=events) as hub:
        with pytest.raises(OAuthError) as caught:
            await hub.connect("remote", url=oauth_server.url,
                              oauth={"client_id": "pre-client", "client_secret": wrong, "redirect_port": port})
        assert caught.value.kind == "invalid_client"
        assert "oauth.client_secret" in str(caught.value)
        assert hub.server("remote").state == "failed"
        said = everything_said(hub, events, logs, caught.value)
    assert leaked([wrong, *oauth_server.provider.issued], said) == []


async def test_unreachable_authorization_server(store: TokenStore) -> None:
    dead = nowhere()
    with serve(issuer=dead) as server:
        async with McpHub(token_store=store, sign_in=Browser()) as hub:
            with pytest.raises(OAuthError) as caught:
                await hub.connect("remote", url=server.url)
            assert caught.value.kind == "unreachable"
            assert dead in str(caught.value)
            assert hub.server("remote").state == "failed"


async def test_a_config_file_signs_in_one_server_at_a_time_and_others_connect_meanwhile(
    store: TokenStore, tmp_path: Path, demo_http: WebServer,
) -> None:
    at_once, most = 0, 0
    plain_connected = asyncio.Event()
    browser = Browser()

    async def one_after_the_other(server: str, url: str, loopback: Awaitable[str]) -> str:
        nonlocal at_once, most
        at_once += 1
        most = max(most, at_once)
        try:
            await asyncio.wait_for(plain_connected.wait(), 30)  # the server without OAuth is not held up
            return await browser(server, url, loopback)
        finally:
            at_once -= 1

    def on_event(event: object) -> None:
        if getattr(event, "server", None) == "plain" and getattr(event, "event", None) == "connected":
            plain_connected.set()

    with serve() as first, serve() as second:
        config = tmp_path / "servers.json"
        config.write_text(json.dumps({"mcpServers": {
            "first": {"url": first.url}, "second": {"url": second.url}, "plain": {"url": demo_http.url},
        }}), encoding="utf-8")
        async with McpHub(token_store=store, sign_in=one_after_the_other, on_event=on_event) as hub:
            results = await hub.connect_config(config)
            assert {name: getattr(r, "state", r) for name, r in results.items()} == {
                "first": "connected", "second": "connected", "plain": "connected"}
    assert (most, browser.asked) == (1, 2)


@pytest.mark.parametrize("oauth", [None, {"dpop": True}])
async def test_a_401_without_oauth_metadata_says_to_check_the_url_and_header(store: TokenStore,
                                                                             oauth: dict[str, bool] | None) -> None:
    class Unauthorized(http.server.BaseHTTPRequestHandler):
        def _refuse(self) -> None:
            self.send_response(401 if self.path == "/mcp" else 404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = _refuse

        def log_message(self, format: str, *args: object) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Unauthorized) as plain:
        thread = threading.Thread(target=plain.serve_forever, daemon=True)
        thread.start()
        try:
            async with McpHub(token_store=store, sign_in=refuse) as hub:
                with pytest.raises(OAuthError) as caught:
                    await hub.connect("plain", url=f"http://127.0.0.1:{plain.server_address[1]}/mcp",
                                      headers={"Authorization": "Bearer wrong-token-0f0f0f"}, oauth=oauth)
                assert "publishes no OAuth metadata" in str(caught.value)
                assert "wrong-token-0f0f0f" not in str(caught.value)
        finally:
            plain.shutdown()


async def test_a_missing_private_key_file_is_one_line(oauth_server: OAuthServer, store: TokenStore,
                                                       tmp_path: Path) -> None:
    async with McpHub(token_store=store, sign_in=refuse) as hub:
        with pytest.raises(OAuthError) as caught:
            await hub.connect("svc", url=oauth_server.url, oauth={
                "grant": "client_credentials", "client_id": "svc", "private_key_file": str(tmp_path / "none.pem")})
        assert "cannot read oauth.private_key_file" in str(caught.value)
        assert hub.server("svc").state == "failed"


async def test_configured_scopes_are_asked_for_when_the_server_names_none(store: TokenStore) -> None:
    with serve(scope=None) as server:
        async with McpHub(token_store=store, sign_in=Browser()) as hub:
            await hub.connect("remote", url=server.url, oauth={"scopes": ["notes:read", "notes:write"]})
            assert (await hub.call("remote__echo", {"text": "hi"})).text == "hi"
        assert server.provider.scopes_asked == [["notes:read", "notes:write"]]


async def test_the_scope_the_server_names_is_asked_for(oauth_server: OAuthServer, store: TokenStore) -> None:
    async with McpHub(token_store=store, sign_in=Browser()) as hub:
        await hub.connect("remote", url=oauth_server.url)
    assert oauth_server.provider.scopes_asked == [["notes"]]
