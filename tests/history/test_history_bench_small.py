"""bench/bench_history.py keeps working: its --small run exits 0 and prints the results table."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process


def test_bench_history_small_runs(repo_root: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SYNAPSE_DB"}
    env["PYTHONWARNINGS"] = "error"
    out = subprocess.run(
        [
            sys.executable,
            str(repo_root / "bench" / "bench_history.py"),
            "--small",
            "--markdown",
            str(tmp_path / "r.md"),
        ],
        capture_output=True,
        text=True,
        timeout=170,
        cwd=tmp_path,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert [c.strip() for c in lines[0].split("|")[1:-1]] == [
        "measurement",
        "synapse_nb",
        "baseline",
        "ratio",
        "target",
    ]
    rows = [line for line in lines[2:] if line.startswith("|")]
    assert len(rows) == 5
    assert any("GROUP BY tool" in r for r in rows)
    assert any("last 1,000" in r for r in rows)
    assert (tmp_path / "r.md").read_text().count("\n|") == 7
