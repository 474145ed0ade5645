"""MCP tasks of the 2025-11-25 revision against server-everything (TypeScript SDK v1): its task-only tool
`simulate-research-query` is called as a task, polled, answered, cancelled, detached from and followed again."""

from __future__ import annotations

import asyncio

import pytest

from synapse_nb.errors import TaskDetachedError, TaskError, TaskLostError
from synapse_nb.mcp_client.elicitation import ElicitationAnswer, ElicitationForm, UrlElicitation
from synapse_nb.mcp_client.handlers import ClientHandlers
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.mcp_client.task_watch import TaskWatch
from synapse_nb.task_state import TaskState
from tests.support.task_servers import RESEARCH, TaskEvents, connect_everything

pytestmark = pytest.mark.anyio
TIMEOUT = 30


async def _connect(hub: McpHub, **how: object) -> None:
    await connect_everything(hub, TIMEOUT, **how)


async def test_a_task_only_tool_runs_as_a_task_its_status_seen_and_recorded(everything: dict[str, object]) -> None:
    events = TaskEvents()
    seen: list[TaskState] = []
    async with McpHub(on_event=events) as hub:
        await _connect(hub, **everything)
        assert hub.serves_tasks("everything")
        assert RESEARCH in {t.name for t in hub.tools}  # offered to the model now that it can run
        watch = TaskWatch(seen.append, session_id="s-1", cell="In[3]", tool_call_id="call-1")
        result = await asyncio.wait_for(hub.call(RESEARCH, {"topic": "tides"}, task=watch), TIMEOUT)

    assert "# Research Report: tides" in result.text
    assert not result.is_error
    assert result.duration_ms >= 4000  # the task's life (four 1 s stages on the server), not its last poll's
    assert seen[0].status == "working"
    assert seen[-1].status == "completed"
    assert any("Analyzing content" in (s.status_message or "") for s in seen)
    assert {s.form for s in seen} == {"2025-11-25"}
    task_id = seen[0].task_id
    (created,) = events.created
    assert (created.task.task_id, created.task.server, created.task.tool) == (task_id, "everything",
                                                                           "simulate-research-query")
    assert (created.session_id, created.cell, created.tool_call_id) == ("s-1", "In[3]", "call-1")
    assert created.arguments == {"topic": "tides"}
    assert events.statuses(task_id)[-1] == "completed"
    assert seen[-1].duration_ms is not None
    assert seen[-1].duration_ms > 0


async def test_a_timeout_shorter_than_the_poll_interval_bounds_each_answer_not_the_wait_between_polls(
        everything: dict[str, object]) -> None:
    """server-everything asks to be polled every second; a 0.5 s timeout still lets its 4 s task finish."""
    seen: list[TaskState] = []
    async with McpHub() as hub:
        await _connect(hub, **everything)
        result = await asyncio.wait_for(
            hub.call(RESEARCH, {"topic": "kelp"}, timeout=0.5, task=TaskWatch(seen.append)), TIMEOUT)
    assert "# Research Report: kelp" in result.text
    assert seen[0].poll_interval_ms == 1000


async def test_input_required_is_answered_from_the_form_handler(everything: dict[str, object]) -> None:
    forms: list[ElicitationForm] = []

    async def elicit(request: ElicitationForm | UrlElicitation) -> ElicitationAnswer:
        assert isinstance(request, ElicitationForm)
        forms.append(request)
        return request.answer({"interpretation": "historical"})

    seen: list[TaskState] = []
    async with McpHub(handlers=ClientHandlers(elicit=elicit)) as hub:
        await _connect(hub, **everything)
        result = await asyncio.wait_for(
            hub.call(RESEARCH, {"topic": "tides", "ambiguous": True}, task=TaskWatch(seen.append)), TIMEOUT)

    assert len(forms) == 1
    assert "multiple interpretations" in forms[0].message
    assert "tides (historical)" in result.text
    asking = [s for s in seen if s.status == "input_required"]
    assert asking
    assert "clarification" in (asking[0].question or "")


async def test_an_interrupt_cancels_the_task_on_the_server(everything: dict[str, object]) -> None:
    running = asyncio.Event()
    watch = TaskWatch(lambda s: running.set())
    async with McpHub() as hub:
        await _connect(hub, **everything)
        call = asyncio.ensure_future(hub.call(RESEARCH, {"topic": "tides"}, task=watch))
        await asyncio.wait_for(running.wait(), TIMEOUT)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert watch.task_id is not None
        # cancelled on the server by the time the interrupted call returned (tasks/cancel goes out while it unwinds)
        state = await hub.task_state("everything", watch.task_id)
        assert state.status == "cancelled"
        assert (await hub.call("everything__echo", {"message": "still here"})).text == "Echo: still here"


async def test_cancel_from_the_watch_ends_the_call_with_one_line(everything: dict[str, object]) -> None:
    watch = TaskWatch(lambda s: watch.cancel())
    async with McpHub() as hub:
        await _connect(hub, **everything)
        with pytest.raises(TaskError) as caught:
            await asyncio.wait_for(hub.call(RESEARCH, {"topic": "tides"}, task=watch), TIMEOUT)
    assert caught.value.status == "cancelled"
    assert "\n" not in str(caught.value)
    assert "was cancelled" in str(caught.value)


async def test_detach_leaves_the_task_running_and_it_can_be_followed_later(everything: dict[str, object]) -> None:
    watch = TaskWatch(lambda s: watch.detach())
    async with McpHub() as hub:
        await _connect(hub, **everything)
        with pytest.raises(TaskDetachedError) as caught:
            await asyncio.wait_for(hub.call(RESEARCH, {"topic": "reefs"}, task=watch), TIMEOUT)
        task_id = caught.value.task_id
        assert task_id == watch.task_id
        assert task_id in {t.task_id for t in await hub.list_tasks("everything")}
        result = await asyncio.wait_for(hub.follow_task("everything", task_id, tool="simulate-research-query"),
                                        TIMEOUT)
    assert "# Research Report: reefs" in result.text


async def test_a_task_the_server_does_not_know_ends_in_one_line(everything: dict[str, object]) -> None:
    events = TaskEvents()
    async with McpHub(on_event=events) as hub:
        await _connect(hub, **everything)
        with pytest.raises(TaskLostError) as caught:
            await hub.task_state("everything", "no-such-task")
        with pytest.raises(TaskLostError):  # one followed again (after a restart) is recorded as failed: not again
            await hub.follow_task("everything", "no-such-task", tool="simulate-research-query")
    (lost,) = events.changed
    assert (lost.task.task_id, lost.task.status) == ("no-such-task", "failed")
    assert "no longer knows task no-such-task" in (lost.task.status_message or "")
    message = str(caught.value)
    assert "\n" not in message
    assert "no longer knows task no-such-task" in message


@pytest.mark.node
async def test_a_task_over_streamable_http(everything_url: str) -> None:
    seen: list[TaskState] = []
    async with McpHub() as hub:
        await _connect(hub, url=everything_url)
        result = await asyncio.wait_for(hub.call(RESEARCH, {"topic": "dunes"}, task=TaskWatch(seen.append)), TIMEOUT)
    assert "# Research Report: dunes" in result.text
    assert seen[-1].status == "completed"
