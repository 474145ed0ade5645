"""The Makefile's choices: one venv per Python version, and where it finds shared/tools/build-python.sh.

GNU make is required (the suite runs under `make test`), so its absence fails these tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def make(cwd: Path, *args: str) -> str:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=cwd, capture_output=True, text=True,
                          check=True, timeout=60).stdout


def fake_python(folder: Path, version: str) -> Path:
    """An "interpreter" that only answers the Makefile's version question."""
    path = folder / f"python{version}"
    path.write_text(f"#!/bin/sh\necho {version}\n")
    path.chmod(0o755)
    return path


def test_each_python_version_gets_its_own_venv(repo_root: Path, tmp_path: Path) -> None:
    assert "test -x .venv/bin/python ||" in make(repo_root, "-n", "venv")
    other = fake_python(tmp_path, "3.99")
    plan = make(repo_root, "-n", "venv", f"PYTHON={other}")
    assert "test -x .venv-3.99/bin/python ||" in plan
    assert f"{other} -m venv .venv-3.99" in plan


def test_shared_is_found_beside_a_clone_and_beside_the_main_clone_of_a_worktree(
    repo_root: Path, tmp_path: Path
) -> None:
    script = tmp_path / "shared" / "tools" / "build-python.sh"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    main = tmp_path / "main"
    main.mkdir()
    shutil.copy(repo_root / "Makefile", main / "Makefile")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "Makefile"], ["commit", "-qm", "m"],
                 ["worktree", "add", "-q", str(tmp_path / "wt" / "branch"), "-b", "branch"]):
        subprocess.run([*git, *args], cwd=main, check=True, capture_output=True, timeout=60)
    show = ["--eval", "show-shared: ; @echo $(abspath $(SHARED))", "show-shared"]
    assert make(main, *show).strip() == str(tmp_path / "shared")
    assert make(tmp_path / "wt" / "branch", *show).strip() == str(tmp_path / "shared")
    assert make(tmp_path / "wt" / "branch", *show, "SHARED=/elsewhere").strip() == "/elsewhere"
