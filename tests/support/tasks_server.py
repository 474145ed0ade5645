"""A FastMCP server whose tools run as MCP tasks (the `io.modelcontextprotocol/tasks` extension of the
2026-07-28 revision), served by fastmcp-tasks, the extension's server-side implementation on PyPI.

Runs in the tool venv under .tools/taskservers (the Makefile installs it), never in the test's own venv:

    python tasks_server.py stdio
    python tasks_server.py http PORT

Tools: `sleep_sum` (may run as a task), `slow` (only as a task), `ask_name` and `ask_model` (only as tasks;
they ask the client a form question / a sampling request half way, so the task goes `input_required`), `echo`
(never a task).
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

mcp = FastMCP("synapse-tasks-test")
mcp.add_extension(TasksExtension())

POLL = timedelta(milliseconds=300)  # the interval the tasks ask to be polled at (the default, 5 s, slows tests)


@mcp.tool(task=TaskConfig(mode="optional", poll_interval=POLL))
async def sleep_sum(a: int, b: int, seconds: float = 0.0) -> str:
    """Add two numbers after waiting `seconds`; may run as a task."""
    await asyncio.sleep(seconds)
    return f"sum={a + b}"


@mcp.tool(task=TaskConfig(mode="required", poll_interval=POLL))
async def slow(seconds: float, label: str = "slow") -> str:
    """Wait `seconds`, then answer; runs only as a task."""
    await asyncio.sleep(seconds)
    return f"{label} done after {seconds:g} s"


@mcp.tool(task=TaskConfig(mode="required", poll_interval=POLL))
async def ask_name(ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Ask the client for a name (a form), then greet it; runs only as a task.

    A task asks by returning its question (fastmcp-tasks' guard pattern: the task goes `input_required`) and is
    run again with the answer once the client sends it with `tasks/update`."""
    answers = ctx.input_responses
    if not answers or "name" not in answers:
        return mcp_types.InputRequiredResult(input_requests={"name": mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(message="What is your name?", requested_schema={
                "type": "object", "properties": {"name": {"type": "string", "title": "Name"}},
                "required": ["name"]}))})
    answer = answers["name"]
    if not isinstance(answer, mcp_types.ElicitResult) or answer.action != "accept" or not answer.content:
        return f"no name ({getattr(answer, 'action', '?')})"
    return f"Hello, {answer.content['name']}!"


@mcp.tool(task=TaskConfig(mode="required", poll_interval=POLL))
async def ask_model(ctx: Context, topic: str) -> str | mcp_types.InputRequiredResult:
    """Ask the client's model for a haiku on `topic` (a sampling request), then quote it; runs only as a task."""
    answers = ctx.input_responses
    if not answers or "haiku" not in answers:
        return mcp_types.InputRequiredResult(input_requests={"haiku": mcp_types.CreateMessageRequest(
            params=mcp_types.CreateMessageRequestParams(max_tokens=40, messages=[mcp_types.SamplingMessage(
                role="user", content=mcp_types.TextContent(type="text", text=f"A haiku about {topic}, please.")
            )]))})
    answer = answers["haiku"]
    if not isinstance(answer, mcp_types.CreateMessageResult) or not isinstance(answer.content, mcp_types.TextContent):
        return f"no haiku ({type(answer).__name__})"
    return f"the model says: {answer.content.text}"


@mcp.tool
def echo(text: str) -> str:
    """Say `text` back; never a task."""
    return f"echo: {text}"


def main() -> None:
    if sys.argv[1:2] == ["http"]:
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False)
    else:
        mcp.run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main()
