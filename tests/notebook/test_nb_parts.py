"""The small parts SynapseState holds (secrets, record/replay deck, sessions) work alone, without the state."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from synapse_nb.masking import SecretMask
from synapse_nb.notebook.recording.tape import TapeDeck, record, stop
from synapse_nb.notebook.secrets import SecretRegistry
from synapse_nb.notebook.sessions import Sessions
from synapse_nb.providers.scripted import ScriptedProvider

SECRET = "correct-horse-battery"
LATER = "purple-monkey-dishwasher"


def test_a_secret_reaches_every_mask_subscribed_then_and_none_after_it_left() -> None:
    secrets = SecretRegistry()
    secrets.add(SECRET)
    early, late = SecretMask(), SecretMask()
    secrets.subscribe(early.add_secret)  # given the known ones too
    leave = secrets.subscribe(late.add_secret, known=False)
    assert SECRET not in early.mask(f"key {SECRET}")
    assert SECRET in late.mask(f"key {SECRET}")  # not given the known ones
    secrets.add(LATER)
    secrets.add(LATER)  # known: ignored
    secrets.add("")
    assert secrets.values == (SECRET, LATER)
    assert LATER not in late.mask(f"key {LATER}")
    leave()
    secrets.add("quiet-river-lantern")
    assert "quiet-river-lantern" in late.mask("key quiet-river-lantern")
    assert "quiet-river-lantern" not in early.mask("key quiet-river-lantern")


def test_the_deck_masks_what_the_kernel_learns_while_recording_and_lets_go_when_stopped(tmp_path: Path) -> None:
    secrets = SecretRegistry()
    secrets.add(SECRET)
    deck = TapeDeck(secrets)
    assert "recording model exchanges" in record(deck, str(tmp_path / "run.jsonl"))
    tape = deck.tape
    assert tape is not None
    secrets.add(LATER)
    assert SECRET not in tape.mask.mask(SECRET)
    assert LATER not in tape.mask.mask(LATER)
    assert stop(deck).startswith("stopped recording")
    assert deck.tape is None
    secrets.add("amber-window-parsnip")
    assert "amber-window-parsnip" in tape.mask.mask("amber-window-parsnip")


def test_sessions_create_agents_on_first_use_and_name_new_ones() -> None:
    from synapse_nb.agent.approval import ApprovalPolicy
    from synapse_nb.agent.tools import ToolRegistry

    registry, policy = ToolRegistry(), ApprovalPolicy()
    sessions = Sessions(registry=lambda: registry, policy=lambda: policy, history=lambda: None,
                        notebook=lambda: "analysis.ipynb", current="analysis-3")
    assert len(sessions) == 0
    agent = sessions.agent("analysis-3", ScriptedProvider(["hi"]))
    assert sessions.agent("analysis-3", ScriptedProvider(["other"])) is agent
    assert dict(sessions) == {"analysis-3": agent}
    assert (agent.tools, agent.defaults.approval, agent.notebook) == (registry, policy, "analysis.ipynb")
    assert sessions.new_name() == "analysis-2"
    assert sessions.own_name("analysis") == "analysis"  # no kernel id: nothing to qualify with
    assert sessions.all_done()


@pytest.mark.parametrize(
    "module",
    ["recording/tape", "recording/router", "sessions", "secrets", "settings", "usage", "recording/tracing", "models"],
)
def test_the_parts_do_not_import_the_state(module: str) -> None:
    """A part of the state imports nothing of notebook/state.py, not even lazily: no import circle through it."""
    import synapse_nb.notebook as package

    source = Path(package.__file__).parent / f"{module}.py"
    imported: list[str] = []
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            imported.append("." * node.level + (node.module or ""))
            imported += ["." * node.level + alias.name for alias in node.names if not node.module]
        elif isinstance(node, ast.Import):
            imported += [alias.name for alias in node.names]
    assert imported, "no imports found: the check reads the wrong file"
    state = "." * (module.count("/") + 1) + "state"  # notebook/state.py as a relative import from this module
    assert not [name for name in imported if name in (state, "synapse_nb.notebook.state")]
