"""The loopback listener on a real socket, and the final redirect URL turned into a code or a one-line error."""

from __future__ import annotations

import asyncio

import httpx2
import pytest

from synapse_nb.errors import OAuthError
from synapse_nb.mcp_client.oauth.redirect import LoopbackReceiver, authorization_result
from tests.support.local_servers import free_port

pytestmark = pytest.mark.anyio

CODE = "planted-code-5b0c1e7d"


async def test_the_browser_redirect_reaches_the_waiting_sign_in() -> None:
    receiver = LoopbackReceiver()
    try:
        assert receiver.redirect_uri == f"http://127.0.0.1:{receiver.port}/callback"
        waiting = asyncio.ensure_future(receiver.wait())
        async with httpx2.AsyncClient(timeout=10) as browser:
            elsewhere = await browser.get(f"http://127.0.0.1:{receiver.port}/favicon.ico")
            page = await browser.get(f"{receiver.redirect_uri}?code={CODE}&state=st-1")
        assert elsewhere.status_code == 404
        assert page.status_code == 200
        assert "close this tab" in page.text
        assert CODE not in page.text
        url = await asyncio.wait_for(waiting, 10)
        assert url == f"{receiver.redirect_uri}?code={CODE}&state=st-1"
        result = authorization_result("remote", url)
        assert (result.code, result.state, result.iss) == (CODE, "st-1", None)
    finally:
        await receiver.aclose()
    with pytest.raises(httpx2.ConnectError):  # closed: nothing listens any more
        async with httpx2.AsyncClient(timeout=5) as browser:
            await browser.get(receiver.redirect_uri)


async def test_the_configured_port_is_used_and_a_taken_one_is_an_os_error() -> None:
    port = free_port()
    receiver = LoopbackReceiver(port)
    try:
        assert receiver.port == port
        with pytest.raises(OSError):
            LoopbackReceiver(port)
    finally:
        await receiver.aclose()


async def test_cancelling_the_wait_leaves_the_receiver_usable() -> None:
    receiver = LoopbackReceiver()
    try:
        first = asyncio.ensure_future(receiver.wait())
        await asyncio.sleep(0)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        second = asyncio.ensure_future(receiver.wait())
        async with httpx2.AsyncClient(timeout=10) as browser:
            await browser.get(f"{receiver.redirect_uri}?code={CODE}")
        assert CODE in await asyncio.wait_for(second, 10)
    finally:
        await receiver.aclose()


@pytest.mark.parametrize(("url", "kind", "says"), [
    (f"http://127.0.0.1:1/callback?error=access_denied&state=s&code={CODE}", "denied", "was declined (access_denied)"),
    ("http://127.0.0.1:1/callback?error=invalid_scope&error_description=no+such+scope", "refused",
     "invalid_scope: no such scope"),
    ("http://127.0.0.1:1/callback?state=s", "no_code", "paste the whole address"),
    ("not a url at all", "no_code", "has no authorization code"),
])
def test_a_final_url_that_is_not_a_success_is_one_line(url: str, kind: str, says: str) -> None:
    with pytest.raises(OAuthError) as caught:
        authorization_result("remote", url)
    assert caught.value.kind == kind
    assert says in str(caught.value)
    assert "\n" not in str(caught.value)
    assert CODE not in str(caught.value)
    assert caught.value.server == "remote"
