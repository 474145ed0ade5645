"""MCP tasks of the `io.modelcontextprotocol/tasks` extension (2026-07-28) against FastMCP + fastmcp-tasks, the
extension's server side on PyPI (tests/support/tasks_server.py, run from the tool venv the Makefile makes):
tasks required and optional, a question answered from a form, an interrupt, a lost task, two tasks and a plain
call side by side, and a task that outlives the client that started it (streamable HTTP)."""

from __future__ import annotations

import asyncio

import pytest

from synapse_nb.errors import TaskDetachedError, TaskLostError
from synapse_nb.mcp_client.elicitation import ElicitationAnswer, ElicitationForm, UrlElicitation
from synapse_nb.mcp_client.handlers import ClientHandlers
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.mcp_client.sampling import SamplingReply, SamplingRequest
from synapse_nb.mcp_client.task_watch import TaskWatch
from synapse_nb.task_state import TaskState
from tests.support.task_servers import TaskEvents, tasks_stdio

pytestmark = [pytest.mark.anyio, pytest.mark.process]
TIMEOUT = 30


async def test_tasks_required_and_optional_and_a_plain_call_side_by_side() -> None:
    events = TaskEvents()
    one: list[TaskState] = []
    two: list[TaskState] = []
    async with McpHub(on_event=events) as hub:
        await hub.connect("fm", **tasks_stdio())  # type: ignore[arg-type]
        assert hub.server("fm").protocol_version == "2026-07-28"
        assert hub.serves_tasks("fm")
        slow, summed, echoed = await asyncio.wait_for(asyncio.gather(
            hub.call("fm__slow", {"seconds": 1.0, "label": "first"}, task=TaskWatch(one.append)),
            hub.call("fm__sleep_sum", {"a": 2, "b": 3, "seconds": 1.0}, task=TaskWatch(two.append)),
            hub.call("fm__echo", {"text": "meanwhile"}),
        ), TIMEOUT)

    assert slow.text == "first done after 1 s"
    assert slow.duration_ms >= 1000  # the task's life (it sleeps 1 s on the server), not its last poll's
    assert summed.text == "sum=5"
    assert echoed.text == "echo: meanwhile"
    assert {s.form for s in one + two} == {"2026-07-28"}
    assert one[0].status == "working"
    assert one[-1].status == "completed"
    assert two[-1].status == "completed"
    assert one[0].poll_interval_ms == 300
    # side by side: both tasks existed before either finished
    created = {e.task.task_id: i for i, e in enumerate(events.created)}
    assert set(created) == {one[0].task_id, two[0].task_id}
    assert events.changed[0].task.status == "completed"  # the first change recorded came after both creations
    assert len(events.created) == 2


async def test_input_required_is_answered_from_the_form_handler_once() -> None:
    forms: list[ElicitationForm] = []

    async def elicit(request: ElicitationForm | UrlElicitation) -> ElicitationAnswer:
        assert isinstance(request, ElicitationForm)
        forms.append(request)
        return request.answer({"name": "Ada"})

    seen: list[TaskState] = []
    async with McpHub(handlers=ClientHandlers(elicit=elicit)) as hub:
        await hub.connect("fm", **tasks_stdio())  # type: ignore[arg-type]
        result = await asyncio.wait_for(hub.call("fm__ask_name", {}, task=TaskWatch(seen.append)), TIMEOUT)

    assert result.text == "Hello, Ada!"
    assert len(forms) == 1
    assert forms[0].message == "What is your name?"
    asking = [s for s in seen if s.status == "input_required"]
    assert asking
    assert asking[0].question == "What is your name?"
    assert seen[-1].status == "completed"


async def test_a_sampling_question_is_answered_by_the_model_under_the_approval_policy() -> None:
    asked: list[SamplingRequest] = []
    approvals: list[str] = []

    async def sample(request: SamplingRequest) -> SamplingReply:
        asked.append(request)
        return SamplingReply(text="tides come and go", model="scripted:test")

    async def approve(request: SamplingRequest) -> bool:
        approvals.append(request.server)
        return True

    async with McpHub(handlers=ClientHandlers(sample=sample, approve_sampling=approve)) as hub:
        await hub.connect("fm", **tasks_stdio())  # type: ignore[arg-type]
        result = await asyncio.wait_for(hub.call("fm__ask_model", {"topic": "tides"}), TIMEOUT)
    assert result.text == "the model says: tides come and go"
    assert approvals == ["fm"]
    (request,) = asked
    assert "A haiku about tides" in request.messages[-1].content


async def test_an_interrupt_cancels_the_task_on_the_server_and_a_lost_task_is_one_line() -> None:
    running = asyncio.Event()
    watch = TaskWatch(lambda s: running.set())
    async with McpHub() as hub:
        await hub.connect("fm", **tasks_stdio())  # type: ignore[arg-type]
        call = asyncio.ensure_future(hub.call("fm__slow", {"seconds": 60}, task=watch))
        await asyncio.wait_for(running.wait(), TIMEOUT)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert watch.task_id is not None
        state = await hub.task_state("fm", watch.task_id)
        assert state.status == "cancelled"

        with pytest.raises(TaskLostError) as caught:
            await hub.task_state("fm", "no-such-task")
    assert "\n" not in str(caught.value)
    assert "no longer knows task no-such-task" in str(caught.value)


async def test_a_task_outlives_the_client_that_started_it(tasks_url: str) -> None:
    """Over streamable HTTP the server outlives the client: a second client (a restarted kernel) finds the task
    by its id and gets its result."""
    watch = TaskWatch(lambda s: watch.detach())
    async with McpHub() as first:
        await first.connect("fm", url=tasks_url)
        with pytest.raises(TaskDetachedError) as caught:
            await asyncio.wait_for(first.call("fm__slow", {"seconds": 2, "label": "kept"}, task=watch), TIMEOUT)
    task_id = caught.value.task_id

    seen: list[TaskState] = []
    async with McpHub() as second:
        await second.connect("fm", url=tasks_url)
        result = await asyncio.wait_for(
            second.follow_task("fm", task_id, tool="slow", task=TaskWatch(seen.append)), TIMEOUT)
    assert result.text == "kept done after 2 s"
    assert seen[-1].status == "completed"
    assert seen[-1].duration_ms is not None
    assert result.duration_ms == seen[-1].duration_ms
