"""Fixtures of the history tests: a history path in a clean environment and an open store on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from synapse_nb.history.store import HistoryStore


@pytest.fixture
def db_path(clean_env: Path) -> Path:
    """The history file SYNAPSE_DB names (not created yet)."""
    return clean_env / "history.duckdb"


@pytest.fixture
def store(db_path: Path) -> Iterator[HistoryStore]:
    s = HistoryStore.open(db_path, strict=True)
    yield s
    s.close()
