"""Fixtures for the MCP client tests: the demo server over HTTP and SSE, the npm reference server, events."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcp_client.mcp_helpers import Events, WebServer, start_web
from tests.support.npm_servers import EVERYTHING, node_for


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
def demo_http(tmp_path: Path) -> Iterator[WebServer]:
    """The demo server serving streamable HTTP on 127.0.0.1 (a free port), ready to connect."""
    yield from start_web("http", tmp_path / "demo-http.log")


@pytest.fixture
def demo_sse(tmp_path: Path) -> Iterator[WebServer]:
    yield from start_web("sse", tmp_path / "demo-sse.log")


@pytest.fixture(scope="session")
def everything() -> dict[str, object]:
    """Connect arguments for the npm reference server; missing means the setup is broken: fail, don't skip."""
    node = node_for(EVERYTHING)
    return {"command": node, "args": [str(EVERYTHING), "stdio"]}


@pytest.fixture
def no_secrets(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fake key in the parent's environment, which no stdio server may see."""
    value = "sk-test-" + os.urandom(8).hex()
    monkeypatch.setenv("OPENAI_API_KEY", value)
    return value
