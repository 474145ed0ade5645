"""The widgets read their facade (widgets/facade.py) through its protocols and nothing else (issue 37, 2).

mypy checks what a widget reads of a protocol-typed value; what it cannot see is a probe (`getattr(state,
"x", None)`), which turns a feature off without a type error when the member is renamed. So: no widget
probes its facade, and every member a widget names on it is one the protocols list. The fakes the widget
tests drive implement the protocols whole, and fail a test when a widget reads anything else of them.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from synapse_nb.notebook import widgets
from synapse_nb.notebook.widgets import facade
from tests.notebook.widgets.widget_fakes import FakeHub, FakeRunner, FakeState

WIDGETS = Path(widgets.__file__).parent
PARTS: dict[str, type[Any]] = {
    "hub": facade.HubLike, "runner": facade.RunnerLike, "answers": facade.AnswersLike,
    "sign_in": facade.SignInLike, "apps": facade.AppsLike, "kernel": facade.KernelToolsLike,
    "registry": facade.RegistryLike,
}


def members(protocol: type[Any]) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")}


def _chain(node: ast.expr) -> list[str] | None:
    """`self.state.hub.logs` -> ["state", "hub", "logs"] (rooted at a facade: `state` or `self.state`), else None."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    names.append(node.id)
    names.reverse()
    if names[:2] == ["self", "state"]:
        names = names[1:]
    return names if names[0] == "state" else None


def reaches_past(source: str) -> list[str]:
    """What `source` (a widget module) reads of its facade beyond the protocols, one line each."""
    found: list[str] = []
    state_members = members(facade.StateLike)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
            chain = _chain(node.args[0]) if node.args else None
            if chain is not None:
                found.append(f"line {node.lineno}: {node.func.id}({'.'.join(chain)}, ...) probes the facade")
        elif isinstance(node, ast.Attribute):
            chain = _chain(node)
            if chain is None or len(chain) < 2:
                continue
            if chain[1] not in state_members:
                found.append(f"line {node.lineno}: state.{chain[1]} is not in StateLike")
            elif len(chain) > 2 and chain[1] in PARTS and chain[2] not in members(PARTS[chain[1]]):
                found.append(f"line {node.lineno}: state.{chain[1]}.{chain[2]} is not in {PARTS[chain[1]].__name__}")
    return found


@pytest.mark.parametrize("module", sorted(p.name for p in WIDGETS.glob("*.py")))
def test_a_widget_reads_only_what_its_facade_lists(module: str) -> None:
    assert reaches_past((WIDGETS / module).read_text(encoding="utf-8")) == []


def test_the_check_catches_a_probe_and_an_unlisted_member() -> None:
    source = (
        "def f(state):\n"
        "    listen = getattr(state, 'new_thing', None)\n"
        "    class P:\n"
        "        def g(self):\n"
        "            return self.state.answers.pending, self.state.magics, self.state.hub.servers\n"
    )
    assert reaches_past(source) == [
        "line 2: getattr(state, ...) probes the facade",
        "line 5: state.answers.pending is not in AnswersLike",
        "line 5: state.magics is not in StateLike",
    ]


def test_every_facade_the_widget_tests_build_has_every_member() -> None:
    from tests.notebook.widgets import test_widgets_mcp_features

    for fake in (FakeState, test_widgets_mcp_features.State):
        have = {name for name in dir(fake)} | {f.name for f in dataclasses.fields(fake)}
        assert members(facade.StateLike) <= have, fake
    assert members(facade.StateLike) == {f.name for f in dataclasses.fields(facade.WidgetParts)}


def test_the_fake_facade_is_the_protocol_whole_and_refuses_the_rest() -> None:
    state = FakeState(FakeHub(), FakeRunner())
    try:
        assert all(hasattr(state, name) for name in members(facade.StateLike))
        assert all(hasattr(state.hub, name) for name in members(facade.HubLike))
        with pytest.raises(AssertionError, match="'new_thing'"):
            getattr(state, "new_thing", None)  # a probe does not get a quiet None
    finally:
        state.runner.close()
