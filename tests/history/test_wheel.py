"""An installed wheel carries its migrations and applies them, from outside the source tree; the wheel and the sdist
carry the version written once, the LICENSE and the notices of the bundled JavaScript."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from synapse_nb._version import __version__
from synapse_nb.history.catalog import load_migrations

pytestmark = pytest.mark.process

CHECK = """
import json, sys
import synapse_nb
from synapse_nb.history.migrate import migrations_dir
from synapse_nb.history.store import HistoryStore
from synapse_nb.events import ServerEvent
store = HistoryStore.open(sys.argv[1], strict=True)
store.record(ServerEvent(server="w", event="connected"))
store.close()
h = synapse_nb.history(sys.argv[1])
print(json.dumps({
    "package": synapse_nb.__file__,
    "migrations": str(migrations_dir()),
    "versions": h.sql("SELECT version FROM schema_migrations ORDER BY 1").version.tolist(),
    "events": len(h.server_events()),
}))
"""


@pytest.mark.slow
def test_the_installed_wheel_applies_its_migrations(repo_root: Path, tmp_path: Path) -> None:
    dist, site, work = tmp_path / "dist", tmp_path / "site", tmp_path / "elsewhere"
    work.mkdir()
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--no-isolation", "--outdir", str(dist), str(repo_root)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    (wheel,) = dist.glob("synapse_nb-*.whl")
    (sdist,) = dist.glob("synapse_nb-*.tar.gz")
    assert wheel.name.startswith(f"synapse_nb-{__version__}-")
    assert sdist.name == f"synapse_nb-{__version__}.tar.gz"
    with zipfile.ZipFile(wheel) as zipped:
        names = set(zipped.namelist())
    assert f"synapse_nb-{__version__}.dist-info/licenses/LICENSE" in names
    for notices in ("app_view.js.LEGAL.txt", "THIRD_PARTY_NOTICES.txt"):
        assert f"synapse_nb/notebook/apps/static/{notices}" in names
    with tarfile.open(sdist) as tarred:
        assert f"synapse_nb-{__version__}/LICENSE" in tarred.getnames()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SYNAPSE_DB")}
    env["PYTHONPATH"] = str(site)
    out = subprocess.run(
        [sys.executable, "-c", CHECK, str(tmp_path / "fresh.duckdb")],
        check=True,
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
    )
    got = json.loads(out.stdout)
    assert Path(got["package"]).is_relative_to(site)
    assert got["migrations"] == str(site / "synapse_nb" / "_migrations")
    assert got["versions"] == [m.version for m in load_migrations()]  # every migration shipped in the wheel
    assert got["events"] == 1
