"""The PyPI MCP servers the tests run from venvs of their own under .tools/ (pinned and installed by the
Makefile), and the one check that a test's server is there: a missing one fails the test naming the make
target, never skips."""

from __future__ import annotations

from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / ".tools"
MOTHERDUCK_VENV = TOOLS / "motherduck"


def motherduck() -> tuple[Path, Path]:
    """(the `mcp-server-motherduck` command, that venv's python: its duckdb makes the test's database file and
    its fastmcp runs small fastmcp servers); the test fails with the fix when they are not installed."""
    command, python = MOTHERDUCK_VENV / "bin" / "mcp-server-motherduck", MOTHERDUCK_VENV / "bin" / "python"
    if not command.is_file() or not python.is_file():
        pytest.fail(f"mcp-server-motherduck is not installed at {command}: run `make tools`")
    return command, python
