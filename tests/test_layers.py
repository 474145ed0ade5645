"""Imports point down the layers of DESIGN.md section 2, each I/O library stays in its own layer, and no
import cycle runs through the root package."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "synapse_nb"
ROOT = "synapse_nb"
# The layers below the root; siblings in a layer never import each other (what they share is in the core).
LAYER = {"notebook": 3, "agent": 2, "providers": 1, "mcp_client": 1, "history": 1, "telemetry": 1}
OWNER = {
    "IPython": "notebook", "ipywidgets": "notebook", "traitlets": "notebook", "nest_asyncio2": "notebook",
    "anywidget": "notebook", "duckdb": "history", "httpx": "providers", "mcp": "mcp_client",
    "mcp_types": "mcp_client", "httpx2": "mcp_client", "opentelemetry": "telemetry",
    "pyiceberg": "history", "sqlalchemy": "history",  # the Iceberg lake (history/lake*.py)
}


@dataclass(frozen=True)
class Import:
    """One imported name as the importing module sees it: `target` is a module of the package, or the
    outside module; `name` is set when a module's attribute (not a submodule) is imported."""

    target: str
    name: str | None
    lazy: bool  # inside a function (or the root's lazy table): runs on first use, not at import


class Package:
    """The modules of a package directory, read as text (nothing is imported)."""

    def __init__(self, pkg: Path) -> None:
        self.pkg = pkg
        self.files: dict[str, Path] = {}
        for f in sorted(pkg.rglob("*.py")):
            parts = (pkg.name, *f.relative_to(pkg).with_suffix("").parts)
            self.files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f

    def is_package(self, module: str) -> bool:
        return self.files[module].name == "__init__.py"

    def imports(self, module: str) -> Iterator[Import]:
        """Every import in `module`; those under `if TYPE_CHECKING:` never run and are left out."""
        tree = ast.parse(self.files[module].read_text(), str(self.files[module]))
        yield from self._walk(module, tree.body, lazy=False)
        if module == ROOT:
            yield from self._lazy_table(tree)

    def _walk(self, module: str, body: list[ast.stmt], *, lazy: bool) -> Iterator[Import]:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                yield from self._walk(module, node.orelse, lazy=lazy)
            elif isinstance(node, ast.Import):
                yield from (Import(a.name, None, lazy) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                yield from self._from(module, node, lazy)
            else:
                inner = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) or lazy
                for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                    for child in getattr(node, field, []) or []:
                        stmts = child.body if isinstance(child, (ast.ExceptHandler, ast.match_case)) else [child]
                        yield from self._walk(module, stmts, lazy=inner)

    def _from(self, module: str, node: ast.ImportFrom, lazy: bool) -> Iterator[Import]:
        if node.level:
            here = module.split(".") if self.is_package(module) else module.split(".")[:-1]
            base = here[: len(here) - node.level + 1]
            source = ".".join([*base, *([node.module] if node.module else [])])
        else:
            source = node.module or ""
        for alias in node.names:
            sub = f"{source}.{alias.name}"
            yield Import(sub, None, lazy) if sub in self.files else Import(source, alias.name, lazy)

    def _lazy_table(self, tree: ast.Module) -> Iterator[Import]:
        """The root's PEP 562 table (`_LAZY = {name: ".module"}`): each entry is an import on first use."""
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "_LAZY" for t in node.targets):
                table = ast.literal_eval(node.value)
                yield from (Import(ROOT + module, name, True) for name, module in table.items())


def _layer(module: str) -> tuple[str, int]:
    parts = module.split(".")[1:]
    if parts and parts[0] in LAYER:
        return parts[0], LAYER[parts[0]]
    return "core", 0


def violations(pkg: Path = PKG) -> list[str]:
    """Upward or sideways imports, I/O libraries outside their layer, and root-package names used below it."""
    package = Package(pkg)
    bad: list[str] = []
    for module in package.files:
        if module == ROOT:
            continue  # the public face may re-export anything
        name, level = _layer(module)
        for imp in package.imports(module):
            top = imp.target.split(".")[0]
            if top in OWNER and OWNER[top] != name:
                bad.append(f"{module} imports {imp.target} (belongs to {OWNER[top]}/)")
            if top != ROOT:
                continue
            if imp.target == ROOT:
                bad.append(f"{module} imports {imp.name or ROOT} from the root package (nothing below imports it)")
                continue
            target, target_level = _layer(imp.target)
            if target != "core" and (target_level > level or (target_level == level and target != name)):
                bad.append(f"{module} imports {imp.target} ({name} may not import {target})")
    return bad


def cycles_through_root(pkg: Path = PKG) -> list[list[str]]:
    """Import cycles that contain the root package, counting imports made inside functions and the root's
    lazy `__getattr__` table (such a cycle means a module needs the root that lazily needs it)."""
    package = Package(pkg)
    edges = {m: {i.target for i in package.imports(m) if i.target in package.files} for m in package.files}
    found: list[list[str]] = []
    path: list[str] = [ROOT]
    seen: set[str] = set()

    def walk(module: str) -> None:
        for nxt in sorted(edges[module]):
            if nxt == ROOT:
                found.append([*path, ROOT])
            elif nxt not in seen:
                seen.add(nxt)
                path.append(nxt)
                walk(nxt)
                path.pop()

    walk(ROOT)
    return found


def import_time_cycles(pkg: Path = PKG) -> list[list[str]]:
    """Groups of modules that import each other at import time (module level, outside functions and
    `if TYPE_CHECKING:`): whichever is imported first sees the other half-initialised."""
    package = Package(pkg)
    edges = {m: sorted({i.target for i in package.imports(m) if not i.lazy and i.target in package.files})
             for m in package.files}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        for nxt in edges[module]:
            if nxt not in index:
                visit(nxt)
                low[module] = min(low[module], low[nxt])
            elif nxt in stack:
                low[module] = min(low[module], index[nxt])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1 or module in edges[module]:
                groups.append(sorted(group))

    for module in sorted(package.files):
        if module not in index:
            visit(module)
    return groups


def test_no_import_cycle_at_import_time() -> None:
    assert import_time_cycles() == []


def test_the_import_time_check_finds_a_cycle_and_ignores_deferred_imports(tmp_path: Path) -> None:
    pkg = _write(tmp_path / ROOT, {
        "history/a.py": "from .b import x\n",
        "history/b.py": "from .a import y\n",
        "history/c.py": "from .d import x\n",
        "history/d.py": "def later():\n    from .c import y\n",
    })
    assert import_time_cycles(pkg) == [["synapse_nb.history.a", "synapse_nb.history.b"]]


def test_imports_point_down_the_layers() -> None:
    assert violations() == []


def test_no_import_cycle_runs_through_the_root_package() -> None:
    assert [" -> ".join(c) for c in cycles_through_root()] == []


def _write(pkg: Path, files: dict[str, str]) -> Path:
    for rel, text in {"__init__.py": "", **files}.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    for d in [p for p in pkg.rglob("*") if p.is_dir()]:
        (d / "__init__.py").touch()
    return pkg


def test_the_checker_catches_an_upward_or_sideways_import(tmp_path: Path) -> None:
    pkg = _write(tmp_path / ROOT, {
        "history/bad.py": "from ..agent import orchestrator\nimport httpx\n",
        "telemetry/side.py": "def later():\n    from ..history import store\n",
        "history/spans.py": "import opentelemetry.trace\n",
        "agent/orchestrator.py": "", "history/store.py": "",
    })
    assert sorted(violations(pkg)) == [
        "synapse_nb.history.bad imports httpx (belongs to providers/)",
        "synapse_nb.history.bad imports synapse_nb.agent.orchestrator (history may not import agent)",
        "synapse_nb.history.spans imports opentelemetry.trace (belongs to telemetry/)",
        "synapse_nb.telemetry.side imports synapse_nb.history.store (telemetry may not import history)",
    ]


def test_the_checker_catches_a_name_taken_from_the_root_package(tmp_path: Path) -> None:
    pkg = _write(tmp_path / ROOT, {
        "__init__.py": "__version__ = '1'\n",
        "mcp_client/connection.py": "from .. import __version__\n",
        "notebook/state.py": "def later():\n    from .. import telemetry\n",  # a submodule: allowed
        "telemetry/__init__.py": "",
    })
    assert violations(pkg) == [
        "synapse_nb.mcp_client.connection imports __version__ from the root package (nothing below imports it)"
    ]


def test_the_cycle_check_follows_the_roots_lazy_table(tmp_path: Path) -> None:
    files = {
        "__init__.py": "__version__ = '1'\n_LAZY = {'McpHub': '.mcp_client.hub'}\n",
        "mcp_client/hub.py": "from .connection import Connection\n",
        "mcp_client/connection.py": "def info():\n    from .. import __version__\n",
    }
    assert cycles_through_root(_write(tmp_path / "a" / ROOT, files)) == [
        ["synapse_nb", "synapse_nb.mcp_client.hub", "synapse_nb.mcp_client.connection", "synapse_nb"]
    ]
    files["mcp_client/connection.py"] = "def info():\n    from .._version import __version__\n"
    files["_version.py"] = "__version__ = '1'\n"
    assert cycles_through_root(_write(tmp_path / "b" / ROOT, files)) == []


@pytest.mark.process
def test_core_modules_import_no_third_party_io_library() -> None:
    code = (
        "import sys, synapse_nb, synapse_nb.errors, synapse_nb.types, synapse_nb.events, "
        "synapse_nb.protocols, synapse_nb.config\n"
        "heavy = {'duckdb', 'httpx', 'mcp', 'pandas', 'ipywidgets', 'IPython', 'nest_asyncio2', 'opentelemetry'}\n"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
