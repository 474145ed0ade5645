"""AppView's Python side of the MCP Apps bridge, without a kernel: comm messages in (as the browser views send
them, through ipywidgets' own message handling), answers out (as the kernel would publish them).

The comm is a `comm.base_comm.BaseComm` whose transport is a list (no kernel runs here); the host is the
test AppHost over a real stdio session to tests/support/apps_server.py, or a small recording host where the
test needs a host that fails.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import comm
import pytest

from synapse_nb.notebook.apps.policy import CspError, content_security_policy, fallback_text
from synapse_nb.notebook.apps.view import AppView
from synapse_nb.notebook.turns.render import TURN_REST
from tests.support.apps_host import AppsConnection, ClientAppHost, open_view
from tests.support.list_comm import ListComm

pytestmark = pytest.mark.anyio
ANSWER_TIMEOUT = 30.0


@pytest.fixture(autouse=True)
def list_comms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", ListComm)


def from_view(widget: AppView, content: Mapping[str, Any]) -> None:
    """A custom message from a browser view, handled as the kernel hands it to the widget."""
    widget.comm.handle_msg({"content": {"data": {"method": "custom", "content": dict(content)}}, "buffers": []})


async def answers(widget: AppView, count: int, *, received: bool = False) -> list[dict[str, Any]]:
    """The first `count` custom messages the widget sent, waiting (bounded) for them; without `received`, the
    acknowledgements of requests (`{"type": "received"}`) are left out."""
    sent: ListComm = widget.comm

    def custom() -> list[dict[str, Any]]:
        return [m["data"]["content"] for m in sent.sent
                if m["msg_type"] == "comm_msg" and m["data"].get("method") == "custom"
                and (received or m["data"]["content"].get("type") != "received")]

    async with asyncio.timeout(ANSWER_TIMEOUT):
        while len(custom()) < count:
            await asyncio.to_thread(_wait, sent)
    return custom()


def _wait(sent: ListComm) -> None:
    with sent.arrived:
        sent.arrived.wait(timeout=0.5)


class RecordingHost:
    """An AppHost that records and fails on demand (`fail` names a method)."""

    def __init__(self, fail: str = "") -> None:
        self.fail = fail
        self.asked: list[tuple[str, Any]] = []

    def _ask(self, method: str, value: Any) -> None:
        self.asked.append((method, value))
        if method == self.fail:
            raise RuntimeError(f"{method} refused by the host")

    async def call_tool(self, name: str, arguments: Mapping[str, Any], /) -> dict[str, Any]:
        self._ask("tools/call", (name, dict(arguments)))
        return {"content": [{"type": "text", "text": f"{name} ran"}]}

    async def read_resource(self, uri: str, /) -> dict[str, Any]:
        self._ask("resources/read", uri)
        return {"contents": []}

    async def message(self, params: Mapping[str, Any], /) -> dict[str, Any]:
        self._ask("ui/message", dict(params))
        return {}

    async def update_model_context(self, params: Mapping[str, Any], /) -> dict[str, Any]:
        self._ask("ui/update-model-context", dict(params))
        return {}

    async def download_file(self, params: Mapping[str, Any], /) -> dict[str, Any]:
        self._ask("ui/download-file", dict(params))
        return {}

    def notify(self, method: str, params: Mapping[str, Any], /) -> None:
        self._ask(method, dict(params))


def small_view(host: Any, **kwargs: Any) -> AppView:
    return AppView(host, server="fixture", tool={"name": "counter"}, resource_uri="ui://fixture/counter.html",
                   html="<!doctype html><p>hi</p>", **kwargs)


@pytest.fixture
async def apps_host() -> Any:
    host = await AppsConnection.open()
    try:
        yield host
    finally:
        await host.connection.aclose()  # type: ignore[attr-defined]


@pytest.mark.process
@pytest.mark.node
async def test_a_tool_call_from_a_view_reaches_the_server_and_its_answer_goes_back_to_that_view(
    apps_host: ClientAppHost,
) -> None:
    widget = await open_view(apps_host, "counter", {"start": 3})
    assert widget.tool_result["content"][0]["text"] == "counter starts at 3"
    assert "connect-src https://api.example.com" in widget.csp_policy
    from_view(widget, {"type": "request", "view": "A", "id": 1, "method": "tools/call",
                       "params": {"name": "bump", "arguments": {"value": 3}}})
    from_view(widget, {"type": "request", "view": "B", "id": 1, "method": "tools/call",
                       "params": {"name": "bump", "arguments": {"value": 10}}})
    got = {a["view"]: a for a in await answers(widget, 2)}
    assert got["A"]["id"] == got["B"]["id"] == 1
    assert got["A"]["result"]["content"][0]["text"] == "bumped to 4"
    assert got["B"]["result"]["content"][0]["text"] == "bumped to 11"
    assert ("tools/call", {"name": "bump", "arguments": {"value": 3}}) in apps_host.events


@pytest.mark.process
@pytest.mark.node
async def test_an_unknown_tool_is_answered_as_a_tool_error(apps_host: ClientAppHost) -> None:
    widget = await open_view(apps_host, "counter", {})
    from_view(widget, {"type": "request", "view": "A", "id": 7, "method": "tools/call",
                       "params": {"name": "delete_everything", "arguments": {}}})
    [answer] = await answers(widget, 1)
    assert answer["result"]["isError"] is True
    assert "not callable from a View" in answer["result"]["content"][0]["text"]


async def test_each_request_kind_goes_to_its_host_method() -> None:
    host = RecordingHost()
    widget = small_view(host)
    requests = [
        ("resources/read", {"uri": "ui://fixture/counter.html"}),
        ("ui/message", {"role": "user", "content": [{"type": "text", "text": "hi"}]}),
        ("ui/update-model-context", {"content": [{"type": "text", "text": "ctx"}]}),
        ("ui/download-file", {"contents": []}),
    ]
    for n, (method, params) in enumerate(requests, start=1):
        from_view(widget, {"type": "request", "view": "V", "id": n, "method": method, "params": params})
    got = {a["id"]: a for a in await answers(widget, len(requests))}
    assert [m for m, _ in host.asked] == [m for m, _ in requests]
    assert got[4]["result"] == {}
    assert all("error" not in a for a in got.values())


async def test_a_failing_host_or_an_unknown_method_answers_an_error_and_the_view_is_not_left_waiting() -> None:
    widget = small_view(RecordingHost(fail="ui/message"))
    from_view(widget, {"type": "request", "view": "V", "id": 1, "method": "ui/message", "params": {}})
    from_view(widget, {"type": "request", "view": "V", "id": 2, "method": "sampling/createMessage", "params": {}})
    from_view(widget, {"type": "request", "view": "V", "id": 3, "method": "tools/call", "params": {}})
    got = {a["id"]: a for a in await answers(widget, 3)}
    assert got[1]["error"]["message"] == "ui/message refused by the host"
    assert "does not answer 'sampling/createMessage'" in got[2]["error"]["message"]
    assert got[3]["error"]["message"] == "tools/call needs a tool name"


async def test_a_request_is_acknowledged_at_once_so_the_page_can_say_when_one_waits() -> None:
    """Issue 36: a click queued behind a busy cell said nothing. The kernel says it has a request as soon as it
    reads it (before the host has answered), so a request the page hears nothing of waits behind a cell."""
    release = asyncio.Event()

    class SlowHost(RecordingHost):
        async def call_tool(self, name: str, arguments: Mapping[str, Any], /) -> dict[str, Any]:
            await release.wait()
            return await super().call_tool(name, arguments)

    widget = small_view(SlowHost())
    from_view(widget, {"type": "request", "view": "V", "id": 5, "method": "tools/call",
                       "params": {"name": "bump", "arguments": {}}})
    assert await answers(widget, 1, received=True) == [{"type": "received", "view": "V", "id": 5}]
    release.set()
    [answer] = await answers(widget, 1)
    assert (answer["type"], answer["id"]) == ("response", 5)


async def test_notifications_reach_the_host_and_malformed_messages_are_dropped() -> None:
    host = RecordingHost()
    widget = small_view(host)
    from_view(widget, {"type": "notification", "view": "V", "method": "notifications/message",
                       "params": {"level": "info", "data": "hello"}})
    from_view(widget, {"type": "notification", "view": "V", "method": "ui/open-link", "params": {"url": "https://x.org"}})
    from_view(widget, {"type": "request", "view": "V", "id": "not-a-number", "method": "tools/call"})
    from_view(widget, {"type": "notification", "view": "V", "method": "tools/call", "params": {}})
    assert host.asked == [("notifications/message", {"level": "info", "data": "hello"}),
                          ("ui/open-link", {"url": "https://x.org"})]
    assert [m for m in widget.comm.sent if m["data"].get("method") == "custom"] == []


async def test_a_views_hello_is_echoed_to_that_view_from_the_widgets_loop() -> None:
    """The browser view learns its own ipywidgets view from the echo's arrival (it then parks its frame when
    JupyterLab detaches a cleared output, so ui/resource-teardown still reaches the View's page)."""
    host = RecordingHost()
    widget = small_view(host)
    await asyncio.to_thread(from_view, widget, {"type": "hello", "view": "V"})
    assert await answers(widget, 1) == [{"type": "hello", "view": "V"}]
    assert host.asked == []


async def test_a_request_from_another_thread_is_answered_on_the_widgets_loop() -> None:
    """JupyterLab delivers comm messages on a subshell thread; the host's work belongs to the kernel loop."""
    loops: list[asyncio.AbstractEventLoop] = []

    class LoopHost(RecordingHost):
        async def call_tool(self, name: str, arguments: Mapping[str, Any], /) -> dict[str, Any]:
            loops.append(asyncio.get_running_loop())
            return await super().call_tool(name, arguments)

    widget = small_view(LoopHost())
    request = {"type": "request", "view": "V", "id": 1, "method": "tools/call", "params": {"name": "bump"}}
    await asyncio.to_thread(from_view, widget, request)
    [answer] = await answers(widget, 1)
    assert answer["result"]["content"][0]["text"] == "bump ran"
    assert loops == [asyncio.get_running_loop()]


async def test_the_state_a_view_needs_to_come_back_is_synced_and_the_text_fallback_names_the_view() -> None:
    result = {"content": [{"type": "text", "text": "counter starts at 3"}]}
    widget = small_view(RecordingHost(), tool_input={"start": 3}, tool_result=result,
                        resource_meta={"csp": {"resourceDomains": ["https://cdn.example.com"]}, "prefersBorder": True})
    state = widget.get_state()
    for key in ("page", "csp", "csp_policy", "tool_input", "tool_result", "theme", "display_mode", "height",
                "resource_uri", "prefers_border"):
        assert key in state
    assert state["page"] == f"IPY_MODEL_{widget.page.model_id}"
    assert widget.page.get_state()["html"] == "<!doctype html><p>hi</p>"
    assert state["tool_input"] == {"start": 3}
    assert state["prefers_border"] is True
    assert "script-src 'unsafe-inline' 'unsafe-eval' blob: data: https://cdn.example.com" in state["csp_policy"]
    data, _metadata = widget._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["text/plain"].splitlines() == [
        "counter starts at 3",
        "[fixture.counter has an interactive view (ui://fixture/counter.html): it renders in JupyterLab, "
        "Notebook 7 or VS Code with the kernel running; run the cell there to open it]",
    ]


async def test_every_view_carries_a_small_loader_and_shares_one_bundle_model() -> None:
    """The ~670 KB View code is synced once per kernel (not per View), and made again once closed."""
    first, second = small_view(RecordingHost()), small_view(RecordingHost())
    bundle = first.bundle
    assert second.bundle is bundle
    states = [first.get_state(), second.get_state()]
    assert all(state["bundle"] == f"IPY_MODEL_{bundle.model_id}" for state in states)
    assert all(len(state["_esm"]) < 2_000 for state in states)
    assert len(bundle.code) > 100_000
    assert bundle.digest
    bundle.close()
    third = small_view(RecordingHost())
    assert third.bundle is not bundle
    assert third.bundle.code == bundle.code


async def test_views_of_the_same_html_share_one_page_model() -> None:
    """A reloaded page gets every open widget's state from the kernel: a View's HTML (hundreds of KB) is synced
    once however often its cell ran, and not at all in the View's own state."""
    first, second = small_view(RecordingHost()), small_view(RecordingHost(), tool_input={"start": 5})
    page = first.page
    assert second.page is page
    assert page.get_state()["html"] == first.html == "<!doctype html><p>hi</p>"
    assert all("html" not in view.get_state() for view in (first, second))
    other = AppView(RecordingHost(), server="fixture", tool={"name": "probe"}, resource_uri="ui://fixture/probe.html",
                    html="<!doctype html><p>probe</p>")
    assert other.page is not page
    assert other.page.get_state()["html"] == "<!doctype html><p>probe</p>"
    page.close()
    again = small_view(RecordingHost())
    assert again.page is not page
    assert again.page.get_state()["html"] == "<!doctype html><p>hi</p>"


def test_the_default_policy_lets_the_view_reach_nothing_outside_its_html() -> None:
    policy = content_security_policy(None)
    assert policy.startswith("default-src 'none'")
    for directive in ("connect-src 'none'", "frame-src 'none'", "base-uri 'none'", "form-action 'none'",
                      "object-src 'none'"):
        assert directive in policy
    assert "'self'" not in policy  # the frame has no origin, and the notebook's is never the View's


def test_the_policy_lets_a_view_run_what_the_reference_host_lets_it_run() -> None:
    """Issue 36: server-pdf's PDF.js worker (a blob: URL, then a data: fallback) and server-threejs (eval)
    were refused; the reference host (ext-apps examples/basic-host) grants them, and so do we."""
    directives = dict(d.split(" ", 1) for d in content_security_policy(None).split("; "))
    assert directives["script-src"] == "'unsafe-inline' 'unsafe-eval' blob: data:"
    assert directives["worker-src"] == "blob:"
    assert directives["style-src"] == "'unsafe-inline' blob: data:"
    assert directives["font-src"] == "data: blob:"
    wasm = content_security_policy({"wasmUnsafeEval": True, "resourceDomains": ["https://cdn.example.com"]})
    assert "script-src 'unsafe-inline' 'unsafe-eval' 'wasm-unsafe-eval' blob: data: https://cdn.example.com;" in wasm
    assert "worker-src blob: https://cdn.example.com;" in wasm


def test_declared_domains_widen_only_their_own_directives() -> None:
    policy = content_security_policy({
        "connectDomains": ["https://api.example.com", "wss://live.example.com"],
        "resourceDomains": ["https://*.cdn.example.com"],
        "frameDomains": ["https://www.youtube.com"],
        "baseUriDomains": ["https://base.example.com"],
    })
    assert "connect-src https://api.example.com wss://live.example.com;" in policy
    assert "img-src data: blob: https://*.cdn.example.com;" in policy
    assert "frame-src https://www.youtube.com;" in policy
    assert "base-uri https://base.example.com;" in policy


@pytest.mark.parametrize("bad", [
    {"connectDomains": ["https://a.example.com; script-src *"]},
    {"connectDomains": ["'unsafe-eval'"]},
    {"resourceDomains": ["*"]},
    {"frameDomains": "https://one.example.com"},
    {"scriptDomains": ["https://a.example.com"]},
    {"wasmUnsafeEval": "yes"},
])
def test_a_declared_domain_that_could_widen_the_policy_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(CspError):
        content_security_policy(bad)


def test_the_text_fallback_is_capped_as_mcp_call_caps_text_and_keeps_the_views_line() -> None:
    rows = [{"id": i, "name": f"customer {i}"} for i in range(3_000)]
    result = {"content": [{"type": "text", "text": json.dumps({"customers": rows})}]}
    text = fallback_text("seg", "data", "ui://seg/app.html", result)
    lines = text.splitlines()
    assert len(text) < 3_400
    assert lines[:2] == ["{", '  "customers": [']  # one long line of JSON is indented, as %mcp call does
    assert lines[-2].startswith("… ")
    assert lines[-2].endswith(" characters) in .text of this cell's value (_.text)")
    assert lines[-1].startswith("[seg.data has an interactive view (ui://seg/app.html): it renders in ")
    in_a_turn = fallback_text("seg", "data", "ui://seg/app.html", result, TURN_REST).splitlines()
    assert in_a_turn[-2].endswith(" characters) in _synapse.tool_calls")
    short = fallback_text("seg", "data", "ui://seg/app.html", {"content": [{"type": "text", "text": "hi"}]})
    assert short.splitlines()[0] == "hi"
