"""bench/run.py: every benchmark row runs in its small size and lands in the report (timings are never asserted)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.local_servers import LAST_RESORT

pytestmark = pytest.mark.process

BENCH = Path(__file__).resolve().parents[2] / "bench"
RUN = BENCH / "run.py"
NUMBERS = set(re.findall(r"^    (\d+): \(", RUN.read_text(), re.MULTILINE))  # the keys of run.py's ROWS
ROW_LINE = re.compile(r"^\| (\d+)([a-z]?) \| (.+?) \| .* \| (met|MISSED|—) \|$", re.MULTILINE)


def run_bench(*args: str, cwd: Path, timeout: float = LAST_RESORT) -> subprocess.CompletedProcess[str]:
    """Run bench/run.py; `timeout` only catches a run that hangs (each row has its own bound in run.py)."""
    return subprocess.run(
        [sys.executable, str(RUN), *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, check=False
    )


# The rows in three parts of about the same time, in three files (test_bench_rows_late.py and
# test_bench_rows_last.py run the others), so that `make test`'s workers (one file each) run them side by side
# instead of one worker running 20 rows.
EARLY_ROWS = sorted(n for n in map(int, NUMBERS) if n <= 9)


def check_rows(clean_env: Path, numbers: list[int]) -> None:
    """Run `numbers` in their small size: each lands in the report, and each one that misses its target is
    explained there and in the printed table."""
    out = clean_env / "results.md"
    proc = run_bench("--small", "--only", ",".join(map(str, numbers)), "--out", str(out), cwd=clean_env)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    report = out.read_text()
    rows = ROW_LINE.findall(report)
    assert {int(number) for number, *_ in rows} == set(numbers), report
    assert "did not run" not in report
    for heading in ("## Machine", "## Results", "## Notes", "## Why targets were missed"):
        assert heading in report
    missed = [f"{number}{sub}" for number, sub, _, verdict in rows if verdict == "MISSED"]
    why = report.split("## Why targets were missed", 1)[1]
    assert all(f"**{row_id} " in why for row_id in missed), why
    assert len(ROW_LINE.findall(proc.stdout)) == len(rows)


@pytest.mark.slow  # minutes on a busy machine: pytest-timeout's bound is the last resort (tests/conftest.py)
def test_the_early_rows_run_small_and_are_reported(clean_env: Path) -> None:
    check_rows(clean_env, EARLY_ROWS)


def test_only_runs_the_rows_asked_for(clean_env: Path) -> None:
    out = clean_env / "only.md"
    proc = run_bench("--small", "--only", "7", "--out", str(out), cwd=clean_env, timeout=60)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert [number for number, *_ in ROW_LINE.findall(out.read_text())] == ["7"]


def test_a_bad_row_number_is_refused_with_the_range(clean_env: Path) -> None:
    proc = run_bench("--only", "3,42", cwd=clean_env, timeout=30)
    assert proc.returncode != 0
    assert f"'42' is not a row number (1-{max(map(int, NUMBERS))})" in proc.stderr


def test_a_row_that_crashes_is_reported_as_failed_and_fails_the_run(clean_env: Path) -> None:
    """A worker that dies still yields a table line (and exit status 1), so rot shows in make test."""
    spec = importlib.util.spec_from_file_location("synapse_bench_run", RUN)
    assert spec is not None
    assert spec.loader is not None
    bench_run = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCH))  # run.py imports its sibling _common
    try:
        spec.loader.exec_module(bench_run)
    finally:
        sys.path.remove(str(BENCH))
    rows, ran = bench_run.run_row(7, True, clean_env, timeout=0.001)
    assert not ran
    assert rows[0].id == "7"
    assert rows[0].met is False
    assert "no result within" in rows[0].why
    report = bench_run.report(rows, small=True, seconds=1.0, load_before="0", load_after="0")
    assert "**7 agent loop overhead per iteration**: the benchmark itself failed" in report
    assert json.loads(json.dumps(rows[0].to_json()))["id"] == "7"
