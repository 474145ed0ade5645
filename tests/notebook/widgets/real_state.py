"""The notebook's own facade (SynapseState, no IPython) for widget tests, on a private loop the test drives."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from synapse_nb.notebook.runner import Runner
from synapse_nb.notebook.state import SynapseState


@contextmanager
def private_state() -> Iterator[SynapseState]:
    """A SynapseState whose runner owns a fresh event loop (it runs only while the test drives it); the hub
    and the loop are closed when the block ends, pass or fail, so no server process outlives the test."""
    loop = asyncio.new_event_loop()
    state = SynapseState(None, runner=Runner(loop))
    try:
        yield state
    finally:
        state.close()
        loop.close()


def go_live(state: SynapseState) -> list[dict[str, Any]]:
    """Make `state` live as in a kernel; with no shell to display them, the bundles it publishes are collected
    in the returned list (newest last) for the test to read."""
    published: list[dict[str, Any]] = []
    state.live = True
    state.publish = lambda bundle, display_id, update: published.append(dict(bundle))
    return published
