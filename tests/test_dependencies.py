"""Every distribution synapse_nb imports is declared in pyproject.toml (a dependency, or an extra for an optional
feature): a package that only arrives because another one depends on it today may be gone tomorrow."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import synapse_nb

PACKAGE = Path(synapse_nb.__file__).parent
PYPROJECT = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> set[str]:
    """The distributions pyproject.toml declares for the package and its extras (the test extra aside)."""
    project = PYPROJECT["project"]
    extras = [reqs for extra, reqs in project.get("optional-dependencies", {}).items() if extra != "test"]
    requirements = [*project["dependencies"], *(r for reqs in extras for r in reqs)]
    return {_normal(re.match(r"[A-Za-z0-9_.-]+", r).group(0)) for r in requirements}  # type: ignore[union-attr]


def _imported() -> dict[str, set[str]]:
    """Top-level names of absolute imports in the package (inside functions and TYPE_CHECKING too), with
    the modules that import them."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top != "synapse_nb" and top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(str(path.relative_to(PACKAGE)))
    return found


def test_every_imported_distribution_is_declared() -> None:
    distributions = packages_distributions()
    declared = _declared()
    undeclared = {}
    for name, where in sorted(_imported().items()):
        dists = {_normal(d) for d in distributions.get(name, [])}
        assert dists, f"{name} (imported by {sorted(where)}) is not installed: declare it and reinstall"
        if not dists & declared:
            undeclared[name] = (sorted(dists), sorted(where)[:3])
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"


def test_the_check_sees_what_it_checks() -> None:
    """The scan finds the packages it must (a broken scan would pass the test above with nothing found)."""
    imported = _imported()
    for name in ("pydantic", "anyio", "markupsafe", "mcp", "duckdb", "IPython"):
        assert name in imported, name
    assert {"pydantic", "anyio", "markupsafe"} <= _declared()
