"""The View's JavaScript is type-checked: every source opens with `// @ts-check`, and tsc (pinned in js/package.json,
run by `make lint`) finds no error in it under js/tsconfig.json, and does find one that is planted."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.node

JS = Path(__file__).resolve().parents[1] / "js"
TSC = JS / "node_modules" / ".bin" / "tsc"


def _tsc(project: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("node") is None:
        pytest.fail("node is missing: install Node.js 18+ with npm, then run `make widget-js-deps`")
    if not TSC.exists():
        pytest.fail("js/node_modules has no typescript: run `make widget-js-deps`")
    return subprocess.run([str(TSC), "--noEmit", "-p", str(project)], capture_output=True, text=True, timeout=300,
                          check=False)


def test_every_source_is_checked() -> None:
    config = json.loads((JS / "tsconfig.json").read_text(encoding="utf-8"))["compilerOptions"]
    assert (config["checkJs"], config["strict"], config["noEmit"]) == (True, True, True)
    sources = sorted((JS / "src").glob("*.js"))
    assert sources
    for source in sources:
        assert source.read_text(encoding="utf-8").startswith("// @ts-check\n"), source.name
    devs = json.loads((JS / "package.json").read_text(encoding="utf-8"))["devDependencies"]
    assert devs["typescript"][0].isdigit()  # pinned, not a range


def test_tsc_passes_on_the_sources_and_fails_on_a_planted_error(tmp_path: Path) -> None:
    done = _tsc(JS)
    assert done.returncode == 0, done.stdout + done.stderr
    (tmp_path / "bad.js").write_text('// @ts-check\n/** @param {number} n */\nfunction f(n) { return n; }\nf("x");\n')
    (tmp_path / "tsconfig.json").write_text(json.dumps({
        "extends": str(JS / "tsconfig.json"), "include": ["bad.js"],
        "compilerOptions": {"typeRoots": [str(JS / "node_modules" / "@types")]},
    }))
    planted = _tsc(tmp_path)
    assert planted.returncode != 0
    assert "bad.js" in planted.stdout
