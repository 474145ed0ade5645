"""The inspector and the form generator against the real McpHub, the real Runner and the demo server."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from typing import Any

import ipywidgets as w
import pytest

from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.notebook.kernel.runner import Runner
from synapse_nb.notebook.subcommands import widget_parts
from synapse_nb.notebook.widgets import Inspector, inspector
from synapse_nb.notebook.widgets import schema_form as sf
from synapse_nb.notebook.widgets.facade import WidgetParts
from synapse_nb.notebook.widgets.form import ToolForm
from synapse_nb.notebook.widgets.tool_panel import ToolPanel
from tests.notebook.widgets.real_state import connected, private_runner, private_state
from tests.support import tools_server

pytestmark = pytest.mark.process

DEMO = [sys.executable, *tools_server.ARGS]


def State(hub: McpHub, runner: Runner) -> WidgetParts:
    """The facade as the notebook layer builds it, without IPython: a hub, a runner, no history."""

    async def call_tool(spec: Any, arguments: Any, *, on_progress: Any = None, on_recorded: Any = None) -> Any:
        return await hub.call(getattr(spec, "name", spec), arguments, on_progress=on_progress)

    return WidgetParts(hub=hub, runner=runner, history=lambda: None, call_tool=call_tool)


@pytest.fixture(scope="module")
def demo() -> Iterator[WidgetParts]:
    with private_runner() as runner, connected(runner, McpHub(), "demo", command=DEMO[0], args=DEMO[1:]) as hub:
        yield State(hub, runner)


def settle(state: WidgetParts, *tasks: Any) -> None:
    """Run the spawned tasks to their end on the runner's loop (which runs only while the test drives it)."""
    state.runner.run(asyncio.wait_for(asyncio.gather(*tasks), 30))


def choose(ins: Inspector, tool: str) -> ToolPanel:
    ins.panels["demo"].tool_list.value = f"demo__{tool}"
    (panel,) = ins.panels["demo"].tool_detail.children
    assert isinstance(panel, ToolPanel)
    return panel


def test_every_demo_tool_schema_becomes_a_form(demo: WidgetParts) -> None:
    tools = {t.original_name: t for t in demo.hub.tools}
    assert {"list_tables", "describe_table", "query", "summarize_column", "echo", "sleep", "fail", "crash",
            "garbage", "image", "large"} <= set(tools)
    for spec in tools.values():
        form = sf.build_form(spec.input_schema)
        assert form.raw_only is None, spec.name
        assert ToolForm(spec.input_schema).arguments() is not None or any(f.required for f in form.fields)
    kinds = {name: [(f.name, f.kind, f.required) for f in sf.build_form(tools[name].input_schema).fields]
             for name in ("query", "summarize_column", "sleep", "garbage", "list_tables")}
    assert kinds == {
        "query": [("sql", "text", True)],
        "summarize_column": [("table", "string", True), ("column", "string", True)],
        "sleep": [("seconds", "number", True)],
        "garbage": [("lines", "integer", False)],
        "list_tables": [],
    }
    garbage = ToolForm(tools["garbage"].input_schema)
    assert isinstance(garbage.inputs[("lines",)], w.Text)
    assert garbage.inputs[("lines",)].placeholder == "default: 3"  # left empty, the server's default applies
    assert garbage.arguments() == {}
    sleep = ToolForm(tools["sleep"].input_schema)
    assert sleep.inputs[("seconds",)].value == ""  # required: starts empty, is flagged, is never sent as 0
    assert sleep.arguments() is None
    assert sleep.error_labels[("seconds",)].value == "⚠ required"


def test_the_inspector_shows_the_real_server(demo: WidgetParts) -> None:
    ins = inspector(demo, "demo")
    info = demo.hub.server("demo")
    card = ins.panels["demo"].card.value
    assert "snb-state-connected" in card
    assert f"pid <b>{info.pid}</b>" in card
    assert "synapse-demo" in card
    assert len(ins.panels["demo"].tool_list.options) == info.tool_count
    settle(demo, *ins.panels["demo"].tasks)
    assert "demo://schema" in ins.panels["demo"].resources.value
    assert "explore_table" in ins.panels["demo"].prompts.value


def test_calling_describe_table_from_the_form(demo: WidgetParts) -> None:
    panel = choose(inspector(demo), "describe_table")
    panel.form.inputs[("table",)].value = "orders"
    panel.call_button.click()
    settle(demo, panel.task)
    html = panel.result.children[0].value
    assert "snb-b-green" in html
    assert "Table orders: 300 rows" in html
    assert "<th>name</th><th>type</th>" in html  # its columns, as a table ...
    assert "<summary class=\"snb-muted\">raw</summary>" in html  # ... with the text and structured content


def test_invalid_input_never_reaches_the_server(demo: WidgetParts) -> None:
    panel = choose(inspector(demo), "sleep")
    panel.form.mode.value = "JSON"
    panel.form.raw.value = '{"seconds": "soon"}'
    panel.call_button.click()
    assert panel.task is None
    assert panel.form.raw_error.value == "⚠ seconds: expected number, got string"


def test_error_results_and_images_from_the_server(demo: WidgetParts) -> None:
    ins = inspector(demo)
    fail = choose(ins, "fail")
    fail.form.inputs[("message",)].value = "on purpose"
    fail.call_button.click()
    image = choose(ins, "image")
    image.call_button.click()
    settle(demo, fail.task, image.task)
    assert "snb-b-red" in fail.result.children[0].value
    assert "on purpose" in fail.result.children[0].value
    assert any(isinstance(c, w.Image) and bytes(c.value).startswith(b"\x89PNG") for c in image.result.children)


def test_a_crash_is_shown_and_restart_brings_the_server_back(demo: WidgetParts) -> None:
    ins = inspector(demo)
    server = ins.panels["demo"]
    pid = demo.hub.server("demo").pid
    crash = choose(ins, "crash")
    crash.call_button.click()
    settle(demo, crash.task)
    assert "failed" in crash.result.children[0].value
    assert demo.hub.server("demo").state in ("crashed", "down", "connected")
    assert f"snb-state-{demo.hub.server('demo').state}" in server.card.value
    server.restart_button.click()
    settle(demo, *server.tasks)
    assert "restarted" in server.action_status.value
    info = demo.hub.server("demo")
    assert info.state == "connected"
    assert info.pid != pid
    assert f"pid <b>{info.pid}</b>" in server.card.value


def test_a_restart_by_a_call_reaches_an_open_inspector(clean_env: Any) -> None:
    """With the notebook's own facade (SynapseState), the hub's server events reach open panels."""
    from synapse_nb.errors import SynapseError
    with private_state() as state:
        state.runner.run(state.hub.connect("demo", command=DEMO[0], args=DEMO[1:]), timeout=60)
        ins = inspector(widget_parts(state), "demo")
        card = ins.panels["demo"].card
        first = state.hub.server("demo").pid
        assert f"pid <b>{first}</b>" in card.value
        with pytest.raises(SynapseError):
            state.runner.run(state.hub.call("demo__crash", {}), timeout=60)  # not through the inspector
        assert "snb-state-connected" not in card.value  # the panel heard of the crash without a Refresh
        state.runner.run(state.hub.call("demo__echo", {"text": "back"}), timeout=60)  # restarts it
        second = state.hub.server("demo").pid
        assert second != first
        assert f"pid <b>{second}</b>" in card.value
        assert "snb-state-connected" in card.value
        ins.close()


def test_the_inspector_lists_mcp_apps_tools_with_a_ui_badge_app_only_ones_included() -> None:
    """tests/support/apps_server.py: `counter` and `probe` have Views; `bump` is app-only (never offered to the
    model), yet listed here so a person can see and call it."""
    from pathlib import Path

    server = str(Path(tools_server.__file__).resolve().with_name("apps_server.py"))
    with private_runner() as runner, connected(runner, McpHub(), "apps", command=sys.executable,
                                               args=[server]) as hub:
        ins = inspector(State(hub, runner))
        panel = ins.panels["apps"]
        assert sorted(label for label, _ in panel.tool_list.options) == [
            "bump [UI, app only]", "counter [UI]", "frame [UI]", "plain [UI]", "probe [UI]", "summary [UI]"]
        panel.tool_list.value = "apps__bump"
        (detail,) = panel.tool_detail.children
        assert isinstance(detail, ToolPanel)
        assert ">UI, app only</span>" in detail.header.value
        text = ins._repr_mimebundle_()["text/plain"]
        assert "  bump [UI, app only]: Add one to `value` (for the counter View only)" in text
        assert "  counter [UI]: Show a counter View starting at `start`" in text


def test_the_header_counts_a_server_connected_after_the_inspector_opened(clean_env: Any) -> None:
    """The header and the panels follow a server connected later, tools included (its "connected" event comes
    before the hub lists its tools: the header once said `2 servers · 5 tools` beside two servers of 5). The
    kernel's built-in group is a tab of its own and counted with the servers."""
    command = [sys.executable, "-m", "synapse_nb.mcp_client.demo_server"]
    with private_state() as state:
        state.runner.run(state.hub.connect("demo", command=command[0], args=command[1:]), timeout=60)
        ins = Inspector(widget_parts(state))
        kernel_tools = len(ins.panels["kernel"].tools)
        assert f"2 servers · {5 + kernel_tools} tools" in ins.summary.value
        state.runner.run(state.hub.connect("demo2", command=command[0], args=command[1:]), timeout=60)
        want = f"3 servers · {10 + kernel_tools} tools"

        async def counted() -> None:
            done = asyncio.Event()
            ins.summary.observe(lambda change: done.set() if want in change["new"] else None, "value")
            if want not in ins.summary.value:
                await done.wait()

        state.runner.run(asyncio.wait_for(counted(), 30), timeout=35)
        assert want in ins.summary.value
        assert len(ins.panels["demo2"].tools) == 5
        ins.close()
