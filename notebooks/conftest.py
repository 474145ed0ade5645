"""nbval runs the notebooks in a clean environment: the kernel it starts for a notebook does not inherit API
keys, SYNAPSE_MODEL or MCP configuration from the shell that ran `make test`, as scripts/run_notebooks.py's
kernel did not when it saved their outputs (the notebooks only `setdefault` their offline model, so a model
chosen in the shell would otherwise answer instead of the scripted one)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """While a notebook's cell runs: nbval applies `clear_output` as JupyterLab and nbclient do.

    nbval ignores `clear_output`, so a fresh run would keep outputs the saved notebook lost: a command's emptied
    live output, cleared away at the command's end (synapse_nb/notebook/kernel/cell_outputs.py). The
    cell's outputs so far (`test_outputs`, the list nbval appends to) are cleared at once, or with `wait`
    when the next output comes, before nbval appends it.
    """
    if item.path.suffix != ".ipynb" or not hasattr(item.parent, "get_kernel_message"):
        yield
        return
    notebook = item.parent
    read = notebook.get_kernel_message
    clear_next = False
    cell: str | None = None  # the cell's execute_request, named by the execute_input nbval reads first

    def get_kernel_message(*args: Any, **kwargs: Any) -> Any:
        nonlocal clear_next, cell
        msg = read(*args, **kwargs)
        kind, parent = msg["msg_type"], msg["parent_header"].get("msg_id")
        if kind == "execute_input":
            cell = parent
        outputs = getattr(item, "test_outputs", None)
        if outputs is None or parent != cell:
            return msg
        if kind == "clear_output":
            if msg["content"].get("wait"):
                clear_next = True
            else:
                outputs.clear()
        elif clear_next and kind in ("stream", "display_data", "execute_result", "error"):
            outputs.clear()
            clear_next = False
        return msg

    notebook.get_kernel_message = get_kernel_message
    try:
        yield
    finally:
        del notebook.get_kernel_message
