"""nbval runs the notebooks in a clean environment: the kernel it starts for a notebook does not inherit API
keys, SYNAPSE_MODEL or MCP configuration from the shell that ran `make test`, as scripts/run_notebooks.py's
kernel did not when it saved their outputs (the notebooks only `setdefault` their offline model, so a model
chosen in the shell would otherwise answer instead of the scripted one)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from run_notebooks import OFFLINE_UNSET


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """Around the setup that starts a notebook's kernel: the offline environment; the rest of the run gets
    its environment back."""
    if item.path.suffix != ".ipynb":
        yield
        return
    saved = {name: os.environ.pop(name) for name in OFFLINE_UNSET if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)
