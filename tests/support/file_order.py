"""The order in which pytest-xdist hands out test files under `make test` (--dist loadfile
--no-loadscope-reorder): the longest kinds first, so that the run does not end with one worker on a long file
while the others idle. The bench's small runs take minutes; browser and kernel files tens of seconds; a file of
in-process tests a second or two. A file's rank is that of its longest kind of test, and the sort is stable, so
files of one rank, and the tests within a file, keep the order they were collected in."""

from __future__ import annotations

from pathlib import Path

import pytest

LONGEST_FIRST = ("bench", "browser", "kernel", "process", "node")
"""Kinds of test, longest first: the markers of tests/conftest.py, and `bench` for files under a bench/ folder."""


def rank(item: pytest.Item) -> int:
    """The place of the item's kind in LONGEST_FIRST (after them all: a test that runs in this process)."""
    if item.path.parent.name == "bench":
        return 0
    marks = {m.name for m in item.iter_markers()}
    return next((i for i, kind in enumerate(LONGEST_FIRST) if kind in marks), len(LONGEST_FIRST))


def longest_first(items: list[pytest.Item]) -> None:
    """Sort `items` in place, file by file, longest kind of file first."""
    of_file: dict[Path, int] = {}
    for item in items:
        of_file[item.path] = min(of_file.get(item.path, len(LONGEST_FIRST)), rank(item))
    items.sort(key=lambda item: of_file[item.path])


@pytest.hookimpl(trylast=True)  # after the hooks that add markers (tests/conftest.py's fixture markers)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    longest_first(items)
