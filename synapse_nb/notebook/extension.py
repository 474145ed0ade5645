"""`%load_ext synapse_nb` / `%unload_ext synapse_nb`: build the state, register the magics and the input
transformer of awaited cells (notebook/kernel/awaited.py), tear them down.

Loading imports only IPython and this layer's light modules; the MCP SDK, httpx, DuckDB, pandas and
ipywidgets load when first needed. Loading prints nothing; loading twice keeps the existing state.
"""

from __future__ import annotations

import functools
from typing import Any

from .state import STATE_ATTR, SynapseState

__all__ = ["get_state", "load", "unload"]


def get_state(shell: Any) -> SynapseState | None:
    """The extension's state on this shell, or None when the extension is not loaded."""
    state = getattr(shell, STATE_ATTR, None)
    return state if isinstance(state, SynapseState) else None


def load(shell: Any) -> SynapseState:
    """Register the magics on the shell (once) and return the extension's state."""
    state = get_state(shell)
    if state is not None and not state.closed:
        return state
    from ..mcp_client import preload
    from .apps.warm import warm_views
    from .commands.ask import view_turn
    from .kernel.port import announce_shutdowns
    from .magics import SynapseMagics
    from .subcommands import turn_parts

    # the MCP SDK imports in a background thread: the first `%mcp connect` does not wait for it; then what the
    # first MCP Apps View needs, in another, after it (apps/warm.py)
    warm_views(preload())
    state = SynapseState(shell)
    # Magics() joins shell.configurables (for %config) and takes `c.SynapseMagics.*` from the shell's config.
    magics = SynapseMagics(shell, state)
    shell.register_magics(magics)
    setattr(shell, STATE_ATTR, state)
    state.settings = magics.settings
    state.apps.start_turn = functools.partial(view_turn, turn_parts(state))  # a View's message starts a turn here
    state.kernel.watch()  # from now on, so `kernel__recent_cells` sees the cells before the first question
    _transformers(shell, add=True)
    announce_shutdowns(shell)  # a restart leaves the MCP tasks a cell waits on running (synapse_nb/departure.py)
    _tape_from_env(state)
    return state


def _tape_from_env(state: SynapseState) -> None:
    """SYNAPSE_RECORD / SYNAPSE_REPLAY turn record or replay on at load, saying so in one line (a bad
    value is reported in one line too, and loading goes on without it)."""
    import os

    if not (os.environ.get("SYNAPSE_RECORD", "").strip() or os.environ.get("SYNAPSE_REPLAY", "").strip()):
        return
    from IPython.core.error import UsageError

    from .recording.tape import from_env

    try:
        said = from_env(state.deck)
    except UsageError as exc:
        print(f"synapse_nb: {exc}")
        return
    if said:
        print(f"synapse_nb: {said}")


def _transformers(shell: Any, *, add: bool) -> None:
    """Register (or remove) the input transformers of awaited cells (notebook/kernel/awaited.py), once each."""
    from .kernel.awaited import AwaitMagicCalls, InputTransformer

    for where, kind in (("input_transformers_cleanup", InputTransformer), ("input_transformers_post", AwaitMagicCalls)):
        transforms = getattr(shell, where, None)
        if isinstance(transforms, list):  # an IPython shell
            transforms[:] = [t for t in transforms if not isinstance(t, kind)]
            if add:
                transforms.append(kind(shell))


def unload(shell: Any) -> None:
    """Cancel background runs, close MCP servers, providers and the history store; drop the magics."""
    state = get_state(shell)
    if state is None:
        return
    _transformers(shell, add=False)
    from .kernel.port import stop_announcing

    stop_announcing(shell)
    state.close()
    state.kernel.unwatch()
    magics = next((m for m in shell.configurables if isinstance(getattr(m, "state", None), SynapseState)
                   and m.state is state), None)
    if magics is not None:
        registry = shell.magics_manager.magics
        for kind in ("line", "cell"):
            for name in ("synapse", "synapse_sql", "mcp"):
                if registry[kind].get(name) is not None and getattr(registry[kind][name], "__self__", None) is magics:
                    del registry[kind][name]
        if magics in shell.configurables:
            shell.configurables.remove(magics)
    delattr(shell, STATE_ATTR)
