"""The notebook layer: magics, display, widgets and the sync<->async runner (the only layer importing IPython).

`current()` gives the extension's state in the running kernel, for top-level `await` on the same
objects the magics use, e.g. `await synapse_nb.notebook.current().hub.call("demo__echo", {"text": "hi"})`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .state import SynapseState

__all__ = ["current"]


def current() -> SynapseState:
    """The state of `%load_ext synapse_nb` in the running IPython: `.hub`, `.runner`, `.sessions`, `.history()`."""
    from IPython.core.error import UsageError
    from IPython.core.getipython import get_ipython

    from .extension import get_state

    state = get_state(get_ipython())
    if state is None:
        raise UsageError("synapse_nb is not loaded in this kernel; run %load_ext synapse_nb first")
    return state
