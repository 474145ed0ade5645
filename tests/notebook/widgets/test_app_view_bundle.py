"""The committed View widget bundle (synapse_nb/notebook/apps/static/app_view.js) and its loader
(app_view_loader.js) are what `make widget-js` builds from js/src and the pinned npm packages of
js/package-lock.json: rebuilding gives the same bytes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.node, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
JS = REPO / "js"
STATIC = REPO / "synapse_nb" / "notebook" / "apps" / "static"
BUNDLE = STATIC / "app_view.js"
LOADER = STATIC / "app_view_loader.js"
NOTICES = STATIC / "THIRD_PARTY_NOTICES.txt"
LEGAL = STATIC / "app_view.js.LEGAL.txt"


def test_rebuilding_the_bundle_gives_the_committed_file(tmp_path: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is missing: install Node.js 18+ with npm, then run `make widget-js-deps`")
    if not (JS / "node_modules" / ".package-lock.json").exists():
        pytest.fail("js/node_modules is missing: run `make widget-js-deps`")
    lock = json.loads((JS / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/@modelcontextprotocol/ext-apps"]["version"] == "2.0.4"
    subprocess.run([npm, "run", "--silent", "build", "--", f"--outdir={tmp_path}"], cwd=JS, check=True,
                   capture_output=True, timeout=120)
    for committed in (BUNDLE, LOADER, NOTICES, LEGAL):
        built = tmp_path / committed.name
        assert built.read_bytes() == committed.read_bytes(), (
            f"static/{committed.name} is stale: run `make widget-js` and commit it")


def test_the_wheel_carries_the_bundle() -> None:
    """Installing needs no Node: the bundle and its loader sit inside the package, next to the widgets that
    read them (each View carries the loader; the one shared bundle model carries the bundle)."""
    from synapse_nb.notebook.apps.bundle import _read_code
    from synapse_nb.notebook.apps.view import AppView

    assert AppView._esm.default_value == LOADER.read_text(encoding="utf-8")
    assert _read_code() == BUNDLE.read_text(encoding="utf-8")
    assert "ui/initialize" in BUNDLE.read_text(encoding="utf-8")


def test_the_notices_name_every_bundled_package() -> None:
    """The bundle's third-party notices ship beside it: each package of js/package-lock.json that the bundle
    contains, with its version, license and license text; esbuild's lifted license comments too."""
    lock = json.loads((JS / "package-lock.json").read_text())["packages"]
    notices = NOTICES.read_text(encoding="utf-8")
    for name in ("@modelcontextprotocol/ext-apps", "zod"):
        entry = next(v for k, v in lock.items() if k.endswith(f"node_modules/{name}"))
        assert f"  {name} {entry['version']} ({entry['license']})" in notices
    assert "Permission is hereby granted" in notices  # the MIT text itself, not only its name
    assert "Apache License" in notices
    assert "Copyright" in LEGAL.read_text(encoding="utf-8")
