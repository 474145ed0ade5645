"""TaskWatch in process: what a caller is told of a task (each change once), an agent's watch reporting the task
as the call's progress, and a wait that a cancel or a detach cuts short."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from synapse_nb.mcp_client.task_watch import TaskWatch, status_text
from synapse_nb.task_state import TaskOrigin, TaskState

pytestmark = pytest.mark.anyio


def _state(status: str, message: str | None = None, question: str | None = None) -> TaskState:
    return TaskState(task_id="t-1", server="fm", tool="ask", form="2026-07-28", status=status,  # type: ignore[arg-type]
                     status_message=message, question=question)


def test_each_change_is_told_once() -> None:
    seen: list[TaskState] = []
    watch = TaskWatch(seen.append)
    assert watch.observe(_state("working", "step 1"))
    assert not watch.observe(_state("working", "step 1"))  # the same again on the next poll
    assert watch.observe(_state("input_required", "waiting", "What is your name?"))
    assert [s.status for s in seen] == ["working", "input_required"]
    assert watch.task_id == "t-1"


def test_an_agents_watch_reports_the_task_as_the_calls_progress() -> None:
    reports: list[tuple[float, float | None, str | None]] = []
    watch = TaskWatch.for_origin(TaskOrigin("s-1", "call-1", "In[3]"), lambda p, t, m: reports.append((p, t, m)))
    watch.observe(_state("working", "Gathering sources..."))
    watch.observe(_state("input_required", "waiting", "What is your name?"))
    assert (watch.session_id, watch.tool_call_id, watch.cell) == ("s-1", "call-1", "In[3]")
    assert reports == [(1, None, "task t-1 · working · Gathering sources..."),
                       (2, None, "task t-1 · input required · waiting · asks: What is your name?")]
    assert status_text(_state("completed")) == "task t-1 · completed"


def test_a_failing_status_callback_does_not_end_the_call() -> None:
    def broken(state: TaskState) -> None:
        raise RuntimeError("display gone")

    assert TaskWatch(broken).observe(_state("working"))


async def test_cancel_and_detach_cut_the_wait_between_polls_short() -> None:
    watch = TaskWatch()
    waiting = asyncio.ensure_future(watch.sleep(60))
    watch.cancel()
    await asyncio.wait_for(waiting, 5)
    assert watch.cancel_requested

    waiting = asyncio.ensure_future(watch.sleep(60))
    watch.detach()
    await asyncio.wait_for(waiting, 5)
    assert watch.detach_requested


async def test_a_pushed_notification_wakes_the_wait_and_a_stale_one_is_dropped() -> None:
    t0 = dt.datetime(2026, 11, 28, 9, 0, 0)
    watch = TaskWatch()
    watch.observe(TaskState(task_id="t-1", server="fm", tool="ask", form="2025-11-25", status="working",
                            updated_at=t0 + dt.timedelta(seconds=2)))
    waiting = asyncio.ensure_future(watch.sleep(60))
    newer = TaskState(task_id="t-1", server="fm", tool="ask", form="2025-11-25", status="completed",
                      updated_at=t0 + dt.timedelta(seconds=3))
    watch.push("the newer look", newer)
    await asyncio.wait_for(waiting, 5)
    assert watch.take_pushed() == "the newer look"
    assert watch.take_pushed() is None  # taken once
    older = TaskState(task_id="t-1", server="fm", tool="ask", form="2025-11-25", status="working",
                      updated_at=t0 + dt.timedelta(seconds=1))
    watch.push("an older look", older)
    assert watch.take_pushed() is None  # out of order: what was seen already is newer
    assert watch.notified == 1
