"""Where the browser comes back after a sign-in: a loopback listener (RFC 8252) or a pasted redirect URL.

`LoopbackReceiver` binds 127.0.0.1 on a free (or the configured) port as soon as it is made, so the
redirect URI is known before the client registers; it answers the browser's GET of
`/callback?code=...` with a short page and hands the full URL over. A kernel the browser cannot reach
(JupyterHub, SSH) gets the same URL pasted by the user instead; `SignIn` is the caller's step between
the two: it is given the authorization URL and the loopback's pending result, and returns the final
redirect URL from whichever came first. `authorization_result` turns that URL into the SDK's result,
or into a one-line OAuthError (denied consent, an error from the server, no code in a pasted URL).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs, urlsplit

from mcp.shared.auth import AuthorizationCodeResult

from ...errors import OAuthError

__all__ = ["CALLBACK_PATH", "LoopbackReceiver", "SignIn", "authorization_result", "default_sign_in"]

logger = logging.getLogger("synapse_nb.mcp.oauth")

SignIn = Callable[[str, str, Awaitable[str]], Awaitable[str]]
"""`sign_in(server_name, authorization_url, loopback_redirect) -> final redirect URL`.

Show the user `authorization_url` (a link, a prompt); return the URL the browser ended on, either by
awaiting `loopback_redirect` (the loopback listener got it) or from a paste. It is awaited under the
sign-in timeout and cancelled with the connect."""

CALLBACK_PATH = "/callback"
_PAGE = (b"<!doctype html><meta charset=utf-8><title>Signed in</title>"
         b"<p>Sign-in finished. You can close this tab and go back to the notebook.</p>")
_MAX_REQUEST = 16 * 1024


async def default_sign_in(server: str, authorization_url: str, loopback_redirect: Awaitable[str]) -> str:
    """Without a notebook: say where to sign in (the log), and wait for the browser at the loopback."""
    logger.warning("MCP server %r asks you to sign in: open %s", server, authorization_url)
    return await loopback_redirect


class LoopbackReceiver:
    """A listener on 127.0.0.1 for the authorization redirect; bound when made, served while waited on."""

    def __init__(self, port: int | None = None) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port or 0))
            sock.listen(8)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self._sock: socket.socket | None = sock
        self.port: int = sock.getsockname()[1]
        self._server: asyncio.Server | None = None
        self._waiters: list[asyncio.Future[str]] = []

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    def __repr__(self) -> str:
        return f"LoopbackReceiver({self.redirect_uri!r})"

    async def wait(self) -> str:
        """The full redirect URL of the next browser visit to the callback path."""
        if self._sock is None:
            raise RuntimeError("the loopback receiver is closed")
        if self._server is None:
            self._server = await asyncio.start_server(self._handle, sock=self._sock)
        waiter: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        finally:
            self._waiters.remove(waiter)

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None
        elif self._sock is not None:
            self._sock.close()
        self._sock = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10.0)
            target = head[:_MAX_REQUEST].split(b"\r\n", 1)[0].split(b" ")
            path = target[1].decode("ascii", "replace") if len(target) >= 2 and target[0] == b"GET" else ""
            if urlsplit(path).path == CALLBACK_PATH and urlsplit(path).query and self._waiters:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nCache-Control: no-store"
                             b"\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_PAGE), _PAGE))
                for waiter in self._waiters:
                    if not waiter.done():
                        waiter.set_result(f"http://127.0.0.1:{self.port}{path}")
            else:
                writer.write(b"HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass  # a client that went away or sent garbage; the next visit may be the real one
        finally:
            writer.close()


def authorization_result(server: str, url: str) -> AuthorizationCodeResult:
    """The code, state and issuer of a final redirect URL; OAuthError for a denial, an error or no code.

    The messages never repeat the URL: its query holds the authorization code."""
    query = parse_qs(urlsplit(url.strip()).query)
    error = (query.get("error") or [""])[0]
    if error == "access_denied":
        raise OAuthError(f"sign-in to MCP server {server!r} was declined (access_denied); run `%mcp auth {server}` "
                         "and allow access to connect", server=server, kind="denied")
    if error:
        described = (query.get("error_description") or [""])[0][:200]
        raise OAuthError(f"the authorization server refused the sign-in to MCP server {server!r}: {error}"
                         f"{': ' + described if described else ''}; fix that, then run `%mcp auth {server}`",
                         server=server, kind="refused")
    code = (query.get("code") or [""])[0]
    if not code:
        raise OAuthError(f"the redirect URL for MCP server {server!r} has no authorization code: paste the whole "
                         "address the browser ended on after signing in", server=server, kind="no_code")
    state, iss = query.get("state"), query.get("iss")
    return AuthorizationCodeResult(code=code, state=state[0] if state else None, iss=iss[0] if iss else None)
