"""The npm MCP servers the tests run (pinned and installed under .tools/ by the Makefile), and the one check
that a test's server is there: a missing one means the setup is broken, so the test fails and names the
make target that installs it, never skips."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / ".tools"
_REFERENCE = TOOLS / "node_modules" / "@modelcontextprotocol"
_APPS = TOOLS / "apps" / "node_modules" / "@modelcontextprotocol"

EVERYTHING = _REFERENCE / "server-everything" / "dist" / "index.js"
FILESYSTEM = _REFERENCE / "server-filesystem" / "dist" / "index.js"
SEGMENTATION = _APPS / "server-customer-segmentation" / "dist" / "index.js"
BASIC = _APPS / "server-basic-vanillajs" / "dist" / "index.js"
SYSTEM_MONITOR = _APPS / "server-system-monitor" / "dist" / "index.js"
SCENARIO = _APPS / "server-scenario-modeler" / "dist" / "index.js"
SHEET_MUSIC = _APPS / "server-sheet-music" / "dist" / "index.js"
BUDGET = _APPS / "server-budget-allocator" / "dist" / "index.js"

_TARGET = {TOOLS / "node_modules": "make tools", TOOLS / "apps": "make apps-servers",
           TOOLS / "catalog": "make catalog-servers"}


def node_for(script: Path) -> str:
    """Node's path, once `script` (one of the servers above) is installed; else the test fails with the fix."""
    node = shutil.which("node")
    if node is None or not script.is_file():
        target = next((t for folder, t in _TARGET.items() if folder in script.parents), "make tools")
        name = script.parents[1].name
        pytest.fail(f"{name} is not installed at {script} (or node is missing): run `{target}`")
    return node
