"""bench/run.py: the last rows (15 on: real kernels and the peers among them) run small and are reported, beside
the other parts (test_bench_suite.py, test_bench_rows_late.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.test_bench_rows_late import LAST_ROWS
from tests.bench.test_bench_suite import check_rows

pytestmark = pytest.mark.process


@pytest.mark.slow  # minutes on a busy machine (five rows start real kernels): the timeout is the last resort
def test_the_last_rows_run_small_and_are_reported(clean_env: Path) -> None:
    check_rows(clean_env, LAST_ROWS)
