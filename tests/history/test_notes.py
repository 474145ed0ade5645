"""A kernel whose history file a newer synapse_nb took over says so once in a turn's footer and in %synapse status."""

from __future__ import annotations

from pathlib import Path

from synapse_nb import events as ev
from synapse_nb.history.catalog import known_version
from synapse_nb.history.store import HistoryStore
from synapse_nb.notebook.commands.session import Status, status
from synapse_nb.notebook.state import Settings, SynapseState
from tests.history.history_events import raw


def shown_status(state: SynapseState) -> Status:
    """`%synapse status` of this state's parts (as the magics call it)."""
    return status(
        Settings(), models=state.models, sessions=state.sessions, hub=state.hub if state.has_hub else None,
        store=state.store if state.has_store else None, registry=state.registry, deck=state.deck,
        tracer=state.tracer, router=state.router,
    )


def test_a_paused_history_is_said_once_and_shown_in_status(db_path: Path, newer: Path) -> None:
    HistoryStore.open(db_path, strict=True, migrations=newer).close()  # SYNAPSE_DB now has a newer schema
    state = SynapseState()
    try:
        assert state.notice.take() is None  # the store opens in the background: nothing known yet
        state.router.record(ev.ServerEvent(server="demo", event="connected"))
        assert state.store.wait_open(timeout=30)

        note = state.notice.take()
        assert note is not None
        assert f"schema version {known_version() + 1}, newer than the {known_version()} this synapse_nb knows" in note
        assert "upgrade synapse_nb" in note
        assert state.notice.take() is None  # once
        shown = repr(shown_status(state))
        assert "not recorded" not in shown
        assert f"schema version {known_version() + 1}" in shown
        assert "| **history** |" in shown_status(state)._repr_markdown_()
    finally:
        state.close()
    with HistoryStore.open(db_path, strict=True, migrations=newer) as new:  # and the event is not lost
        new.flush()
    assert raw(db_path, "SELECT server, event FROM server_events") == [("demo", "connected")]


def test_a_usable_history_says_nothing(db_path: Path) -> None:
    state = SynapseState()
    try:
        state.router.record(ev.ServerEvent(server="demo", event="connected"))
        assert state.store.wait_open(timeout=30)
        assert state.notice.take() is None
        assert "—" not in repr(shown_status(state)).split("history", 1)[1]
    finally:
        state.close()
