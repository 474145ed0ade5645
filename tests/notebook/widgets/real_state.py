"""The notebook's own facade (SynapseState, no IPython) and real hubs for widget tests, on a private loop the
test drives."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.notebook.kernel.runner import Runner
from synapse_nb.notebook.state import SynapseState

CONNECT_TIMEOUT = 60.0  # a server's start and handshake, on a loaded machine
CLOSE_TIMEOUT = 30.0


@contextmanager
def private_runner() -> Iterator[Runner]:
    """A Runner on a fresh event loop (it runs only while the test drives it), closed when the block ends."""
    loop = asyncio.new_event_loop()
    try:
        yield Runner(loop)
    finally:
        loop.close()


@contextmanager
def connected(runner: Runner, hub: McpHub, name: str, **connect: Any) -> Iterator[McpHub]:
    """`hub` with server `name` connected (`connect` are hub.connect's options) for the block; the hub is
    closed when the block ends, pass or fail, so no server process outlives the test."""
    try:
        runner.run(hub.connect(name, **connect), timeout=CONNECT_TIMEOUT)
        yield hub
    finally:
        runner.run(hub.aclose(), timeout=CLOSE_TIMEOUT)


@contextmanager
def private_state() -> Iterator[SynapseState]:
    """A SynapseState on a private runner; the state (its hub) and the loop are closed when the block ends."""
    with private_runner() as runner:
        state = SynapseState(None, runner=runner)
        try:
            yield state
        finally:
            state.close()


def go_live(state: SynapseState) -> list[dict[str, Any]]:
    """Make `state` live as in a kernel; with no shell to display them, the bundles it publishes are collected
    in the returned list (newest last) for the test to read."""
    published: list[dict[str, Any]] = []
    state.port.live = True
    state.port.publish = lambda bundle, display_id, update: published.append(dict(bundle))
    return published
