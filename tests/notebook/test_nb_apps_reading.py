"""MCP Apps Views as a user reads them, in the kernel without a browser (issue 36, items 3, 7 and 8): the tool's own
time recorded for a UI tool's call and "opening the interactive view" said while the View opens; the result block
under a View closed and nested values in its table summarised; `%mcp call` of a UI tool filling in its schema's
defaults; the approval line under a View gone once answered; the turn's footer and the history naming the View that
gave the model context. The apps server runs in process (fixtures of test_nb_apps.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from synapse_nb.notebook.output.calls import call_bundle
from synapse_nb.types import ContentBlock, ToolResult
from tests.notebook.test_nb_apps import ANSWER_TIMEOUT, ask, destructive_server, from_view

OPEN_BLOCK = '<details class="snb-turn-tool" open>'


def test_a_ui_tools_call_records_the_tools_own_time_and_says_it_opens_the_view(apps: Any) -> None:
    out = apps.line("mcp", "call apps.counter start=3")
    [recorded] = apps.line("synapse", "sql SELECT duration_ms FROM tool_calls").duration_ms
    # what the hub measured around the request: not the wait before it (the first output-schema validation's
    # import) nor the View's opening after it
    assert recorded == pytest.approx(out.result.duration_ms, rel=1e-9)
    said = [b.get("text/plain", "") for b, _id, _update in apps.published.items]
    assert any(t.startswith("opening the interactive view of apps.counter … ") for t in said), said


def test_under_a_view_the_calls_result_block_stays_closed(apps: Any) -> None:
    out = apps.line("mcp", "call apps.counter start=3")
    assert out.view is apps.state.apps.last.view
    html = out._repr_mimebundle_()["text/html"]
    assert OPEN_BLOCK not in html
    assert "counter starts at 3" in html  # still there, one click away
    # with no View, the same block is the result, open
    assert OPEN_BLOCK in str(call_bundle(out.name, out.arguments, out.result)["text/html"])


def test_nested_values_in_a_results_table_are_summarised() -> None:
    rows = [{"name": f"scenario {i}", "assumptions": {f"k{j}": j for j in range(20)}, "months": list(range(36))}
            for i in range(3)]
    result = ToolResult(content=(ContentBlock("text", text=json.dumps(rows)),), duration_ms=7.0)
    html = str(call_bundle("fin.model", {}, result)["text/html"])
    table = html[html.index("<table"):html.index("</table>")]
    assert "{20 keys: k0, k1, k2, …}" in table
    assert "[36 items]" in table
    assert '"k19"' not in table  # the whole value is in the raw toggle and .text, not in the cell
    assert "scenario 2" in table


def test_mcp_call_of_a_ui_tool_fills_in_its_schemas_defaults(apps: Any) -> None:
    apps.line("mcp", "call apps.counter")
    view = apps.state.apps.last.view
    assert view.tool_input == {"start": 0}  # the schema's default, as the inspector's form shows it
    [arguments] = apps.line("synapse", "sql SELECT arguments FROM tool_calls").arguments
    assert json.loads(arguments) == {"start": 0}
    apps.line("mcp", "call apps.counter start=4")
    assert apps.state.apps.last.view.tool_input == {"start": 4}  # a value given stays


def test_the_approval_line_under_a_view_goes_once_answered(apps: Any) -> None:
    apps.state.runner.run(apps.state.hub.connect_in_process("danger", destructive_server()), timeout=60)
    apps.line("mcp", "call danger.show")
    opened = apps.state.apps.last
    companion = opened.companion
    from_view(opened.view, {"type": "request", "view": "V", "id": 401, "method": "tools/call",
                            "params": {"name": "erase", "arguments": {}}})

    async def approve_when_asked() -> tuple[bool, bool]:
        import asyncio

        async with asyncio.timeout(ANSWER_TIMEOUT):
            while companion.controls is None or not companion.controls.pending:  # noqa: ASYNC110
                await asyncio.sleep(0.01)  # the controls are a widget: no event to wait on
            asked = companion.controls in companion.children
            companion.controls.approve_button.click()
            while not any((m["data"].get("content") or {}).get("id") == 401  # noqa: ASYNC110
                          and (m["data"].get("content") or {}).get("type") == "response"  # not only received
                          for m in opened.view.comm.sent):
                await asyncio.sleep(0.01)  # the comm is a list: no event to wait on
            return asked, companion.controls in companion.children

    shown_while_asking, shown_after = apps.state.runner.run(approve_when_asked(), timeout=ANSWER_TIMEOUT + 5)
    assert shown_while_asking
    assert not shown_after
    assert companion.children == (opened.view, companion.out)


def test_the_turn_names_the_view_that_gave_the_model_context_and_the_history_keeps_it(apps: Any, script: Any) -> None:
    apps.line("mcp", "call apps.counter start=5")
    view = apps.state.apps.last.view
    context = {"content": [{"type": "text", "text": "the counter shows 5"}]}
    assert ask(apps, view, "ui/update-model-context", context)["result"] == {}
    model = script(["Five."])
    apps.cell(f"synapse --model {model}", "what does it say?")
    footer = apps.published.final[-1]["text/plain"]
    assert "the view apps.counter (ui://fixture/counter.html) gave the model context: the counter shows 5" in footer
    given = apps.line("synapse", "sql SELECT server, detail FROM server_events WHERE event = 'app_context'")
    [(server, detail)] = list(zip(given.server, given.detail, strict=True))
    assert server == "apps"
    recorded = json.loads(detail)
    assert (recorded["view"], recorded["tool"], recorded["text"]) == (
        "ui://fixture/counter.html", "counter", "the counter shows 5")
    assert recorded["session_id"] == apps.ns["_synapse"].session_id
    system = apps.line("synapse", "sql SELECT content FROM messages WHERE role = 'system'").content
    assert any("MCP App apps.counter (ui://fixture/counter.html)" in c and "the counter shows 5" in c for c in system)
