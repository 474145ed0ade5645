"""Clicks delivered on another thread (JupyterLab's comm subshell) are handled on the kernel's loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from typing import Any

import pytest

from synapse_nb.notebook.widgets import inspector
from synapse_nb.notebook.widgets.tool_panel import ToolPanel
from tests.notebook.widgets.widget_fakes import FakeHistory, FakeHub, FakeState, text_result


class LoopThread:
    """A loop running in its own thread, standing in for the kernel's; `spawn` insists on being called there."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.spawned_on: list[int] = []
        self.spawned = asyncio.Event()  # set on each spawn (used on the loop only)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        self.spawned_on.append(threading.get_ident())
        assert threading.get_ident() == self.thread.ident, "spawn called off the kernel loop's thread"
        self.spawned.set()
        return self.loop.create_task(coro)

    def call(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=10)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def kernel() -> Iterator[LoopThread]:
    k = LoopThread()
    yield k
    k.close()


def test_a_call_clicked_on_another_thread_runs_on_the_kernel_loop(hub: FakeHub, kernel: LoopThread) -> None:
    state = FakeState(hub, kernel, FakeHistory())  # type: ignore[arg-type]
    seen: list[int] = []
    original = hub.call

    async def call(name: str, args: Any, timeout: float | None = None, *, on_progress: Any = None) -> Any:
        seen.append(threading.get_ident())
        return await original(name, args)

    hub.call = call  # type: ignore[method-assign]
    hub.results["demo__echo"] = text_result("from the loop")

    async def build() -> ToolPanel:  # as in a cell: on the kernel's thread
        ins = inspector(state, "demo")
        panel = ins.panels["demo"].tool_detail.children[0]
        assert isinstance(panel, ToolPanel)
        return panel

    panel = kernel.call(build())
    panel.form.inputs[("text",)].value = "x"

    async def forget_spawns() -> None:
        kernel.spawned.clear()

    kernel.call(forget_spawns())
    panel.call_button.click()  # this (test) thread plays the subshell

    async def finished() -> None:
        async with asyncio.timeout(10):
            await kernel.spawned.wait()
            await panel.task

    kernel.call(finished())
    assert seen == [kernel.thread.ident]
    assert set(kernel.spawned_on) == {kernel.thread.ident}
    assert "from the loop" in panel.result.children[0].value
