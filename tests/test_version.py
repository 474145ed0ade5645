"""The version is written once, in synapse_nb/_version.py: pyproject.toml reads it (a dynamic version), the
installed metadata and the wheel's name carry it, and the MCP Apps View is told it by a trait, not by JS."""

from __future__ import annotations

import json
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

from synapse_nb._version import __version__

REPO = Path(__file__).resolve().parents[1]


def test_pyproject_reads_the_version_from_the_module() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"]
    assert "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["hatch"]["version"]["path"] == "synapse_nb/_version.py"


def test_the_installed_metadata_agrees() -> None:
    assert version("synapse_nb") == __version__


def test_the_javascript_writes_no_version() -> None:
    assert "version" not in json.loads((REPO / "js" / "package.json").read_text(encoding="utf-8"))
    for source in (REPO / "js" / "src").glob("*.js"):
        text = source.read_text(encoding="utf-8")
        assert not re.search(r"""version\s*:\s*["'`]\d""", text), f"{source.name} writes a version"
        assert __version__ not in text


def test_the_view_is_told_the_version() -> None:
    from synapse_nb.notebook.apps.view import AppView

    assert AppView.host_version.default_value == __version__
    assert 'model.get("host_version")' in (REPO / "js" / "src" / "app_view.js").read_text(encoding="utf-8")
