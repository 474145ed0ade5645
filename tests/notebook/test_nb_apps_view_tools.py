"""The tools an MCP Apps View registered (the draft's Host->App `tools/list` / `tools/call`; issue 36, item 2), in
the kernel without a browser: the browser half's messages are played by the test as the bridge sends them (the
`ui/app-tools` list once the View loaded, an `app-response` to each `app-request`). The model is offered them in the
next turn and calls one, Python calls one with `await view.call_tool(...)`; both are recorded with origin
`view:SERVER`, the model's under the turn's approval policy. tests/e2e/test_browser_apps.py runs the real View."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from synapse_nb.notebook.apps.view_tools import view_tool_spec
from tests.notebook.test_nb_apps import ANSWER_TIMEOUT, from_view

GET_COUNT = {"name": "get_count", "description": "The count the counter shows now",
             "inputSchema": {"type": "object", "properties": {}}, "annotations": {"readOnlyHint": True}}


def listed(view: Any, *tools: Mapping[str, Any], browser_view: str = "B1") -> None:
    """The browser half told the kernel the View's tools (it does once the View initialized)."""
    from_view(view, {"type": "notification", "view": browser_view, "method": "ui/app-tools",
                     "params": {"tools": [dict(t) for t in tools]}})


@contextmanager
def browser_answering(view: Any, text: str) -> Iterator[list[dict[str, Any]]]:
    """While inside: the browser view answers each `app-request` sent to it with `text` (from a thread, as a
    browser's comm message arrives); yields the requests seen."""
    comm = view.comm
    seen: list[dict[str, Any]] = []
    stop = threading.Event()

    def answer() -> None:
        while not stop.is_set():
            with comm.arrived:
                new = [m["data"]["content"] for m in comm.sent if m["msg_type"] == "comm_msg"
                       and isinstance(m["data"].get("content"), dict)
                       and m["data"]["content"].get("type") == "app-request"][len(seen):]
                if not new:
                    comm.arrived.wait(timeout=0.5)  # woken by each message the kernel sends; the timeout to see stop
                    continue
            for request in new:
                seen.append(request)
                from_view(view, {"type": "app-response", "view": request["view"], "id": request["id"],
                                 "result": {"content": [{"type": "text", "text": text}]}})

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join(timeout=ANSWER_TIMEOUT)


def rows(ip: Any) -> list[tuple[Any, ...]]:
    frame = ip.line("synapse", "sql SELECT server, tool, origin, approval, result_text FROM tool_calls "
                               "ORDER BY started_at")
    return [tuple(r) for r in frame.itertuples(index=False)]


def test_the_model_is_offered_a_views_tools_and_its_call_is_answered_by_the_view(apps: Any, script: Any) -> None:
    apps.line("mcp", "call apps.counter start=3")
    view = apps.state.apps.last.view
    listed(view, GET_COUNT)
    assert view.tools == [GET_COUNT]
    model = script([{"tool_calls": [{"name": "view_apps__get_count", "arguments": {}}]}, "The count is 3."])
    with browser_answering(view, "the count is 3") as requests:
        apps.cell(f"synapse --model {model}", "what does the counter show?")
    assert apps.ns["_synapse"].text == "The count is 3."
    assert [(r["view"], r["method"], r["params"]) for r in requests] == [
        ("B1", "tools/call", {"name": "get_count", "arguments": {}})]
    assert rows(apps)[-1] == ("apps", "get_count", "view:apps", "auto", "the count is 3")
    tool_message = apps.line("synapse", "sql SELECT content FROM messages WHERE role = 'tool'").content
    assert list(tool_message) == ["the count is 3"]


def test_python_calls_a_views_tool_and_the_call_is_recorded_with_the_view_as_origin(apps: Any) -> None:
    apps.line("mcp", "call apps.counter start=3")
    apps.ns["view"] = view = apps.state.apps.last.view
    listed(view, GET_COUNT)
    with browser_answering(view, "the count is 3"):
        apps.run("answer = await view.call_tool('get_count')")
    answer = apps.ns["answer"]
    assert (answer.text, answer.is_error) == ("the count is 3", False)
    assert rows(apps)[-1] == ("apps", "get_count", "view:apps", "manual", "the count is 3")
    events = apps.line("synapse", "sql SELECT detail FROM server_events WHERE event = 'app_request'").detail
    assert any(json.loads(d).get("method") == "ui/app-tools" and json.loads(d)["tools"] == ["get_count"]
               for d in events)


def test_a_view_that_cannot_answer_gives_an_error_result_not_a_hang(apps: Any) -> None:
    apps.line("mcp", "call apps.counter start=3")
    apps.ns["view"] = view = apps.state.apps.last.view
    apps.run("before = await view.call_tool('get_count')")  # not loaded in a browser yet: no tools listed
    assert apps.ns["before"].is_error
    assert "not loaded in a browser" in apps.ns["before"].text
    listed(view, GET_COUNT)
    apps.run("unknown = await view.call_tool('get_colour')")
    assert "the View has no tool 'get_colour'; its tools: get_count" in apps.ns["unknown"].text
    from_view(view, {"type": "notification", "view": "B1", "method": "ui/resource-teardown", "params": {}})
    apps.run("after = await view.call_tool('get_count')")
    assert "not loaded in a browser" in apps.ns["after"].text  # torn down: its tools went with it
    assert view.tools == []


def test_a_views_tool_that_says_nothing_about_side_effects_asks_under_the_default_policy(apps: Any) -> None:
    apps.line("mcp", "call apps.counter start=3")
    view = apps.state.apps.last.view
    quiet = {"name": "reset", "description": "Set the counter to zero", "inputSchema": {"type": "object"}}
    spec = view_tool_spec(view, quiet)
    assert (spec.name, spec.server, spec.original_name, spec.origin) == (
        "view_apps__reset", "apps", "reset", "view:apps")
    assert apps.state.policy.decide(spec) == "ask"
    assert apps.state.policy.decide(view_tool_spec(view, GET_COUNT)) == "auto"
