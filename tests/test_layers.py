"""Imports point down the layers of DESIGN.md section 2, and each I/O library stays in its own layer."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "synapse_nb"
LAYER = {"notebook": 3, "agent": 2, "providers": 1, "mcp_client": 1, "history": 1}
OWNER = {
    "IPython": "notebook", "ipywidgets": "notebook", "traitlets": "notebook", "nest_asyncio2": "notebook",
    "duckdb": "history", "httpx": "providers", "mcp": "mcp_client", "mcp_types": "mcp_client", "httpx2": "mcp_client",
}


def _layer(parts: tuple[str, ...]) -> tuple[str, int]:
    if len(parts) > 1 and parts[0] in LAYER:
        return parts[0], LAYER[parts[0]]
    return "core", 0


def _imports(tree: ast.AST, rel: tuple[str, ...]) -> list[str]:
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            base = list(rel[:-1])[: len(rel) - node.level] if node.level <= len(rel) - 1 else []
            found.append(".".join(["synapse_nb", *base, *(node.module.split(".") if node.module else [])]))
    return found


def violations(pkg: Path = PKG) -> list[str]:
    bad: list[str] = []
    for f in sorted(pkg.rglob("*.py")):
        rel = f.relative_to(pkg).parts
        if rel == ("__init__.py",):
            continue
        name, level = _layer(rel)
        for mod in _imports(ast.parse(f.read_text(), str(f)), rel):
            top = mod.split(".")[0]
            if top in OWNER and OWNER[top] != name:
                bad.append(f"{'/'.join(rel)} imports {mod} (belongs to {OWNER[top]}/)")
            if top == "synapse_nb":
                target, target_level = _layer((*mod.split(".")[1:], "x"))
                if target != "core" and (target_level > level or (target_level == level and target != name)):
                    bad.append(f"{'/'.join(rel)} imports {mod} ({name} may not import {target})")
    return bad


def test_imports_point_down_the_layers() -> None:
    assert violations() == []


def test_the_checker_catches_an_upward_import(tmp_path: Path) -> None:
    pkg = tmp_path / "synapse_nb"
    (pkg / "history").mkdir(parents=True)
    (pkg / "history" / "bad.py").write_text("from ..agent import orchestrator\nimport httpx\n")
    assert len(violations(pkg)) == 2


def test_core_modules_import_no_third_party_io_library() -> None:
    code = (
        "import sys, synapse_nb, synapse_nb.errors, synapse_nb.types, synapse_nb.events, "
        "synapse_nb.protocols, synapse_nb.config\n"
        "heavy = {'duckdb', 'httpx', 'mcp', 'pandas', 'ipywidgets', 'IPython', 'nest_asyncio2'}\n"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
