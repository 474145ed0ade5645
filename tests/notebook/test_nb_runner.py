"""The sync->async bridge: results, timeouts, interrupts that cancel cleanly, background tasks, re-entrancy."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from synapse_nb.notebook.kernel.port import KernelPort
from synapse_nb.notebook.kernel.runner import Runner


def test_run_returns_the_result_and_raises_what_the_coroutine_raises() -> None:
    runner = Runner()

    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    async def fail() -> None:
        raise ValueError("nope")

    assert runner.run(answer()) == 42
    with pytest.raises(ValueError, match="nope"):
        runner.run(fail())


def test_timeout_cancels_the_coroutine() -> None:
    runner = Runner()
    cleaned: list[str] = []

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        finally:
            cleaned.append("yes")

    with pytest.raises(TimeoutError):
        runner.run(slow(), timeout=0.05)
    assert cleaned == ["yes"]


def test_sigint_cancels_the_task_waits_for_its_cleanup_then_raises() -> None:
    runner = Runner()
    seen: list[str] = []

    async def turn() -> None:
        try:
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            await asyncio.sleep(0.01)  # cleanup may still await (MCP cancellations, recording)
            seen.append("cleaned up")
            raise

    with pytest.raises(KeyboardInterrupt):
        runner.run(turn())
    assert seen == ["cancelled", "cleaned up"]
    assert runner.interrupted
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert runner.run(asyncio.sleep(0, result="next cell works")) == "next cell works"
    assert not runner.interrupted


def test_interrupt_during_a_question_cancels_the_turn() -> None:
    runner = Runner()
    port = KernelPort(None, runner)
    seen: list[str] = []

    def ask(_question: str) -> str:
        raise KeyboardInterrupt  # what an interrupted input() raises

    port.input = ask

    async def turn() -> None:
        try:
            await port.ask("allow? ")
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    with pytest.raises(KeyboardInterrupt):
        runner.run(turn())
    assert seen == ["cancelled"]
    assert runner.interrupted


def test_spawned_tasks_are_tracked_cancelled_and_their_failures_logged(caplog: pytest.LogCaptureFixture) -> None:
    runner = Runner()
    started = asyncio.Event()

    async def forever() -> None:
        started.set()
        await asyncio.sleep(30)

    async def broken() -> None:
        raise RuntimeError("background bug")

    task = runner.spawn(forever(), name="forever")
    failing = runner.spawn(broken(), name="broken")
    with caplog.at_level(logging.ERROR, logger="synapse_nb.notebook"):
        runner.run(asyncio.wait_for(started.wait(), 5))
        runner.run(asyncio.wait({failing}, timeout=5))
    assert "background task broken failed" in caplog.text
    assert task in runner.tasks
    assert failing not in runner.tasks
    runner.cancel_all()
    assert task.cancelled()
    assert not runner.tasks


@pytest.mark.process
def test_run_is_reentrant_inside_a_running_loop() -> None:
    """In a kernel the loop already runs while a cell executes: nest_asyncio2 is applied then, and only then;
    its patch is process-wide (asyncio.Task becomes the pure-Python Task), as the runner's docstring says."""
    code = textwrap.dedent(
        """
        import asyncio, sys
        import _asyncio  # after asyncio, as in any real process
        from synapse_nb.notebook.kernel.runner import Runner

        async def kernel():
            runner = Runner()
            before = ("nest_asyncio2" in sys.modules, asyncio.Task is _asyncio.Task)
            async def work():
                await asyncio.sleep(0.01)
                return "inner"
            # a magic is synchronous code called from the running loop
            value = runner.run(work())
            bg = runner.spawn(work())
            after = ("nest_asyncio2" in sys.modules, asyncio.Task is _asyncio.Task, "nest_asyncio" in sys.modules)
            return value, await bg, runner.loop is asyncio.get_running_loop(), before, after

        print(asyncio.run(kernel()))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "('inner', 'inner', True, (False, True), (True, False, False))"


@pytest.mark.process
def test_an_awaited_run_needs_no_patch() -> None:
    """The awaited path (a whole-cell magic) runs the command as a task of the running loop: nothing nests."""
    code = textwrap.dedent(
        """
        import asyncio, sys
        import _asyncio  # after asyncio, as in any real process
        from synapse_nb.notebook.kernel.runner import Runner

        async def cell():
            runner = Runner()
            async def work():
                await asyncio.sleep(0.01)
                return "awaited"
            value = await runner.run_awaited(work())
            try:
                asyncio.run(work())
            except RuntimeError:
                refused = True
            else:
                refused = False
            return value, "nest_asyncio2" in sys.modules, asyncio.Task is _asyncio.Task, refused

        print(asyncio.run(cell()))
        """
    )
    out = subprocess.run([sys.executable, "-W", "ignore::RuntimeWarning", "-c", code], capture_output=True,
                         text=True, timeout=60, check=True)
    assert out.stdout.strip() == "('awaited', False, True, True)"


def test_sigint_cancels_an_awaited_run_at_once_under_the_kernels_handler() -> None:
    """ipykernel's own SIGINT handler for awaited cells cancels only when the loop next wakes up; while a
    command runs, the runner's handler takes over, cancels the task thread-safely (at once, even in a long
    sleep), lets its cleanup finish, raises KeyboardInterrupt, and puts the kernel's handler back."""
    runner = Runner()
    seen: list[str] = []
    kernel_calls: list[int] = []

    def kernel_handler(signum: int, frame: object) -> None:
        kernel_calls.append(signum)

    async def command() -> None:
        try:
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            await asyncio.sleep(0.01)  # cleanup may still await (MCP cancellations, recording)
            seen.append("cleaned up")
            raise

    async def cell() -> str:
        with pytest.raises(KeyboardInterrupt):
            async with asyncio.timeout(10):  # bounded: a cancel that waited for the sleep fails here
                await runner.run_awaited(command())
        assert signal.getsignal(signal.SIGINT) is kernel_handler
        return await runner.run_awaited(asyncio.sleep(0, result="next cell works"))

    previous = signal.signal(signal.SIGINT, kernel_handler)
    try:
        assert asyncio.run(cell()) == "next cell works"
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == ["cancelled", "cleaned up"]
    assert kernel_calls == []
    assert not runner.interrupted


@pytest.mark.process
def test_a_nested_run_defers_tasks_of_the_running_cells_context() -> None:
    """ipykernel starts each shell message's task in one shared Context; one arriving while a cell blocks
    in a nested run must wait for the cell (stepping it inside would fail: the Context is entered)."""
    code = textwrap.dedent(
        """
        import asyncio, contextvars
        from synapse_nb.notebook.kernel.runner import Runner

        order, errors = [], []
        shared = contextvars.copy_context()

        async def next_message():
            order.append("next message handled")

        async def cell(runner):
            # a message arrives while this cell runs: ipykernel creates its task in the shared Context
            queued = asyncio.get_running_loop().create_task(next_message(), context=shared)
            async def work():
                await asyncio.sleep(0.01)
                order.append("cell work done")
            runner.run(work())   # the magic blocks in a nested run
            order.append("cell returns")
            await queued

        async def kernel():
            loop = asyncio.get_running_loop()
            loop.set_exception_handler(lambda loop, context: errors.append(context["message"]))
            await loop.create_task(cell(Runner()), context=shared)

        asyncio.run(kernel())
        print(order, errors)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "['cell work done', 'cell returns', 'next message handled'] []"


def test_a_sigint_set_to_be_ignored_is_left_alone() -> None:
    """Someone's choice (SIG_IGN): a command neither takes SIGINT over nor changes the setting."""
    runner = Runner()

    async def command() -> str:
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGINT)  # ignored: the command runs on
        await asyncio.sleep(0)
        return "ran"

    async def cell() -> str:
        return await runner.run_awaited(command())

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert runner.run(command()) == "ran"
        assert asyncio.run(cell()) == "ran"
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert not runner.interrupted
