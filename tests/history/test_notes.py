"""A kernel whose history file a newer synapse_nb took over says so once in a turn's footer and in %synapse status."""

from __future__ import annotations

from pathlib import Path

from synapse_nb import events as ev
from synapse_nb.history.catalog import known_version
from synapse_nb.history.store import HistoryStore
from synapse_nb.notebook.commands.ask import _history_problem
from synapse_nb.notebook.commands.session import status
from synapse_nb.notebook.state import Settings, SynapseState
from tests.history.history_events import raw


def test_a_paused_history_is_said_once_and_shown_in_status(db_path: Path, newer: Path) -> None:
    HistoryStore.open(db_path, strict=True, migrations=newer).close()  # SYNAPSE_DB now has a newer schema
    state = SynapseState()
    try:
        assert _history_problem(state) is None  # the store opens in the background: nothing known yet
        state.record(ev.ServerEvent(server="demo", event="connected"))
        assert state.store.wait_open(timeout=30)

        note = _history_problem(state)
        assert note is not None
        assert f"schema version {known_version() + 1}, newer than the {known_version()} this synapse_nb knows" in note
        assert "upgrade synapse_nb" in note
        assert _history_problem(state) is None  # once
        shown = repr(status(state, Settings()))
        assert "not recorded" not in shown
        assert f"schema version {known_version() + 1}" in shown
        assert "| **history** |" in status(state, Settings())._repr_markdown_()
    finally:
        state.close()
    with HistoryStore.open(db_path, strict=True, migrations=newer) as new:  # and the event is not lost
        new.flush()
    assert raw(db_path, "SELECT server, event FROM server_events") == [("demo", "connected")]


def test_a_usable_history_says_nothing(db_path: Path) -> None:
    state = SynapseState()
    try:
        state.record(ev.ServerEvent(server="demo", event="connected"))
        assert state.store.wait_open(timeout=30)
        assert _history_problem(state) is None
        assert "—" not in repr(status(state, Settings())).split("history", 1)[1]
    finally:
        state.close()
