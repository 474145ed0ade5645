"""bench/run.py: the second half of the rows (real kernels and peers among them) runs small and is reported;
test_bench_suite.py runs the first half, so that the two halves run side by side under `make test`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.test_bench_suite import EARLY_ROWS, NUMBERS, check_rows

pytestmark = pytest.mark.process

LATE_ROWS = sorted(set(map(int, NUMBERS)) - set(EARLY_ROWS))


def test_the_halves_cover_every_row() -> None:
    assert LATE_ROWS
    assert set(EARLY_ROWS) | set(LATE_ROWS) == set(map(int, NUMBERS))


@pytest.mark.slow
@pytest.mark.timeout(480)  # four rows start real kernels (two the peers'): minutes on a busy machine
def test_the_late_rows_run_small_and_are_reported(clean_env: Path) -> None:
    check_rows(clean_env, LATE_ROWS)
