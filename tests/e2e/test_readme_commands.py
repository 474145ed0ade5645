"""The README's commands: `make demo` runs the quickstart offline and shows the answer and its tool calls.

CI runs `make test` on a clean clone, so this is where `make demo` is exercised there too. The recipe is
checked with `make -n` (no reinstall), then the script it runs is run with this interpreter.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.kernel]  # `make demo` runs the notebooks in kernels


def test_the_readme_leads_with_make_demo_and_make_test(repo_root: Path) -> None:
    readme = (repo_root / "README.md").read_text()
    first_block = readme.split("```bash", 1)[1].split("```", 1)[0]
    assert re.search(r"^make demo\b", first_block, re.M)
    assert re.search(r"^make test\b", first_block, re.M)


def test_make_demo_runs_the_demo_script(repo_root: Path) -> None:
    plan = subprocess.run(["make", "-n", "demo"], cwd=repo_root, capture_output=True, text=True, check=True)
    assert "scripts/demo.py" in plan.stdout


def test_the_demo_runs_offline_and_reports_answer_tool_calls_and_files(repo_root: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k not in ("SYNAPSE_MODEL", "MCP_URL")}
    env["SYNAPSE_DB"] = str(tmp_path / "unused.duckdb")  # the notebook picks its own temporary file
    out = subprocess.run(
        [sys.executable, "scripts/demo.py"], cwd=repo_root, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    text = out.stdout
    assert "Q: What are the top products by revenue?" in text
    assert re.search(r"^Tool calls the agent made \(\d+\):", text, re.M)
    assert re.search(r"demo\s+query", text)
    executed = re.search(r"^Executed notebook:\s+(\S+)", text, re.M)
    history = re.search(r"^History file:\s+(\S+)", text, re.M)
    assert executed
    assert (repo_root / executed.group(1)).is_file()
    assert history
    assert Path(history.group(1)).is_file()
