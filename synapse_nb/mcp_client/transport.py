"""The SDK transport for one server config (stdio with our stderr pipe, streamable HTTP, SSE), and the
checks that can be made before anything is spawned."""

from __future__ import annotations

import os
import shutil
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from pathlib import Path
from typing import Any

import httpx2
from mcp import StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.client.streamable_http import streamable_http_client

from ..config import ServerConfig
from .exit_status import track_spawns
from .process import StderrPipe
from .wire import WireTap

__all__ = ["open_transport", "preflight", "stdio_params"]

HTTP_READ_TIMEOUT = 300.0
"""A server may hold a response stream open for long (a slow tool); the per-call timeout bounds calls."""
MAX_EVENT = 256 * 1024 * 1024
"""Largest single message over streamable HTTP (the SDK's default is 1 MB; its SSE transport keeps 1 MB)."""


def preflight(cfg: ServerConfig) -> str | None:
    """Problems found before spawning anything: a bad config entry, a missing command or folder."""
    if cfg.problem is not None:
        return cfg.problem
    if cfg.transport == "stdio" and cfg.command:
        path = cfg.env.get("PATH") or get_default_environment().get("PATH")
        if shutil.which(cfg.command, path=path) is None:
            return f"command {cfg.command!r} not found (not executable, or not on PATH)"
        if cfg.cwd and not Path(cfg.cwd).expanduser().is_dir():
            return f"working directory {cfg.cwd!r} does not exist"
    return None


def stdio_params(cfg: ServerConfig) -> StdioServerParameters:
    """The SDK gives the child only its safe default environment (PATH, HOME, ...) plus the configured `env`."""
    assert cfg.command is not None
    return StdioServerParameters(
        command=cfg.command, args=list(cfg.args), env=dict(cfg.env) or None,
        cwd=os.path.expanduser(cfg.cwd) if cfg.cwd else None,
    )


async def open_transport(
    cfg: ServerConfig, stack: AsyncExitStack, pipe: StderrPipe | None, server: object | None = None,
    auth: httpx2.Auth | None = None, tap: WireTap | None = None,
) -> AbstractAsyncContextManager[Any] | Any:
    """What `mcp.Client` connects to: the (not yet entered) transport, or the in-process `server` object
    as it is (the SDK pairs a client with it in memory). An HTTP client it needs is entered on `stack`;
    `auth` (OAuth, see oauth/provider.py) goes on every HTTP request; `tap` (wire.py) sees what tracing
    needs of the wire (the in-process pairing has none)."""
    if server is not None:
        return server
    tapped = tap.transport if tap is not None else (lambda inner: inner)
    if cfg.transport == "stdio":
        assert pipe is not None
        track_spawns()  # so a failure can say how the process ended (exit_status.py)
        return tapped(stdio_client(stdio_params(cfg), errlog=pipe.errlog))
    assert cfg.url is not None
    connect = min(cfg.connect_timeout_s, 30.0)
    if cfg.transport == "sse":
        return tapped(sse_client(cfg.url, headers=dict(cfg.headers) or None, timeout=connect,
                                 sse_read_timeout=HTTP_READ_TIMEOUT, auth=auth))
    timeout = httpx2.Timeout(30.0, connect=connect, read=HTTP_READ_TIMEOUT)
    hooks = {"response": [tap.on_response]} if tap is not None else None
    http = await stack.enter_async_context(httpx2.AsyncClient(headers=dict(cfg.headers), timeout=timeout,
                                                              auth=auth, event_hooks=hooks))
    return tapped(streamable_http_client(cfg.url, http_client=http, max_sse_event_size=MAX_EVENT))
