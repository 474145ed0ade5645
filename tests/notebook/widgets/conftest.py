"""Fixtures of the widget tests: a fake hub with two servers, a runner the test drives, the facade."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.notebook.widgets.widget_fakes import (
    ECHO_SCHEMA,
    SLEEP_SCHEMA,
    FakeHistory,
    FakeHub,
    FakeRunner,
    FakeState,
    Info,
    Prompt,
    PromptArg,
    Resource,
    spec,
)


@pytest.fixture
def runner() -> Iterator[FakeRunner]:
    r = FakeRunner()
    yield r
    r.close()


@pytest.fixture
def hub() -> FakeHub:
    tools = [
        spec("echo", ECHO_SCHEMA, annotations={"readOnlyHint": True, "idempotentHint": True}),
        spec("sleep", SLEEP_SCHEMA, annotations={"readOnlyHint": True}),
        spec("wipe", {"type": "object", "properties": {}}, annotations={"destructiveHint": True,
                                                                       "openWorldHint": True}),
        spec("fetch", {"type": "object", "properties": {"url": {"type": "string"}}}, server="web"),
    ]
    return FakeHub(
        servers=[
            Info("demo", tool_count=3, stderr_tail="starting demo\nready"),
            Info("web", transport="http", state="crashed", pid=None, tool_count=1, last_error="connection reset",
                 command=None, url="http://127.0.0.1:9/mcp"),
        ],
        tools=tools,
        resources={"demo": [Resource("demo://tables/orders", "orders", "The orders table", "text/csv")]},
        prompts={"demo": [Prompt("summarize", "Summarize a table", (PromptArg("table", "which", True),))]},
    )


@pytest.fixture
def history() -> FakeHistory:
    return FakeHistory()


@pytest.fixture
def state(hub: FakeHub, runner: FakeRunner, history: FakeHistory) -> FakeState:
    return FakeState(hub, runner, history)
