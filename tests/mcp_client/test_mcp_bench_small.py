"""bench/bench_mcp.py runs end to end in its quick size, so the MCP benchmarks cannot rot."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_bench_mcp_small(repo_root: Path, tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(repo_root / "bench" / "bench_mcp.py"), "--small"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "SYNAPSE_BENCH_TMP": str(tmp_path), "HOME": str(tmp_path)},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| (A|B|C-demo|C-everything|D) \|.*$", out.stdout, re.M)}
    assert set(rows) == {"A", "B", "C-demo", "C-everything", "D"}, out.stdout
    assert "McpHub.call:" in rows["A"]
    assert re.search(r"\d\.\d\dx", rows["A"])
    assert "list + register:" in rows["C-demo"]
    assert "5 via connect_config:" in rows["D"]
