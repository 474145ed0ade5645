"""bench/bench_agent.py --small runs and prints its table (timings are reported, never asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_agent.py"


def test_bench_agent_small_prints_a_table_of_ratios() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCH), "--small"], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("## agent loop (small run")
    rows = [line for line in lines if line.startswith("| ") and "---" not in line][1:]
    names = [row.split(" | ")[0].lstrip("| ") for row in rows]
    assert names == [
        "tool called directly (per call)",
        "agent iteration, 10-iteration turn",
        "agent overhead per iteration",
        "1 x async tool of 50 ms in a reply",
        "8 x async tools of 50 ms in one reply",
        "1 x sync tool of 50 ms in a reply",
        "8 x sync tools of 50 ms in one reply",
    ]
    assert all(row.rstrip(" |").endswith(("ok", "MISSED")) for row in rows if "< " in row)
    assert sum("x |" in row for row in rows) >= 3  # ratios against the baselines of the same run
