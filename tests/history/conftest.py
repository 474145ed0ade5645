"""Fixtures of the history tests: a history path in a clean environment and an open store on it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from synapse_nb.history.catalog import known_version, load_migrations
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


@pytest.fixture
def newer(tmp_path: Path) -> Path:
    """The migrations of a newer synapse_nb (for `migrations=`): the installed ones plus the next (adds a column)."""
    d = tmp_path / "newer-migrations"
    d.mkdir()
    for m in load_migrations():
        shutil.copy(m.path, d)
    (d / f"{known_version() + 1:04d}_tool_call_cost.sql").write_text("ALTER TABLE tool_calls ADD COLUMN cost DOUBLE;\n")
    return d
