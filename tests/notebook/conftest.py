"""Fixtures for the magics: `ip`, an InteractiveShell with the extension loaded in a clean environment.

Outputs the magics publish are captured in `ip.published` (bundle, display id, update) instead of
going to a frontend; the shell counts as a live frontend, so display updates are exercised too.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from synapse_nb.notebook.extension import get_state
from synapse_nb.notebook.state import SynapseState


@dataclass
class Published:
    """Every display the extension published, in order."""

    items: list[tuple[dict[str, Any], str | None, bool]] = field(default_factory=list)

    def __call__(self, bundle: dict[str, Any], display_id: str | None, update: bool) -> None:
        self.items.append((dict(bundle), display_id, update))

    @property
    def final(self) -> list[dict[str, Any]]:
        """The outputs a saved notebook keeps: plain displays, with live outputs at their last state."""
        outputs: list[dict[str, Any]] = []
        where: dict[str, int] = {}
        for bundle, display_id, update in self.items:
            if update and display_id in where:
                outputs[where[display_id]] = bundle
            elif not update:
                if display_id is not None:
                    where[display_id] = len(outputs)
                outputs.append(bundle)
        return [b for b in outputs if b.get("text/plain") != "" or len(b) > 1]

    def text(self) -> str:
        return "\n".join(b.get("text/plain", "") for b in self.final)

    def markdown(self) -> str:
        return "\n".join(b.get("text/markdown", "") for b in self.final)

    def clear(self) -> None:
        self.items.clear()


class Shell:
    """What a test gets as `ip`: the shell, the extension's state and the captured outputs."""

    def __init__(self, shell: InteractiveShell, state: SynapseState, published: Published) -> None:
        self.shell = shell
        self.state = state
        self.published = published
        self.answers: list[str] = []
        self.prompts: list[str] = []

    @property
    def ns(self) -> dict[str, Any]:
        return self.shell.user_ns  # type: ignore[no-any-return]

    def cell(self, line: str, body: str) -> Any:
        """Run a cell magic directly: exceptions (UsageError, ...) propagate to the test."""
        return self.shell.run_cell_magic(line.split()[0], " ".join(line.split()[1:]), body)

    def line(self, name: str, line: str = "") -> Any:
        return self.shell.run_line_magic(name, line)

    def run(self, code: str) -> Any:
        """Run code like a notebook cell; re-raise what it raised."""
        result = self.shell.run_cell(code, store_history=False)
        result.raise_error()
        return result.result

    def input(self, prompt: str) -> str:
        """Stands in for the kernel's stdin: answers queued in `answers`."""
        self.prompts.append(prompt)
        if not self.answers:
            raise EOFError
        return self.answers.pop(0)


@pytest.fixture
def published() -> Published:
    """A publisher that records outputs instead of sending them."""
    return Published()


@pytest.fixture(scope="session")
def _shell(tmp_path_factory: pytest.TempPathFactory) -> InteractiveShell:
    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "nocolor"
    config.InteractiveShell.ipython_dir = str(tmp_path_factory.mktemp("ipython"))
    return InteractiveShell.instance(config=config)


@pytest.fixture
def ip(_shell: InteractiveShell, clean_env: Path) -> Iterator[Shell]:
    """The shell with synapse_nb loaded; unloaded (servers closed, runs cancelled) after the test."""
    before = set(_shell.user_ns)
    assert _shell.extension_manager.load_extension("synapse_nb") is None
    state = get_state(_shell)
    assert state is not None
    published = Published()
    state.publish = published
    state.live = True
    shell = Shell(_shell, state, published)
    state.input = shell.input
    try:
        yield shell
    finally:
        if "synapse_nb" in _shell.extension_manager.loaded:
            _shell.extension_manager.unload_extension("synapse_nb")
        assert get_state(_shell) is None
        _shell.config.pop("SynapseMagics", None)  # %config in one test must not leak into the next
        for name in set(_shell.user_ns) - before:
            del _shell.user_ns[name]


@pytest.fixture
def script(tmp_path: Path) -> Callable[[Any], str]:
    """Write a scripted-model script to a file; returns the model id that plays it."""
    counter = iter(range(1000))

    def write(data: Any) -> str:
        path = tmp_path / f"script{next(counter)}.json"
        path.write_text(json.dumps(data))
        return f"scripted:{path}"

    return write


def demo_server_command() -> str:
    """The `-- COMMAND` part that starts the bundled demo server with this interpreter."""
    return f"{sys.executable} -m synapse_nb.mcp_client.demo_server --test-tools"
