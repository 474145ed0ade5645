"""bench/run.py: the late rows (10-14: a fresh kernel, the reference servers, a 10 MB result, the Iceberg lake, a
replay) run small and are reported; test_bench_suite.py runs rows 1-9 and test_bench_rows_last.py the rest, so
that `make test`'s workers (one file each) run the three parts side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.test_bench_suite import EARLY_ROWS, NUMBERS, check_rows

pytestmark = pytest.mark.process

LATE_ROWS = sorted(n for n in map(int, NUMBERS) if n not in EARLY_ROWS and n <= 14)
LAST_ROWS = sorted(set(map(int, NUMBERS)) - set(EARLY_ROWS) - set(LATE_ROWS))


def test_the_parts_cover_every_row() -> None:
    assert LATE_ROWS
    assert LAST_ROWS
    assert set(EARLY_ROWS) | set(LATE_ROWS) | set(LAST_ROWS) == set(map(int, NUMBERS))


@pytest.mark.slow  # minutes on a busy machine: pytest-timeout's bound is the last resort (tests/conftest.py)
def test_the_late_rows_run_small_and_are_reported(clean_env: Path) -> None:
    check_rows(clean_env, LATE_ROWS)
