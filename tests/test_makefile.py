"""The Makefile's choices: one venv per Python version, and where it finds shared/tools/build-python.sh.

GNU make is required (the suite runs under `make test`), so its absence fails these tests."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

# Under `make test` the parent make's command-line variables (PYTHON=...) reach a child make through
# MAKEFLAGS; these tests choose their own.
_MAKE_ENV = {k: v for k, v in os.environ.items()
             if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "PYTHON", "VENV", "SHARED")}


def make(cwd: Path, *args: str) -> str:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=cwd, env=_MAKE_ENV, capture_output=True,
                          text=True, check=True, timeout=60).stdout


def show(cwd: Path, variable: str, *args: str) -> str:
    """A Makefile variable's value, as the recipes see it."""
    return make(cwd, "--eval", f"show-var: ; @echo $({variable})", "show-var", *args).strip()


def fake_python(folder: Path, version: str) -> Path:
    """An "interpreter" that only answers the Makefile's version question."""
    path = folder / f"python{version}"
    path.write_text(f"#!/bin/sh\necho {version}\n")
    path.chmod(0o755)
    return path


def test_each_python_version_gets_its_own_venv(repo_root: Path, tmp_path: Path) -> None:
    assert show(repo_root, "VENV") == ".venv"
    other = fake_python(tmp_path, "3.99")
    assert show(repo_root, "VENV", f"PYTHON={other}") == ".venv-3.99"
    # -B: plan the install even where the venv is already there
    assert f"{other} -m venv .venv-3.99" in make(repo_root, "-n", "-B", "venv", f"PYTHON={other}")


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
    assert show(main, "abspath $(SHARED)") == str(tmp_path / "shared")
    assert show(tmp_path / "wt" / "branch", "abspath $(SHARED)") == str(tmp_path / "shared")
    assert show(tmp_path / "wt" / "branch", "SHARED", "SHARED=/elsewhere") == "/elsewhere"


def test_quick_builds_matplotlibs_font_cache_before_a_test_plots(repo_root: Path, tmp_path: Path) -> None:
    """On a machine where matplotlib never ran, its first import lists the fonts with `fc-list` (a process, and
    seconds): inside a test under `make quick`'s --forbid-spawn that failed every test that plots, once per machine.
    The runs build the cache first, so the first plot of the suite finds it."""
    import sys

    env = {**_MAKE_ENV, "MPLCONFIGDIR": str(tmp_path / "matplotlib")}  # a machine where matplotlib never ran
    venv = ["-o", "venv", f"VENV={sys.prefix}"]  # this interpreter's venv, as it is
    plan = subprocess.run(["make", "--no-print-directory", "-n", "quick", *venv], cwd=repo_root, env=env,
                          capture_output=True, text=True, check=True, timeout=60).stdout
    assert plan.index("import matplotlib.font_manager") < plan.index("--forbid-spawn")
    subprocess.run(["make", "--no-print-directory", "fonts", *venv], cwd=repo_root, env=env, capture_output=True,
                   text=True, check=True, timeout=120)
    plots = "tests/notebook/test_nb_kernel_tools_values.py::test_run_code_left_open_figures_become_pngs_and_are_closed"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:nbval", "--forbid-spawn", plots],
                         cwd=repo_root, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:]
