"""Fixtures shared by every test: an isolated environment with no keys, no user config, no user history."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.llm_server import LlmServer

# The suite's own plugins: the spawn guard of `make quick` (--forbid-spawn) and the order in which
# pytest-xdist hands out test files (longest kinds first; it runs after this file's marker hook).
pytest_plugins = ["tests.support.spawn_guard", "tests.support.file_order"]

SECRET_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY", "OLLAMA_API_KEY")
ENV_VARS = (
    *SECRET_VARS,
    "SYNAPSE_MODEL",
    "SYNAPSE_DB",
    "SYNAPSE_MCP_CONFIG",
    "MCP_URL",
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    "DEEPSEEK_BASE_URL",
    "OLLAMA_BASE_URL",
    "SYNAPSE_LAKE",
    "SYNAPSE_LAKE_CATALOG",
    "SYNAPSE_LAKE_WAREHOUSE",
    "SYNAPSE_LAKE_NAMESPACE",
    "SYNAPSE_LAKE_S3_ENDPOINT",
    "SYNAPSE_LAKE_S3_REGION",
    "SYNAPSE_LAKE_S3_ACCESS_KEY_ID",
    "SYNAPSE_LAKE_S3_SECRET_ACCESS_KEY",
)


# Fixtures that start a process, and the marker every test using them (directly or through another
# fixture) gets, so that `make quick` (-m "not (process or kernel or browser or node)") leaves them out.
FIXTURE_MARKERS = {
    "demo_http": "process",  # tests/mcp_client: the demo server over HTTP, in a subprocess
    "demo_sse": "process",
    "everything": "node",  # the npm reference server `server-everything`
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            if fixture in FIXTURE_MARKERS:
                item.add_marker(FIXTURE_MARKERS[fixture])
        if type(item).__module__.startswith("nbval"):  # a saved notebook re-executed in a kernel
            item.add_marker("kernel")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Strip API keys and model settings; point config, data and history at a fresh temporary folder."""
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("SYNAPSE_DB", str(tmp_path / "history.duckdb"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


def venv_python() -> str:
    """The interpreter running the tests (the project's venv under `make test`)."""
    import sys

    return os.environ.get("SYNAPSE_TEST_PYTHON", sys.executable)


@pytest.fixture
def llm_server() -> Iterator[LlmServer]:
    """A real HTTP server on 127.0.0.1 speaking the OpenAI and Anthropic wire formats (tests/support/llm_server.py)."""
    with LlmServer() as server:
        yield server


@pytest.fixture(scope="module")
def tasks_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The fastmcp-tasks server (the 2026-07-28 tasks extension) over streamable HTTP, one per test module: a
    server that outlives the clients (and kernels) that connect to it."""
    from tests.support.task_servers import tasks_http

    with tasks_http(tmp_path_factory.mktemp("tasks-server") / "server.log") as url:
        yield url


@pytest.fixture(scope="module")
def everything_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """server-everything (the 2025-11-25 experimental tasks) over streamable HTTP, one per test module."""
    from tests.support.task_servers import everything_http

    with everything_http(tmp_path_factory.mktemp("everything") / "server.log") as url:
        yield url
