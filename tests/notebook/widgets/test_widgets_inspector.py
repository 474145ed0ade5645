"""The MCP inspector against a fake hub: servers, actions, tools, forms, calls, results and past calls."""

from __future__ import annotations

import base64
import datetime as dt
import re
import struct
import zlib

import ipywidgets as w
import pytest

from synapse_nb.errors import McpError, ToolCallTimeout, UnknownServerError
from synapse_nb.notebook.widgets import Inspector, inspector
from synapse_nb.notebook.widgets.server_panel import ServerPanel
from synapse_nb.notebook.widgets.tool_panel import ToolPanel
from synapse_nb.skill_entry import SkillEntry, SkillFile
from synapse_nb.types import ContentBlock, ToolResult
from tests.notebook.widgets.widget_fakes import (
    ECHO_SCHEMA,
    FakeHistory,
    FakeHub,
    FakeRunner,
    FakeState,
    Info,
    spec,
    text_result,
)
from tests.support.untrusted import unstyled


def panel(ins: Inspector, name: str = "demo") -> ServerPanel:
    return ins.panels[name]


def choose(ins: Inspector, tool: str, server: str = "demo") -> ToolPanel:
    p = panel(ins, server)
    p.tool_list.value = f"{server}__{tool}"
    (detail,) = p.tool_detail.children
    assert isinstance(detail, ToolPanel)
    return detail


def tiny_png(width: int = 4, height: int = 2) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


# --- servers ------------------------------------------------------------------------------------------


def test_servers_are_tabs_with_state_transport_pid_and_tool_count(state: FakeState, runner: FakeRunner) -> None:
    ins = inspector(state)
    assert ins.body.children == (ins.tabs,)
    assert ins.tabs.titles == ("● demo", "✖ web · crashed")
    demo, web = panel(ins, "demo"), panel(ins, "web")
    assert "snb-state-connected" in demo.card.value
    assert "snb-b-green" in demo.card.value
    assert "pid <b>4242</b>" in demo.card.value
    assert "<b>3</b> tools" in demo.card.value
    assert "transport <b>stdio</b>" in demo.card.value
    assert "snb-state-crashed" in web.card.value
    assert "snb-b-red" in web.card.value
    assert "last error: connection reset" in web.card.value
    assert "http://127.0.0.1:9/mcp" in web.card.value
    assert demo.tabs.titles == ("Tools (3)", "Resources", "Prompts", "Skills")
    assert "1 server" not in ins.summary.value
    assert "2 servers · 4 tools" in ins.summary.value


def test_a_servers_skills_tab_lists_its_skills_never_their_content(state: FakeState, hub: FakeHub) -> None:
    hub.skill_entries["demo"] = [SkillEntry(
        server="demo", uri="skill://shop-revenue/SKILL.md",
        frontmatter={"name": "shop-revenue", "description": "Revenue <the finance way>"},
        resources=(SkillFile("skill://shop-revenue/SKILL.md", "sha256:" + "a" * 64, 900),
                   SkillFile("skill://shop-revenue/references/margin.md", "sha256:" + "b" * 64, 300)))]
    hub.skill_entries["web"] = hub.skill_entries["demo"]  # a crashed server's skills are not shown
    ins = inspector(state)
    demo, web = panel(ins, "demo"), panel(ins, "web")
    assert demo.tabs.titles == ("Tools (3)", "Resources", "Prompts", "Skills (1)")
    assert "<b>demo/shop-revenue</b>" in demo.skills.value
    assert "Revenue &lt;the finance way&gt;" in demo.skills.value
    assert "2 (1,200 bytes)" in demo.skills.value
    assert "skills__load" in demo.skills.value
    assert "offers no skills" in web.skills.value
    hub.skill_entries["demo"] = []
    ins.refresh()
    assert demo.tabs.titles[3] == "Skills"
    assert "offers no skills" in demo.skills.value


def test_stderr_is_collapsed_under_a_title_with_its_length(state: FakeState) -> None:
    demo = panel(inspector(state))
    assert demo.stderr.selected_index is None
    assert demo.stderr.titles == ("stderr (2 lines)",)
    assert "starting demo\nready" in demo.stderr_view.value


def test_one_server_is_shown_alone_and_an_unknown_one_is_refused(state: FakeState) -> None:
    ins = inspector(state, "web")
    assert list(ins.panels) == ["web"]
    assert ins.body.children == (ins.panels["web"],)
    with pytest.raises(UnknownServerError, match=r"no MCP server named 'nope'.*connected: demo, web"):
        inspector(state, "nope")


def test_no_servers_says_how_to_connect_one(runner: FakeRunner) -> None:
    ins = inspector(FakeState(FakeHub(), runner))
    (message,) = ins.body.children
    assert "%mcp connect NAME -- COMMAND" in message.value


def test_resources_and_prompts_are_listed_in_the_background(state: FakeState, runner: FakeRunner) -> None:
    state.hub.resources["web"] = McpError("web does not list resources", server="web")
    ins = inspector(state)
    demo = panel(ins)
    assert "loading" in demo.resources.value  # nothing ran yet: building the widget never waits on the hub
    runner.drain()
    assert "demo://tables/orders" in demo.resources.value
    assert "text/csv" in demo.resources.value
    assert "summarize" in demo.prompts.value
    assert 'class="snb-req"' in demo.prompts.value
    # web has crashed: listing it would restart it, so opening the inspector must not list it
    web = panel(ins, "web")
    assert "web is crashed: its resources are listed once it runs again" in web.resources.value
    assert "%mcp restart web" in web.prompts.value
    web.restart_button.click()
    runner.drain()
    assert "No resources: web does not list resources" in web.resources.value  # listed once running
    assert "no prompts" in web.prompts.value


def test_restart_runs_in_the_background_and_refreshes_the_card(state: FakeState, runner: FakeRunner) -> None:
    ins = inspector(state)
    web = panel(ins, "web")
    web.restart_button.click()
    assert state.hub.actions == []  # spawned, not run: the click returned at once
    assert web.restart_button.disabled
    assert "restart" in web.action_status.value
    runner.drain()
    assert state.hub.actions == [("restart", "web")]
    assert "snb-state-connected" in web.card.value
    assert "pid <b>1</b>" in web.card.value
    assert "restarted" in web.action_status.value
    assert not web.restart_button.disabled
    assert ins.tabs.titles == ("● demo", "● web")


def test_disconnect_marks_the_server_stopped(state: FakeState, runner: FakeRunner) -> None:
    ins = inspector(state)
    demo = panel(ins)
    demo.disconnect_button.click()
    runner.drain()
    assert state.hub.actions == [("disconnect", "demo")]
    assert "snb-state-stopped" in demo.card.value
    assert demo.disconnect_button.disabled
    assert "disconnected" in demo.action_status.value


def test_a_failed_action_is_shown_on_the_panel(runner: FakeRunner) -> None:
    hub = FakeHub(servers=[Info("broken", state="down")])
    ins = inspector(FakeState(hub, runner))
    broken = panel(ins, "broken")
    broken.restart_button.click()
    runner.drain()
    assert "restart failed: broken crashed again while starting" in broken.action_status.value
    assert "snb-err" in broken.action_status.value


def test_a_server_gone_from_the_hub_stays_visible_as_stopped(state: FakeState) -> None:
    ins = inspector(state)
    state.hub.servers = [s for s in state.hub.servers if s.name != "web"]
    ins.refresh_button.click()
    assert "snb-state-stopped" in panel(ins, "web").card.value
    assert "no longer in the hub" in panel(ins, "web").card.value


# --- tools ----------------------------------------------------------------------------------------------


def test_tools_list_with_badges_description_and_a_form(state: FakeState) -> None:
    ins = inspector(state)
    demo = panel(ins)
    assert demo.tool_list.options == (("echo", "demo__echo"), ("sleep", "demo__sleep"), ("wipe ⚠", "demo__wipe"))
    echo = demo.tool_detail.children[0]  # the first tool is shown at once
    assert echo.spec.name == "demo__echo"
    assert "read-only" in echo.header.value
    assert "idempotent" in echo.header.value
    assert "destructive" not in echo.header.value
    wipe = choose(ins, "wipe")
    assert "destructive" in wipe.header.value
    assert "open-world" in wipe.header.value
    assert wipe.call_button.button_style == "danger"
    assert "The wipe tool." in wipe.description.value
    assert list(wipe.form.inputs) == []


def test_switching_tools_keeps_what_was_typed(state: FakeState) -> None:
    ins = inspector(state)
    echo = choose(ins, "echo")
    echo.form.inputs[("text",)].value = "draft"
    choose(ins, "sleep")
    assert choose(ins, "echo") is echo
    assert echo.form.inputs[("text",)].value == "draft"


def test_call_runs_in_the_background_and_shows_the_text_result(state: FakeState, runner: FakeRunner) -> None:
    state.hub.results["demo__echo"] = text_result("hello <b>world</b>", ms=12.5)
    echo = choose(inspector(state), "echo")
    echo.form.inputs[("text",)].value = "hello"
    echo.call_button.click()
    assert echo.call_button.disabled
    assert "calling echo" in echo.result.children[0].value
    assert state.hub.calls == []  # not yet: the kernel is free until the loop runs the task
    runner.drain()
    assert state.hub.calls == [("demo__echo", {"text": "hello"})]
    (html,) = echo.result.children
    assert "hello &lt;b&gt;world&lt;/b&gt;" in html.value  # escaped, shown as text
    assert "snb-b-green" in html.value
    assert "12 ms" in html.value
    assert not echo.call_button.disabled


def test_invalid_input_is_flagged_and_not_sent(state: FakeState, runner: FakeRunner) -> None:
    ins = inspector(state)
    echo = choose(ins, "echo")
    echo.call_button.click()
    runner.drain()
    assert state.hub.calls == []
    assert runner.tasks[-1].get_coro().__name__ != "_call"  # no call task was even spawned
    assert echo.form.error_labels[("text",)].value == "⚠ required"
    assert "nothing was sent" in echo.call_status.value
    assert echo.result.children == ()
    sleep = choose(ins, "sleep")
    sleep.form.inputs[("seconds",)].value = "99"
    sleep.call_button.click()
    runner.drain()
    assert state.hub.calls == []
    assert sleep.form.error_labels[("seconds",)].value == "⚠ must be ≤ 60"


def test_structured_content_is_pretty_json_and_errors_are_red(state: FakeState, runner: FakeRunner) -> None:
    state.hub.results["demo__sleep"] = ToolResult(
        content=(ContentBlock("text", text='{"slept": 1}'),), structured_content={"slept": 1}, duration_ms=1000.0
    )
    state.hub.results["demo__echo"] = text_result("echo refused", is_error=True)
    ins = inspector(state)
    sleep = choose(ins, "sleep")
    sleep.call_button.click()
    runner.drain()
    assert state.hub.calls == [("demo__sleep", {})]  # the default is the server's to apply
    html = sleep.result.children[0].value
    assert "&quot;slept&quot;: 1" in html
    assert "<details" in html
    assert " open>" in html
    assert "1.00 s" in html
    echo = choose(ins, "echo")
    echo.form.inputs[("text",)].value = "x"
    echo.call_button.click()
    runner.drain()
    html = echo.result.children[0].value
    assert "snb-b-red" in html
    assert "snb-pre snb-err" in html
    assert "echo refused" in html


def test_images_are_rendered_from_base64(state: FakeState, runner: FakeRunner) -> None:
    png = tiny_png()
    state.hub.results["demo__wipe"] = ToolResult(
        content=(ContentBlock("image", data=base64.b64encode(png).decode(), mime_type="image/png"),
                 ContentBlock("image", data="%%%not base64", mime_type="image/png")),
    )
    wipe = choose(inspector(state), "wipe")
    wipe.call_button.click()
    runner.drain()
    images = [c for c in wipe.result.children if isinstance(c, w.Image)]
    assert len(images) == 1
    assert images[0].value == png
    assert images[0].format == "png"
    assert images[0].layout.width == "128px"  # a 4 px image is enlarged to be seen
    text = " ".join(c.value for c in wipe.result.children if isinstance(c, w.HTML))
    assert "image/png · 4 x 2 px" in text
    assert "not valid base64" in text
    assert "(empty result)" not in text


def test_hub_errors_are_shown_not_raised(state: FakeState, runner: FakeRunner) -> None:
    state.hub.results["demo__echo"] = ToolCallTimeout("demo__echo did not answer within 2 s", server="demo", timeout=2)
    echo = choose(inspector(state), "echo")
    echo.form.inputs[("text",)].value = "x"
    echo.call_button.click()
    runner.drain()
    html = echo.result.children[0].value
    assert "failed" in html
    assert "did not answer within 2 s" in html
    assert "snb-err" in html
    assert not echo.call_button.disabled


def test_a_call_refreshes_the_server_state(state: FakeState, runner: FakeRunner) -> None:
    ins = inspector(state)
    echo = choose(ins, "echo")
    echo.form.inputs[("text",)].value = "x"
    state.hub.servers = [Info("demo", state="crashed", pid=None, tool_count=3), state.hub.servers[1]]
    echo.call_button.click()
    runner.drain()
    assert "snb-state-crashed" in panel(ins).card.value


# --- past calls ------------------------------------------------------------------------------------------


def history_rows(n: int) -> list[dict[str, object]]:
    t0 = dt.datetime(2025, 1, 2, 3, 4, 5)
    return [
        {"started_at": t0 + dt.timedelta(seconds=i), "duration_ms": 10.0 * (i + 1), "is_error": i == 1,
         "error": None, "arguments": f'{{"text": "call {i}"}}', "result_text": "ok", "approval": "auto",
         "session_id": "s"}
        for i in range(n)
    ]


def test_past_calls_of_the_tool_come_from_the_history_with_a_latency_chart(
    hub: FakeHub, runner: FakeRunner
) -> None:
    history = FakeHistory(history_rows(3))
    echo = choose(inspector(FakeState(hub, runner, history)), "echo")
    (query,) = [q for q in history.queries if "'demo'" in q]
    assert "FROM tool_calls WHERE server = 'demo' AND tool IN ('echo', 'demo__echo')" in query
    assert "ORDER BY started_at DESC LIMIT 20" in query
    view = echo.history.view.value
    assert "last 3 calls · mean 20 ms · 1 error" in view
    assert view.count("<rect") == 3
    assert "#cf222e" in view
    assert "2025-01-02 03:04:05" in view
    assert "call 0" in view


def test_past_calls_count_only_real_errors_and_show_cancels_and_refusals_neutral(
    hub: FakeHub, runner: FakeRunner
) -> None:
    """The user's own cancels and refused calls are not errors: not red, not in the error count."""
    rows = history_rows(3)
    rows[0].update(is_error=True, error="cancelled")  # as recorded before migration 0008
    rows[1].update(is_error=False, error=None)
    rows[2].update(is_error=False, approval="denied", result_text="denied by user")
    echo = choose(inspector(FakeState(hub, runner, FakeHistory(rows))), "echo")
    view = echo.history.view.value
    assert "last 3 calls · mean 20 ms · 0 errors" in view
    assert "#cf222e" not in view
    assert "snb-err" not in view
    assert '<span class="snb-muted">cancelled</span>' in view
    assert '<span class="snb-muted">denied</span>' in view
    assert [label.split(" · ")[1] for label, _ in echo.history.picker.options] == ["cancelled", "ok", "denied"]


def test_one_past_call_is_the_last_call_not_the_last_1_calls(hub: FakeHub, runner: FakeRunner) -> None:
    echo = choose(inspector(FakeState(hub, runner, FakeHistory(history_rows(1)))), "echo")
    assert "last call · mean 10 ms · 0 errors" in echo.history.view.value


def test_names_with_quotes_are_quoted_in_the_history_query(runner: FakeRunner) -> None:
    history = FakeHistory()
    hub = FakeHub(servers=[Info("o'hare", tool_count=1)], tools=[spec("it's", ECHO_SCHEMA, server="o'hare")])
    inspector(FakeState(hub, runner, history))
    (query,) = history.queries
    assert "server = 'o''hare' AND tool IN ('it''s', 'o''hare__it''s')" in query


def test_without_a_history_the_inspector_still_works(state: FakeState, runner: FakeRunner) -> None:
    state.history_obj = None
    echo = choose(inspector(state), "echo")
    assert "No history file is open" in echo.history.view.value
    echo.form.inputs[("text",)].value = "x"
    echo.call_button.click()
    runner.drain()
    assert state.hub.calls == [("demo__echo", {"text": "x"})]


def test_a_broken_history_is_reported_in_place(state: FakeState, caplog: pytest.LogCaptureFixture) -> None:
    class Broken(FakeHistory):
        def sql(self, query: str) -> object:
            raise RuntimeError("Catalog Error: Table tool_calls does not exist")

    state.history_obj = Broken()
    echo = choose(inspector(state), "echo")
    assert "Past calls cannot be read: Catalog Error" in echo.history.view.value
    assert "reading the call history" in caplog.text


# --- server state, live ---------------------------------------------------------------------------------


def test_the_inspector_never_opens_on_a_failed_servers_tab(hub: FakeHub, runner: FakeRunner) -> None:
    hub.servers = [Info("broken", state="failed", pid=None, last_error="exit 1"), *hub.servers]
    ins = inspector(FakeState(hub, runner))
    assert ins.tabs.titles[0] == "✖ broken · failed"
    assert ins.tabs.selected_index == 1  # demo, the running one
    card = panel(ins, "broken").card.value
    assert '<b class="snb-err">failed</b> — <code>%mcp restart broken</code> to retry' in card
    assert "the next call reconnects" in panel(ins, "web").card.value  # crashed (HTTP: reconnected, not restarted)
    assert "snb-retry" not in panel(ins, "demo").card.value


def test_open_panels_follow_server_events(state: FakeState, runner: FakeRunner) -> None:
    ins = inspector(state)
    web = panel(ins, "web")
    assert "snb-state-crashed" in web.card.value
    assert "web is crashed" in web.resources.value
    state.server_event("web", "restarted", state="connected", pid=77, last_error=None)  # a call restarted it
    assert "snb-state-connected" in web.card.value
    assert "pid <b>77</b>" in web.card.value
    assert ins.tabs.titles == ("● demo", "● web")
    runner.drain()
    assert "This server offers no resources." in web.resources.value  # listed now that it runs
    ins.close()
    assert state.listeners == []  # a closed inspector stops listening


def test_the_snapshot_shows_servers_tools_and_recent_calls(state: FakeState) -> None:
    state.history_obj = FakeHistory([
        {"server": "demo", "tool": "echo", "started_at": dt.datetime(2026, 1, 2, 3, 4, 5), "duration_ms": 12.3,
         "is_error": False, "error": None, "approval": "manual"},
        {"server": "demo", "tool": "sleep", "started_at": dt.datetime(2026, 1, 2, 3, 4, 1), "duration_ms": 2000.0,
         "is_error": True, "error": "cancelled", "approval": "auto"},
    ])
    ins = inspector(state)
    bundle = ins._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == ins.model_id
    html, text = bundle["text/html"], bundle["text/plain"]
    assert "Inspector(children" not in text
    assert "snb-state-connected" in html
    assert re.search(r"<code[^>]*>echo</code>", html)  # (the stylesheet's inlined rules may style the tag)
    assert "Recent calls" in html
    assert "2026-01-02 03:04:05" in html
    assert text.splitlines()[:3] == ["MCP inspector", "demo: connected, 3 tools", "  echo: The echo tool."]
    assert "web: crashed, 1 tools" in text
    assert "  2026-01-02 03:04:05 demo.echo 12 ms ok" in text
    assert "  2026-01-02 03:04:01 demo.sleep 2.00 s cancelled" in text


# --- cancel, copy, refill -------------------------------------------------------------------------------


def test_cancel_stops_a_running_call_and_shows_it_neutral(state: FakeState, runner: FakeRunner) -> None:
    import asyncio

    started = asyncio.Event()

    async def slow(qualified: str, arguments: object, timeout: object = None, **_: object) -> ToolResult:
        started.set()
        await asyncio.sleep(3600)
        raise AssertionError("not cancelled")

    state.hub.call = slow  # type: ignore[method-assign]
    sleep = choose(inspector(state), "sleep")
    assert sleep.cancel_button.layout.display == "none"  # only while a call runs
    sleep.form.inputs[("seconds",)].value = "5"
    sleep.call_button.click()
    assert sleep.cancel_button.layout.display is None
    runner.loop.run_until_complete(asyncio.wait_for(started.wait(), 5))
    sleep.cancel_button.click()
    with pytest.raises(asyncio.CancelledError):
        runner.drain()
    (view,) = sleep.result.children
    assert "cancelled" in view.value
    assert "snb-b-grey" in view.value  # neutral, not red
    assert "snb-b-red" not in view.value
    assert sleep.cancel_button.layout.display == "none"
    assert not sleep.call_button.disabled


def test_copy_as_mcp_call_shows_the_exact_line(state: FakeState) -> None:
    echo = choose(inspector(state), "echo")
    echo.copy_button.click()
    assert "Fix the marked fields" in echo.copy_line.value
    echo.form.inputs[("text",)].value = 'say "hi" <now>'
    echo.copy_button.click()
    expected = "%mcp call demo.echo {&quot;text&quot;: &quot;say \\&quot;hi\\&quot; &lt;now&gt;&quot;}"
    assert expected in echo.copy_line.value
    from synapse_nb.notebook.widgets.tool_panel import mcp_call_line

    assert mcp_call_line(echo.spec, {"text": "x", "n": 2}) == '%mcp call demo.echo {"text": "x", "n": 2}'


def test_choosing_a_recent_call_refills_the_form(hub: FakeHub, runner: FakeRunner) -> None:
    echo = choose(inspector(FakeState(hub, runner, FakeHistory(history_rows(3)))), "echo")
    picker = echo.history.picker
    assert picker.layout.display is None
    assert len(picker.options) == 3
    assert picker.options[0][0].startswith("03:04:05 · ok · ")
    assert echo.form.inputs[("text",)].value == ""
    picker.value = 2
    assert echo.form.inputs[("text",)].value == "call 2"
    assert "arguments of a recent call loaded" in echo.call_status.value


def test_the_tool_list_has_a_filter(state: FakeState) -> None:
    demo = panel(inspector(state))
    assert [o[1] for o in demo.tool_list.options] == ["demo__echo", "demo__sleep", "demo__wipe"]
    demo.tool_filter.value = "SLE"
    assert [o[1] for o in demo.tool_list.options] == ["demo__sleep"]
    assert demo.tool_list.value == "demo__sleep"
    demo.tool_filter.value = "nothing like it"
    assert demo.tool_list.options == ()
    assert "No tool matches the filter." in demo.tool_detail.children[0].value
    demo.tool_filter.value = ""
    assert len(demo.tool_list.options) == 3


def test_resources_can_be_read_and_prompts_fetched(state: FakeState, runner: FakeRunner) -> None:
    demo = panel(inspector(state))
    runner.drain()
    resources = demo.resource_browser
    assert resources.choice.options == (("orders", "demo://tables/orders"),)
    resources.button.click()
    runner.drain()
    assert ("read", "demo demo://tables/orders") in state.hub.actions
    assert "contents of demo://tables/orders" in resources.output.value
    assert "[image image/png, 4 base64 characters]" in resources.output.value
    prompts = demo.prompt_browser
    assert prompts.choice.value == "summarize"
    assert list(prompts.arguments) == ["table"]
    prompts.button.click()
    assert "required: table" in prompts.output.value  # nothing fetched without a required argument
    prompts.arguments["table"].value = "orders"
    prompts.button.click()
    runner.drain()
    assert ("prompt", "demo summarize {'table': 'orders'}") in state.hub.actions
    assert "A summary prompt" in prompts.output.value
    assert "<b>user</b>" in prompts.output.value
    assert "Summarize orders" in prompts.output.value


def test_a_tabular_result_is_a_table_with_the_raw_text_behind_a_toggle(state: FakeState, runner: FakeRunner) -> None:
    state.hub.results["demo__echo"] = ToolResult(
        (ContentBlock("text", text="| a | b |\n|---|---|\n| 1 | <x> |"),), duration_ms=3.0,
    )
    echo = choose(inspector(state), "echo")
    echo.form.inputs[("text",)].value = "t"
    echo.call_button.click()
    runner.drain()
    html = echo.result.children[0].value
    assert "<tr><th>a</th><th>b</th></tr><tr><td>1</td><td>&lt;x&gt;</td></tr>" in html
    assert "1 rows · 2 columns" in html
    assert '<summary class="snb-muted">raw</summary>' in html


def test_the_snapshot_is_styled_inline_so_it_reads_well_where_style_blocks_are_stripped(state: FakeState) -> None:
    state.history_obj = FakeHistory([
        {"server": "demo", "tool": "echo", "started_at": dt.datetime(2026, 1, 2, 3, 4, 5), "duration_ms": 12.3,
         "is_error": False, "error": None, "approval": "manual"},
    ])
    html = inspector(state)._repr_mimebundle_()["text/html"]
    assert "<th" in html
    assert "snb-badge" in html
    assert unstyled(html) == []
