"""The built-in `kernel` tool group in the inspector: a server "kernel", on or off, whose forms call the real tools."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from synapse_nb.notebook.subcommands import widget_parts
from synapse_nb.notebook.widgets import Inspector, inspector
from synapse_nb.notebook.widgets.inspector import _tab_title
from synapse_nb.notebook.widgets.kernel_group import OFF_HINT, BuiltinInfo
from synapse_nb.notebook.widgets.tool_panel import ToolPanel

TOOLS = ["describe_dataframe", "get_value", "list_variables", "recent_cells", "run_python"]


def choose(ins: Inspector, tool: str) -> ToolPanel:
    server = ins.panels["kernel"]
    server.tool_list.value = f"kernel__{tool}"
    (panel,) = server.tool_detail.children
    assert isinstance(panel, ToolPanel)
    return panel


def settle(ip: Any, panel: ToolPanel) -> None:
    """Run the Call's task to its end on the runner's loop."""
    assert panel.task is not None
    ip.state.runner.run(asyncio.wait_for(asyncio.shield(panel.task), 30))


def test_the_kernel_group_is_a_built_in_server_that_says_how_to_turn_it_on(ip: Any) -> None:
    ins = inspector(widget_parts(ip.state))
    assert list(ins.panels) == ["kernel"]
    server = ins.panels["kernel"]
    assert isinstance(server.info, BuiltinInfo)
    assert not server.info.enabled
    assert sorted(t.original_name for t in server.tools) == TOOLS
    assert all(t.server == "kernel" for t in server.tools)
    card = server.card.value
    assert "snb-state-built-in" in card
    assert "transport <b>in process</b> · <b>5</b> tools" in card
    assert "<b>off</b> for the model" in card
    assert "%%synapse --kernel" in card
    # nothing to restart, disconnect or read stderr of; no MCP resources or prompts to list
    assert server.restart_button.layout.display == "none"
    assert server.disconnect_button.layout.display == "none"
    assert server.stderr.layout.display == "none"
    assert server.resources.value == '<span class="snb-muted">The built-in kernel group offers no resources.</span>'
    # with no MCP server connected, the inspector still says how to connect one
    note, shown = ins.body.children
    assert "No MCP servers are connected" in note.value
    assert shown is server
    assert "1 server · 5 tools" in ins.summary.value
    assert _tab_title(server) == "◆ kernel · built in (off)"

    html, text = ins.snapshot()
    assert f"kernel: built in ({OFF_HINT}), 5 tools" in text
    assert "  run_python: Run Python code in the notebook's namespace, as a cell would; variables it assigns stay." in (
        text
    )
    assert "<code>describe_dataframe</code>" in html
    assert inspector(widget_parts(ip.state), "kernel").panels["kernel"].tools == server.tools
    ins.close()


def test_kernel_tools_turned_on_for_every_cell_show_as_on(ip: Any) -> None:
    ip.run("%config SynapseMagics.kernel_tools = True")
    ins = inspector(widget_parts(ip.state), "kernel")
    server = ins.panels["kernel"]
    assert server.info.enabled
    assert "offered to the model in every" in server.card.value
    assert "kernel: built in, 5 tools" in ins.snapshot()[1]
    assert _tab_title(server) == "◆ kernel · built in"
    assert ins.body.children == (server,)  # asked for this server only: no note about MCP servers
    ins.close()


def test_run_python_from_the_form_runs_in_the_kernel_and_is_recorded_as_a_manual_kernel_call(ip: Any) -> None:
    ip.run("import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's', 'n'], 'units': [3, 5, 2]})")
    ins = inspector(widget_parts(ip.state))
    panel = choose(ins, "run_python")
    assert panel.call_button.button_style == "danger"  # destructive: it changes the user's state
    assert panel.copy_button.layout.display == "none"  # `%mcp call` reaches MCP servers only
    panel.form.inputs[("code",)].value = "by_region = sales.groupby('region').units.sum()\nby_region.to_dict()"
    panel.call_button.click()
    settle(ip, panel)
    html = panel.result.children[0].value
    assert "snb-b-green" in html
    assert "{&#x27;n&#x27;: 5, &#x27;s&#x27;: 5}" in html
    assert ip.ns["by_region"].to_dict() == {"n": 5, "s": 5}  # what it assigned stays, as in a cell

    looked = choose(ins, "get_value")
    looked.form.inputs[("name",)].value = "nowhere"
    looked.call_button.click()
    settle(ip, looked)
    assert "snb-b-red" in looked.result.children[0].value
    assert "there is no variable named &#x27;nowhere&#x27;" in looked.result.children[0].value

    recorded = ip.line("synapse", "sql SELECT server, tool, approval, is_error FROM tool_calls ORDER BY started_at")
    assert recorded.values.tolist() == [
        ["kernel", "run_python", "manual", False], ["kernel", "get_value", "manual", True],
    ]
    assert "kernel.run_python" in ins.snapshot()[1]  # the recent calls of the snapshot include them
    ins.close()


@pytest.mark.process
def test_a_connected_mcp_server_comes_first_and_keeps_the_first_tab(ip: Any) -> None:
    import sys

    ip.line("mcp", f"connect demo -- {sys.executable} -m synapse_nb.mcp_client.demo_server")
    ins = inspector(widget_parts(ip.state))
    assert list(ins.panels) == ["demo", "kernel"]
    assert ins.tabs.selected_index == 0
    assert ins.body.children == (ins.tabs,)
    assert "2 servers" in ins.summary.value
    with pytest.raises(Exception, match="no MCP server named 'nowhere'"):
        inspector(widget_parts(ip.state), "nowhere")
    ins.close()
