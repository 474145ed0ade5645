"""The notebook tests' shell wrapper (`Shell`, what the `ip` fixture gives), its captured outputs and the demo
server's command: importable by test modules, which cannot import a conftest reliably."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from IPython.core.interactiveshell import InteractiveShell

from synapse_nb.notebook.state import SynapseState
from tests.support import tools_server


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

    def unanswered_box(self, answer: str) -> tuple[threading.Event, threading.Event]:
        """Make the kernel's input box one the user leaves open: (`boxed`, set once it is asked; `release`,
        which makes it return `answer`). Set `release` when the test is over, so the reader thread ends."""
        boxed, release = threading.Event(), threading.Event()

        def box(prompt: str) -> str:
            self.prompts.append(prompt)
            boxed.set()
            release.wait(60)
            return answer

        self.state.port.input = box
        return boxed, release

    def input(self, prompt: str) -> str:
        """Stands in for the kernel's stdin: answers queued in `answers`."""
        self.prompts.append(prompt)
        if not self.answers:
            raise EOFError
        return self.answers.pop(0)


def demo_server_command() -> str:
    """The `-- COMMAND` part that starts the demo server with the test tools (tests/support/tools_server.py)."""
    return tools_server.COMMAND


def answers_of(state: Any) -> Any:
    """The NotebookAnswers a kernel's hub gets, built from the state's parts (as SynapseState.hub does)."""
    from synapse_nb.notebook.questions.answers import NotebookAnswers

    return NotebookAnswers(state.port, state.runner, state.router, state.models)
