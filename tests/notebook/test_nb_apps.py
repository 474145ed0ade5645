"""MCP Apps in the kernel, without a browser: a UI tool's View opened by `%mcp call` and by a `%%synapse` turn,
and the View's requests (widget comm messages, as the browser sends them) answered by the kernel's
KernelAppHost against the hub: tool calls with visibility, approval and origin, logs, messages that start
turns, context for the next turn. The apps server runs in process (tests/support/apps_server.py over the
SDK's in-memory transport); its Views' HTML carries a stub instead of the ext-apps View library, as no
browser runs it here.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from tests.support.llm_replies import Gate
from tests.support.llm_server import LlmServer, call, text, tool_calls

ANSWER_TIMEOUT = 30.0
FAKE_KEY = "sk-fake-apps-test-0123456789"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def from_view(widget: Any, content: Mapping[str, Any]) -> None:
    """A custom message from a browser view, handled as the kernel hands it to the widget."""
    widget.comm.handle_msg({"content": {"data": {"method": "custom", "content": dict(content)}}, "buffers": []})


def ask(ip: Any, widget: Any, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Send one request from the view and wait (on the kernel's loop, bounded) for its answer."""
    ask.n = getattr(ask, "n", 0) + 1  # type: ignore[attr-defined]
    request_id: int = ask.n  # type: ignore[attr-defined]
    from_view(widget, {"type": "request", "view": "V", "id": request_id, "method": method, "params": dict(params)})

    async def answered() -> dict[str, Any]:
        async with asyncio.timeout(ANSWER_TIMEOUT):
            while True:
                for m in widget.comm.sent:
                    content = m["data"].get("content") if m["msg_type"] == "comm_msg" else None
                    if isinstance(content, dict) and content.get("type") == "response" and content["id"] == request_id:
                        return content
                await asyncio.sleep(0.01)

    return ip.state.runner.run(answered(), timeout=ANSWER_TIMEOUT + 5)  # type: ignore[no-any-return]


def _kind(bundle: Mapping[str, Any]) -> str:
    """What an output is: a widget's snapshot (shown where the widget has no model), the View, or the turn."""
    if WIDGET_VIEW in bundle:
        return "view"
    return "snapshot" if 'class="snb-snapshot"' in bundle.get("text/html", "") else "turn"


def first_text(answer: Mapping[str, Any]) -> str:
    return str(answer["result"]["content"][0]["text"])


def origins(ip: Any) -> list[tuple[str, str | None]]:
    frame = ip.line("synapse", "sql SELECT tool, origin FROM tool_calls ORDER BY started_at")
    return [(row.tool, row.origin) for row in frame.itertuples()]


def test_mcp_call_shows_the_view_and_its_tool_calls_reach_the_server_recorded_with_their_origin(apps: Any) -> None:
    out = apps.line("mcp", "call apps.counter start=3")
    assert out.text == "counter starts at 3"
    opened = apps.state.apps.last
    view = opened.view
    assert (view.server, view.resource_uri, view.tool_input) == ("apps", "ui://fixture/counter.html", {"start": 3})
    assert view.tool_result["content"][0]["text"] == "counter starts at 3"
    assert "connect-src https://api.example.com" in view.csp_policy
    # shown as its own outputs next to the call's result: the snapshot (the fallback of saved notebooks), the View
    published = [b for b, _id, _update in apps.published.items]
    at = next(i for i, b in enumerate(published) if WIDGET_VIEW in b)
    shown = [published[at - 1]]
    assert 'class="snb-snapshot"' in shown[0]["text/html"]
    assert published[at]["text/plain"] == ""
    assert shown[0]["text/plain"].splitlines() == [
        "counter starts at 3",
        "[apps.counter has an interactive view (ui://fixture/counter.html): it renders in JupyterLab, "
        "Notebook 7 or VS Code with the kernel running; run the cell there to open it]",
    ]
    answer = ask(apps, view, "tools/call", {"name": "bump", "arguments": {"value": 3}})
    assert first_text(answer) == "bumped to 4"
    assert origins(apps) == [("counter", "manual"), ("bump", "app:apps")]


def test_a_view_calls_only_its_servers_app_visible_tools_and_app_only_tools_are_never_offered_to_the_model(
    apps: Any,
) -> None:
    offered = [s.name for s in apps.state.registry.specs()]
    assert "apps__counter" in offered
    assert "apps__summary" in offered
    assert "apps__bump" not in offered
    apps.line("mcp", "call apps.counter")
    view = apps.state.apps.last.view
    model_only = ask(apps, view, "tools/call", {"name": "summary", "arguments": {}})
    assert model_only["result"]["isError"] is True
    assert "not callable from a View" in first_text(model_only)
    unknown = ask(apps, view, "tools/call", {"name": "echo", "arguments": {}})
    assert "server 'apps' has no tool 'echo'" in first_text(unknown)
    assert origins(apps) == [("counter", "manual")]  # nothing ran


def _response(message: Mapping[str, Any], request_id: int) -> bool:
    content = message["data"].get("content") or {}
    return bool(content.get("type") == "response" and content.get("id") == request_id)


def test_a_views_tool_calls_go_through_the_approval_policy(apps: Any) -> None:
    apps.line("mcp", "call apps.counter")
    opened = apps.state.apps.last
    apps.state.policy.set_server("apps", {"bump": "deny"})
    denied = ask(apps, opened.view, "tools/call", {"name": "bump", "arguments": {"value": 1}})
    assert first_text(denied) == "apps__bump is denied by the approval policy"
    apps.state.policy.set_server("apps", {"bump": "ask"})
    from_view(opened.view, {"type": "request", "view": "V", "id": 99, "method": "tools/call",
                            "params": {"name": "bump", "arguments": {"value": 1}}})

    async def approve_when_asked() -> None:
        async with asyncio.timeout(ANSWER_TIMEOUT):
            while opened.companion.controls is None or not opened.companion.controls.pending:  # noqa: ASYNC110
                await asyncio.sleep(0.01)  # the controls are a widget: no event to wait on
        assert opened.companion.controls.pending[0].spec.name == "apps__bump"
        opened.companion.controls.approve_button.click()
        async with asyncio.timeout(ANSWER_TIMEOUT):
            while not any(_response(m, 99) for m in opened.view.comm.sent):  # noqa: ASYNC110
                await asyncio.sleep(0.01)  # the comm is a list: no event to wait on

    apps.state.runner.run(approve_when_asked(), timeout=ANSWER_TIMEOUT + 5)
    [answer] = [m["data"]["content"] for m in opened.view.comm.sent if _response(m, 99)]
    assert first_text(answer) == "bumped to 2"
    assert origins(apps)[-1] == ("bump", "app:apps")


def test_view_logs_go_to_the_servers_log_ring_and_links_and_display_modes_are_recorded(apps: Any) -> None:
    apps.line("mcp", "call apps.counter")
    view = apps.state.apps.last.view
    from_view(view, {"type": "notification", "view": "V", "method": "notifications/message",
                     "params": {"level": "warning", "data": "count is 0"}})
    from_view(view, {"type": "notification", "view": "V", "method": "ui/open-link",
                     "params": {"url": "https://example.com/counter"}})
    # the page grants display modes, and tells the kernel what was asked and granted
    from_view(view, {"type": "notification", "view": "V", "method": "ui/request-display-mode",
                     "params": {"mode": "pip", "granted": "inline"}})
    [entry] = apps.state.hub.logs("apps")
    assert (entry.level, entry.text, entry.logger) == ("warning", "count is 0", "view")
    events = apps.line("synapse", "sql SELECT detail FROM server_events WHERE event = 'app_request' ORDER BY \"at\"")
    details = "\n".join(events.detail.astype(str))
    assert "https://example.com/counter" in details
    assert "ui/request-display-mode" in details
    assert '"mode":"pip","granted":"inline"' in details


@pytest.fixture
def openai_server(apps: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[LlmServer]:
    with LlmServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        yield server


def test_a_ui_message_starts_a_turn_shown_under_the_view_and_the_context_reaches_the_next_turn(
    apps: Any, openai_server: LlmServer,
) -> None:
    apps.line("synapse", "model openai:gpt-test")
    apps.line("mcp", "call apps.counter start=5")
    opened = apps.state.apps.last
    context = {"content": [{"type": "text", "text": "the counter shows 5"}]}
    assert ask(apps, opened.view, "ui/update-model-context", context)["result"] == {}
    openai_server.queue(text("Five it is, {not_a_variable}."))
    message = {"role": "user", "content": [{"type": "text", "text": "what does {the} counter say?"}]}
    assert ask(apps, opened.view, "ui/message", message)["result"] == {}
    turns = list(apps.state.apps._turns)
    apps.state.runner.run(asyncio.wait(turns), timeout=ANSWER_TIMEOUT)
    [request] = openai_server.requests
    sent = request.body["messages"]
    assert sent[0]["role"] == "system"
    assert "the counter shows 5" in sent[0]["content"]
    assert sent[-1] == {"role": "user", "content": "what does {the} counter say?"}  # literal: no interpolation
    shown = "\n".join(str(o["data"].get("text/plain", "")) for o in opened.companion.out.outputs)
    assert "message from the view: what does {the} counter say?" in shown
    assert "Five it is, {not_a_variable}." in shown
    recorded = apps.line("synapse", "sql SELECT role, content FROM messages ORDER BY seq")
    assert ("user", "what does {the} counter say?") in list(zip(recorded.role, recorded.content, strict=True))
    # the context was for one turn
    openai_server.queue(text("again"))
    apps.cell("synapse", "and now?")
    assert "the counter shows 5" not in (openai_server.requests[-1].body["messages"][0].get("content") or "")


def test_a_synapse_turn_that_calls_a_ui_tool_shows_the_view_in_its_tool_block(apps: Any, script: Any) -> None:
    model = script([{"tool_calls": [{"name": "apps__counter", "arguments": {"start": 7}}]}, "The counter is open."])
    apps.cell(f"synapse --model {model}", "open the counter")
    final = apps.published.final
    kinds = [_kind(b) for b in final]
    assert kinds == ["turn", "snapshot", "view", "turn"]  # the companion holding the View, no empty widget
    opened = apps.state.apps.last
    assert final[2][WIDGET_VIEW]["model_id"] == opened.companion.model_id
    assert opened.companion.children[0] is opened.view
    assert final[1]["text/plain"].endswith("; run the cell there to open it]")
    head, tail = final[0]["text/plain"], final[-1]["text/plain"]
    assert "apps__counter" in head
    assert "The counter is open." not in head
    assert "The counter is open." in tail
    assert "apps__counter" not in tail
    assert apps.state.apps.last.view.tool_input == {"start": 7}


def test_the_inspectors_call_shows_the_view_under_its_result(apps: Any) -> None:
    ins = apps.line("mcp", "inspect apps")
    ins.panels["apps"].tool_list.value = "apps__counter"
    (panel,) = ins.panels["apps"].tool_detail.children
    panel.form.inputs[("start",)].value = "4"
    panel.call_button.click()
    apps.state.runner.run(asyncio.wait_for(panel.task, ANSWER_TIMEOUT))
    (companion,) = panel.app_box.children
    view = companion.children[0]
    assert view is apps.state.apps.last.view
    assert companion is apps.state.apps.last.companion
    assert view.tool_input == {"start": 4}
    assert view.tool_result["content"][0]["text"] == "counter starts at 4"
    answer = ask(apps, view, "tools/call", {"name": "bump", "arguments": {"value": 4}})
    assert first_text(answer) == "bumped to 5"


def test_a_background_run_that_calls_a_ui_tool_shows_the_view_in_its_tool_block(apps: Any, script: Any) -> None:
    opens = {"tool_calls": [{"name": "apps__counter", "arguments": {"start": 2}}]}
    model = script([opens, "Opened in the background."])
    apps.cell(f"synapse --model {model} --background --out job", "open the counter")
    apps.run("answer = await job")
    assert apps.ns["answer"].text == "Opened in the background."
    assert apps.state.apps.last.view.tool_input == {"start": 2}
    # the block, the View (its fallback holding the result), the answer: in place, in this order
    final = [b for b in apps.published.final if "open the counter" not in b.get("text/plain", "")]
    kinds = [_kind(b) for b in final if b.get("text/plain") or WIDGET_VIEW in b]
    assert kinds[-4:] == ["turn", "snapshot", "view", "turn"], [b.get("text/plain", "")[:60] for b in final]
    shown = [b for b in final if _kind(b) == "snapshot"]
    assert "counter starts at 2" in shown[-1]["text/plain"]


def destructive_server() -> Any:
    """An apps server whose View may call an app-only tool that says it is destructive."""
    from mcp.server.apps import Apps
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    apps = Apps()

    @apps.tool(resource_uri="ui://danger/view.html", visibility=["model", "app"], description="Show the View")
    def show() -> str:
        return "shown"

    @apps.tool(resource_uri="ui://danger/view.html", visibility=["app"], description="Erase every row",
               annotations=ToolAnnotations(destructiveHint=True))
    def erase() -> str:
        return "erased"

    @apps.tool(resource_uri="ui://danger/view.html", visibility=["app"], description="Empty the basket")
    def empty() -> str:  # says nothing about side effects: possibly destructive (MCP's default)
        return "emptied"

    apps.add_html_resource("ui://danger/view.html", "<!doctype html><p>danger</p>", name="danger view")
    return MCPServer("danger-fixture", extensions=[apps])


def test_a_destructive_tool_called_from_a_view_asks_first_under_the_default_policy(apps: Any) -> None:
    apps.state.runner.run(apps.state.hub.connect_in_process("danger", destructive_server()), timeout=60)
    apps.line("mcp", "call danger.show")
    opened = apps.state.apps.last
    assert apps.state.policy.decide(apps.state.hub.tool("danger__erase")) == "ask"  # the kernel's default policy

    def erase(request_id: int) -> None:
        from_view(opened.view, {"type": "request", "view": "V", "id": request_id, "method": "tools/call",
                                "params": {"name": "erase", "arguments": {}}})

    def answer_of(request_id: int, button: str) -> dict[str, Any]:
        async def click_when_asked() -> dict[str, Any]:
            async with asyncio.timeout(ANSWER_TIMEOUT):
                while opened.companion.controls is None or not opened.companion.controls.pending:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)  # the controls are a widget: no event to wait on
                assert opened.companion.controls.pending[0].spec.name == "danger__erase"
                getattr(opened.companion.controls, button).click()
                while True:
                    for m in opened.view.comm.sent:
                        content = m["data"].get("content") or {}
                        if content.get("type") == "response" and content.get("id") == request_id:
                            return dict(content)
                    await asyncio.sleep(0.01)  # the comm is a list: no event to wait on

        return apps.state.runner.run(click_when_asked(), timeout=ANSWER_TIMEOUT + 5)  # type: ignore[no-any-return]

    erase(201)
    assert first_text(answer_of(201, "deny_button")) == "the user did not approve danger__erase"
    assert ("erase", "app:danger") not in origins(apps)  # nothing ran
    erase(202)
    assert first_text(answer_of(202, "approve_button")) == "erased"
    assert origins(apps)[-1] == ("erase", "app:danger")


def test_a_tool_that_says_nothing_about_side_effects_asks_when_a_view_calls_it(apps: Any) -> None:
    apps.state.runner.run(apps.state.hub.connect_in_process("danger", destructive_server()), timeout=60)
    apps.line("mcp", "call danger.show")
    opened = apps.state.apps.last
    assert apps.state.policy.decide(apps.state.hub.tool("danger__empty")) == "ask"
    from_view(opened.view, {"type": "request", "view": "V", "id": 301, "method": "tools/call",
                            "params": {"name": "empty", "arguments": {}}})

    async def deny_when_asked() -> dict[str, Any]:
        async with asyncio.timeout(ANSWER_TIMEOUT):
            while opened.companion.controls is None or not opened.companion.controls.pending:  # noqa: ASYNC110
                await asyncio.sleep(0.01)  # the controls are a widget: no event to wait on
            assert opened.companion.controls.pending[0].spec.name == "danger__empty"
            opened.companion.controls.deny_button.click()
            while True:
                for m in opened.view.comm.sent:
                    content = m["data"].get("content") or {}
                    if content.get("type") == "response" and content.get("id") == 301:
                        return dict(content)
                await asyncio.sleep(0.01)  # the comm is a list: no event to wait on

    answer = apps.state.runner.run(deny_when_asked(), timeout=ANSWER_TIMEOUT + 5)
    assert first_text(answer) == "the user did not approve danger__empty"
    assert ("empty", "app:danger") not in origins(apps)


def test_a_ui_tools_view_opens_while_its_arguments_stream_and_gets_them_growing_then_whole(
    apps: Any, openai_server: LlmServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The model streams `{"start": 1234567}` in four pieces; the stream holds after the first until the
    View is open, so the View sees the arguments grow (tool-input-partial), then whole, then the result."""
    from synapse_nb.notebook.apps.views import AppViews

    gate = Gate()
    history: list[tuple[str, Any]] = []
    opening = AppViews.open

    async def open_and_watch(self: AppViews, *args: Any, **kwargs: Any) -> Any:
        opened = await opening(self, *args, **kwargs)
        opened.view.observe(lambda change: history.append((change["name"], change["new"])),
                            names=["tool_input_partial", "tool_input", "tool_result", "tool_cancelled"])
        gate.open()  # the rest of the arguments may stream now
        return opened

    monkeypatch.setattr(AppViews, "open", open_and_watch)
    apps.line("synapse", "model openai:gpt-test")
    openai_server.queue(tool_calls(call("apps__counter", {"start": 1234567}), pieces=4).gated(gate))
    openai_server.queue(text("The counter is open."))
    apps.cell("synapse", "open the counter")
    assert not gate.timed_out
    assert history[:4] == [("tool_input", None),  # not known yet: the browser sends no tool-input for it
                           ("tool_input_partial", {"start": 12345}), ("tool_input_partial", {"start": 1234567}),
                           ("tool_input", {"start": 1234567})]
    assert history[-1][0] == "tool_result"
    assert history[-1][1]["content"][0]["text"] == "counter starts at 1234567"
    assert "tool_cancelled" not in [name for name, _ in history]
    # one View, right under the call's block (which went on to show the call's result), the answer below it
    final = apps.published.final
    kinds = [_kind(b) for b in final]
    assert kinds == ["turn", "snapshot", "view", "turn"]
    assert "apps__counter" in final[0]["text/plain"]
    assert "counter starts at 1234567" in final[0]["text/plain"]
    assert "The counter is open." in final[-1]["text/plain"]
    assert "counter starts at 1234567" in final[1]["text/plain"]  # the fallback: the result, once it came


def test_a_ui_tools_view_opened_while_its_arguments_stream_is_told_when_the_call_is_denied(
    apps: Any, openai_server: LlmServer,
) -> None:
    apps.state.policy.set_server("apps", {"counter": "deny"})
    apps.line("synapse", "model openai:gpt-test")
    openai_server.queue(tool_calls(call("apps__counter", {"start": 5}), pieces=4))
    openai_server.queue(text("It was denied."))
    apps.cell("synapse", "open the counter")
    view = apps.state.apps.last.view
    assert "denied" in view.tool_cancelled
    assert view.tool_result == {}


def test_a_view_the_page_saw_fail_is_recorded_and_the_next_turn_is_told(apps: Any) -> None:
    """Issue 36: the PDF viewer failed in its frame while the model was told "PDF opened". The page tells the
    kernel what went wrong; the session's next turn hears it."""
    apps.line("mcp", "call apps.counter")
    view = apps.state.apps.last.view
    problem = "the view's security policy blocked worker-src blob:"
    from_view(view, {"type": "notification", "view": "V", "method": "synapse/view-problem",
                     "params": {"text": problem}})
    told = apps.state.apps.contexts.peek(apps.state.sessions.current)
    assert told is not None
    assert "did not work for the user" in told.prompt
    assert problem in told.prompt
    assert told.label == "apps.counter (ui://fixture/counter.html)"
    events = apps.line("synapse", "sql SELECT detail FROM server_events WHERE event = 'app_view_problem'")
    assert problem in "\n".join(events.detail.astype(str))


# --- a View's saved copy (issue 36 item 5): what a notebook reopened in a new kernel shows in its place -----------

_SAVED = re.compile(r'<script type="application/json">(.*?)</script>', re.DOTALL)


def saved_copy_of(bundle: Mapping[str, Any]) -> dict[str, Any]:
    """The saved copy's JSON in a View's snapshot output."""
    html = bundle["text/html"]
    assert 'class="snb-view-saved"' in html
    found = _SAVED.search(html)
    assert found is not None
    return json.loads(found.group(1))  # type: ignore[no-any-return]


def test_a_views_snapshot_is_its_saved_copy_taken_again_as_the_user_works_in_it(apps: Any) -> None:
    apps.line("mcp", "call apps.counter start=3")
    view = apps.state.apps.last.view
    items = apps.published.items
    at = next(i for i, (b, _id, _u) in enumerate(items) if WIDGET_VIEW in b)
    snapshot, snapshot_id, _update = items[at - 1]
    assert snapshot_id is not None  # its own display id, so the kernel can take it again
    copy = saved_copy_of(snapshot)
    assert copy["html"] == view.html
    assert (copy["toolInput"], copy["storage"], copy["answers"]) == ({"start": 3}, {}, [])
    assert copy["toolResult"]["content"][0]["text"] == "counter starts at 3"
    assert copy["policy"] == view.csp_policy
    # the View's own `</script>` cannot end the element early: `<` is escaped in the JSON
    assert view.html.count("</script>") >= 1
    assert _SAVED.search(snapshot["text/html"]).group(1).count("</script") == 0  # type: ignore[union-attr]
    assert 'class="snb-pre snb-view-fallback"' in snapshot["text/html"]  # GitHub and nbviewer show the text

    # the browser reports the View's storage (as its widget state); the View calls a tool, twice
    view.comm.handle_msg({"content": {"data": {"method": "update", "state": {"storage": {"clicks": "2"}}}},
                          "buffers": []})
    assert first_text(ask(apps, view, "tools/call", {"name": "bump", "arguments": {"value": 3}})) == "bumped to 4"
    ask(apps, view, "resources/read", {"uri": "ui://fixture/counter.html", "_meta": {"progressToken": 7}})
    ask(apps, view, "resources/read", {"uri": "ui://fixture/counter.html", "_meta": {"progressToken": 8}})

    async def taken_again() -> dict[str, Any]:
        async with asyncio.timeout(ANSWER_TIMEOUT):
            while True:
                for bundle, shown_id, update in reversed(apps.published.items):
                    if update and shown_id == snapshot_id:
                        again = saved_copy_of(bundle)
                        if again["storage"] and len(again["answers"]) == 2:
                            return again
                await asyncio.sleep(0.01)

    again = apps.state.runner.run(taken_again(), timeout=ANSWER_TIMEOUT + 5)
    assert again["storage"] == {"clicks": "2"}
    bump, read = again["answers"]
    assert (bump["method"], bump["params"]) == ("tools/call", {"name": "bump", "arguments": {"value": 3}})
    assert bump["result"]["content"][0]["text"] == "bumped to 4"
    # asked again (a poll, a refresh): kept without the answer of its moment, which the copy refuses
    assert read == {"method": "resources/read", "params": {"uri": "ui://fixture/counter.html"}, "repeated": True}
