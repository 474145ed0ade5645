"""The kernel port (notebook/kernel/port.py): the one owner of ipykernel's internals, and its one way to ask.

The kernel-side paths (input requests on the stdin socket, the cell's parent) run in a real kernel in
tests/e2e/test_kernel_questions.py; here: the rule that no other module reaches those internals, and
`ask` with a line source of its own (a test's function, or the process's stdin as a pipe).
"""

from __future__ import annotations

import ast
import asyncio
import io
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.error import StdinNotImplementedError

import synapse_nb
from synapse_nb.notebook.kernel.port import KernelPort, NobodyCanAnswer
from synapse_nb.notebook.kernel.runner import Runner

PACKAGE = Path(synapse_nb.__file__).resolve().parent
OWNER = PACKAGE / "notebook" / "kernel" / "port.py"
PRIVATE = {"_shell_parent", "_shell_parent_ident", "_shell_context", "set_parent", "_allow_stdin", "stdin_socket",
           "get_connection_file", "_parent_ident", "_hooks", "pub_socket", "control_handlers"}


def reaches_into_ipykernel(source: str) -> list[str]:
    """Where a module's source names ipykernel's internals: imports of ipykernel, and the private
    attributes above, as attributes (`kernel._shell_parent`) or as strings (`getattr(kernel, "_allow_stdin")`)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] == "ipykernel"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "ipykernel":
            found.append(f"from {node.module} import ...")
        elif isinstance(node, ast.Attribute) and node.attr in PRIVATE:
            found.append(f".{node.attr} (line {node.lineno})")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in PRIVATE:
            found.append(f"{node.value!r} (line {node.lineno})")
    return found


def test_only_the_kernel_port_touches_ipykernels_internals() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): hits
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != OWNER and (hits := reaches_into_ipykernel(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, f"only notebook/kernel/port.py may reach into ipykernel: {offenders}"
    assert reaches_into_ipykernel(OWNER.read_text(encoding="utf-8"))  # the check sees what it looks for


def test_the_check_sees_each_way_of_reaching_in() -> None:
    source = ("import ipykernel.kernelbase\nfrom ipykernel.connect import get_connection_file\n"
              "k._shell_parent\ngetattr(k, '_allow_stdin', False)\nk.stdin_socket\n")
    assert len(reaches_into_ipykernel(source)) == 5
    assert reaches_into_ipykernel("self.session\nkernel.shell\nx = 'parent'\n") == []


@pytest.fixture
def port() -> Iterator[KernelPort]:
    loop = asyncio.new_event_loop()
    yield KernelPort(None, Runner(loop))
    loop.close()


def test_a_question_waits_without_holding_the_loop(port: KernelPort) -> None:
    """While the user has not answered, other tasks on the loop go on: the line source only answers once a
    coroutine it hands to the loop has run there."""
    loop = port.runner.loop
    progressed: list[str] = []

    async def progress() -> None:
        progressed.append("another task ran while the question waited")

    def line(prompt: str) -> str:
        asyncio.run_coroutine_threadsafe(progress(), loop).result(timeout=30)
        return "y"

    port.input = line
    assert port.runner.run(port.ask("go on? ")) == "y"
    assert progressed == ["another task ran while the question waited"]


def test_end_of_input_is_none_and_no_stdin_is_nobody_can_answer(port: KernelPort) -> None:
    def ended(prompt: str) -> str:
        raise EOFError

    def no_stdin(prompt: str) -> str:
        raise StdinNotImplementedError("raw_input was called, but this frontend does not support input requests.")

    port.input = ended
    assert port.runner.run(port.ask("name? ")) is None
    port.input = no_stdin
    with pytest.raises(NobodyCanAnswer, match="does not support input requests"):
        port.runner.run(port.ask("name? "))


def test_in_a_live_frontend_nobody_answers_when_no_cell_waits(port: KernelPort) -> None:
    """A background run's cell is long done: asking would leave an input box nobody expects."""
    port.live = True
    assert not port.can_ask()
    with pytest.raises(NobodyCanAnswer, match="background run"):
        asyncio.run(port.ask("name? "))
    assert port.runner.run(_can_ask(port))  # a cell waits on this command: the frontend is asked


async def _can_ask(port: KernelPort) -> bool:
    return port.can_ask()


def test_a_question_ends_when_the_cell_that_waited_stops_waiting(port: KernelPort) -> None:
    """A server's question runs beside the cell's command (in the SDK's task): once the cell stops waiting
    (interrupted), the question ends with None, and the line source is no longer read."""
    asked, release = threading.Event(), threading.Event()

    def never(prompt: str) -> str:
        asked.set()
        release.wait(60)
        return "too late"

    port.input = never
    loop = port.runner.loop
    question: asyncio.Task[str | None] | None = None

    async def cell() -> None:
        nonlocal question
        question = asyncio.ensure_future(port.ask("name? "))
        await asyncio.to_thread(asked.wait, 30)

    try:
        port.runner.run(cell())  # the cell's command ends while the question is open
        assert question is not None
        assert loop.run_until_complete(asyncio.wait_for(question, 30)) is None
    finally:
        release.set()


def test_until_ends_a_question(port: KernelPort) -> None:
    stop, release = threading.Event(), threading.Event()

    def never(prompt: str) -> str:
        release.wait(60)
        return "too late"

    port.input = never

    async def race() -> str | None:
        asyncio.get_running_loop().call_soon(stop.set)
        return await port.ask("name? ", until=stop.is_set)

    try:
        assert port.runner.run(race()) is None
    finally:
        release.set()


def test_terminal_stdin_is_read_and_the_read_can_stop(port: KernelPort, monkeypatch: pytest.MonkeyPatch) -> None:
    """Terminal IPython and plain Python: the process's stdin, polled so the reader can give up."""
    read_end, write_end = os.pipe()
    stdin = os.fdopen(read_end, "r")
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    try:
        os.write(write_end, b"Ada\n")
        assert port.runner.run(port.ask("name? ")) == "Ada"
        assert sys.stdout.getvalue() == "name? "
        stop = threading.Event()

        async def stopped_later() -> str | None:
            asyncio.get_running_loop().call_soon(stop.set)
            return await port.ask("again? ", until=stop.is_set)

        assert port.runner.run(stopped_later()) is None  # nothing typed: the reader stopped
        os.close(write_end)
        write_end = -1
        assert port.runner.run(port.ask("more? ")) is None  # end of input
    finally:
        if write_end >= 0:
            os.close(write_end)
        stdin.close()


def test_outside_a_kernel_the_cell_is_the_caller(port: KernelPort) -> None:
    assert port.kernel is None
    assert port.parent() is None
    assert port.takes_input()
    assert port.in_cell(lambda: "ran") == "ran"
    shown: list[tuple[object, ...]] = []
    port.publish = lambda bundle, display_id, update: shown.append((bundle, display_id, update))
    port.show({"text/plain": "hi"}, "card", True)
    assert shown == [({"text/plain": "hi"}, "card", True)]
    assert port.notebook_path() is None
    assert port.kernel_id is None
