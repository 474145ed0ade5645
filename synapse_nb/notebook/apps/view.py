"""AppView: an MCP Apps View (a server's `ui://` HTML) rendered live in a cell output.

The browser half (static/app_view.js, built by `make widget-js` from the pinned @modelcontextprotocol/
ext-apps host bridge, held once per kernel by app_bundle.AppViewBundle and loaded by each View's small
static/app_view_loader.js) shows the resource in `<iframe sandbox="allow-scripts allow-forms">` (an opaque
origin: no access to the notebook's page, cookies, storage or the Jupyter server's API) under a CSP built
from the resource's declared domains. Everything the View needs to come back (policy, tool input and result,
theme, display mode, height) is a synced trait, and its HTML is in the page model it shares with every View of
the same HTML (app_page.AppViewPage), so JupyterLab's windowing and a reloaded page show the View again
without calling the tool again, and a reload fetches each HTML once.

The View's requests reach the kernel as comm messages `{type: "request", view, id, method, params}`; this
class hands each one to the kernel's loop (comm messages may arrive on a subshell thread), asks its
`AppHost`, and answers `{type: "response", view, id, result | error}` to that view. A request sent while a
cell runs waits in the kernel's queue and is answered when the kernel is free.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets as t
from ipywidgets import widget_serialization

from ..._version import __version__
from ...types import ToolResult
from ..turns.render import Rest
from ..widgets._threads import call_on, current_loop, kernel_loop
from ..widgets.facade import RunnerLike
from .app_tools import AppTools
from .bundle import AppViewBundle, shared_bundle
from .host import REQUESTS, AppHost
from .page import AppViewPage, shared_page
from .policy import content_security_policy, fallback_text
from .saved_copy import SAVED_METHODS, kept_answers

if TYPE_CHECKING:
    from .view_tools import ViewCalls

__all__ = ["AppView"]

logger = logging.getLogger("synapse_nb.notebook")

_ESM = Path(__file__).with_name("static") / "app_view_loader.js"
_NOTIFICATIONS = frozenset({
    "notifications/message", "ui/open-link", "ui/resource-teardown", "ui/request-display-mode", "synapse/view-problem",
})


class AppView(anywidget.AnyWidget):  # type: ignore[misc]
    """One View of a UI tool's call: its resource HTML, the call's input and result, and the host that
    answers the View's requests (tool calls, resource reads, messages, context updates, display modes)."""

    _esm = t.Unicode(_ESM.read_text(encoding="utf-8") if _ESM.exists() else "").tag(sync=True)
    # the View code, shared by every View of the kernel (the loader above imports it once per page)
    bundle = t.Instance(AppViewBundle).tag(sync=True, **widget_serialization)

    server = t.Unicode("").tag(sync=True)
    tool = t.Dict().tag(sync=True)
    resource_uri = t.Unicode("").tag(sync=True)
    html = t.Unicode("")  # the resource's HTML, for Python readers; the browser reads it from `page`
    # the HTML, in a model shared by every View of the same HTML (re-running a View's cell adds no copy)
    page = t.Instance(AppViewPage).tag(sync=True, **widget_serialization)
    csp = t.Dict().tag(sync=True)
    csp_policy = t.Unicode("").tag(sync=True)
    permissions = t.Dict().tag(sync=True)
    prefers_border = t.Bool(False).tag(sync=True)
    tool_input = t.Dict(allow_none=True).tag(sync=True)  # None: not known yet (a turn still streams it)
    tool_input_partial = t.Dict().tag(sync=True)
    tool_result = t.Dict().tag(sync=True)
    tool_cancelled = t.Unicode("").tag(sync=True)
    theme = t.Unicode("auto").tag(sync=True)  # auto (follow the frontend), light or dark
    display_mode = t.Unicode("inline").tag(sync=True)  # the mode it opens in (the page grants the others)
    # the View's own `localStorage` (its frame has no origin, so no storage of its own): set by the page as the View
    # writes it, saved with the notebook's widget state, given back to the View's document when it loads again
    storage = t.Dict().tag(sync=True)
    # this View's identity for the page: a view of the same widget shown again (a turn's live output made final)
    # takes over the live document of the one that just went, instead of loading the View afresh
    instance = t.Unicode("").tag(sync=True)
    height = t.Int(0).tag(sync=True)  # the View's last reported height in px (0: not known yet)
    host_version = t.Unicode(__version__).tag(sync=True)  # the hostInfo the View is told (written once, in Python)
    # what the kernel answered the View's tool calls and resource reads: its saved copy answers them alike
    # (saved_copy.py; not synced: the live View asks the kernel)
    answers: t.List[Any] = t.List()

    def __init__(
        self,
        host: AppHost,
        *,
        server: str,
        tool: Mapping[str, Any],
        resource_uri: str,
        html: str,
        resource_meta: Mapping[str, Any] | None = None,
        tool_input: Mapping[str, Any] | None = None,
        tool_result: Mapping[str, Any] | None = None,
        runner: RunnerLike | None = None,
        rest: Rest | None = None,
        **kwargs: Any,
    ) -> None:
        """`tool` is the tool's wire definition, `resource_meta` the resource's `_meta.ui` (csp, permissions,
        prefersBorder), `rest` where the whole result is when the text fallback is capped (None: the value of
        `%mcp call`'s cell); raises app_policy.CspError when its declared domains are not plain sources."""
        meta = dict(resource_meta or {})
        csp = dict(meta.get("csp") or {})
        super().__init__(
            server=server, tool=dict(tool), resource_uri=resource_uri, html=html, csp=csp,
            csp_policy=content_security_policy(csp), permissions=dict(meta.get("permissions") or {}),
            prefers_border=bool(meta.get("prefersBorder", False)), tool_input=dict(tool_input or {}),
            tool_result=dict(tool_result or {}), bundle=shared_bundle(), page=shared_page(html),
            instance=uuid.uuid4().hex, **kwargs,
        )
        self.host = host
        self.rest = rest
        self.app_tools = AppTools(self.send)  # the tools the View registered, and the kernel's calls of them
        self.calls: ViewCalls | None = None  # records Python's calls of them (AppViews.open sets it)
        self.runner = runner
        self.loop = kernel_loop(runner) if runner is not None else current_loop()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.on_msg(self._on_comm_msg)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[Any, Any], dict[Any, Any]] | None:
        """The widget view, with the text fallback as its text/plain (saved notebooks, other frontends)."""
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        name = str(self.tool.get("name", ""))
        text = (fallback_text(self.server, name, self.resource_uri, self.tool_result, self.rest) if self.rest
                else fallback_text(self.server, name, self.resource_uri, self.tool_result))
        return {**data, "text/plain": text}, metadata

    def _on_comm_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """A message from one of the browser views (possibly on a subshell thread)."""
        if not isinstance(content, Mapping):
            logger.warning("app view %s: ignored a message that is not an object", self.resource_uri)
            return
        kind, view, method = content.get("type"), content.get("view"), content.get("method")
        params = content.get("params")
        params = params if isinstance(params, Mapping) else {}
        if kind == "notification" and method == "ui/app-tools" and isinstance(view, str):
            tools = params.get("tools")
            call_on(self.loop, self._tools_listed, view, tools if isinstance(tools, list) else [])
        elif kind == "notification" and method in _NOTIFICATIONS:
            if method == "ui/resource-teardown" and isinstance(view, str):
                call_on(self.loop, self.app_tools.gone, view)
            call_on(self.loop, self._notify, str(method), dict(params))
        elif kind == "app-response":
            call_on(self.loop, self.app_tools.answered, dict(content))
        elif kind == "hello" and isinstance(view, str):  # echoed: the browser view learns its own widget from it
            call_on(self.loop, self.send, {"type": "hello", "view": view})
        elif kind == "request" and isinstance(view, str) and isinstance(content.get("id"), int):
            # said at once: a request the page hears nothing of waits behind a running cell, and it says so
            call_on(self.loop, self.send, {"type": "received", "view": view, "id": content["id"]})
            call_on(self.loop, self._start, view, content["id"], method, dict(params))
        else:
            logger.warning("app view %s: ignored a malformed message (%s)", self.resource_uri, kind)

    def _tools_listed(self, view: str, tools: list[Any]) -> None:
        self.app_tools.listed(view, tools)
        self._notify("ui/app-tools", {"tools": self.app_tools.names})

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tools the View registered (the draft's App tools: `name`, `description`, `inputSchema`...), as the
        View listed them once it loaded in the page; empty for a View that registers none, or not loaded."""
        return [dict(t) for t in self.app_tools.tools]

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None, /, **kwargs: Any) -> ToolResult:
        """Call one of the View's own tools (`await view.call_tool("get_selection")`, arguments as a mapping or
        keywords): the View answers from what it shows now. Recorded in `tool_calls` with origin `view:SERVER`;
        a View that cannot answer (not loaded in the page, no such tool, too slow) gives an error result."""
        from .view_tools import call_view

        given = {**dict(arguments or {}), **kwargs}
        if self.calls is not None:
            return await self.calls.call(self, name, given)
        return await call_view(self, name, given)

    def _notify(self, method: str, params: dict[str, Any]) -> None:
        try:
            self.host.notify(method, params)
        except Exception:
            logger.exception("app view %s: the host failed on %s", self.resource_uri, method)

    def _start(self, view: str, request_id: int, method: Any, params: dict[str, Any]) -> None:
        coro = self._answer(view, request_id, method, params)
        if self.runner is not None:
            self.runner.spawn(coro)
            return
        loop = self.loop if self.loop is not None and not self.loop.is_closed() else None
        if loop is None:
            asyncio.run(coro)
            return
        task = loop.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _answer(self, view: str, request_id: int, method: Any, params: dict[str, Any]) -> None:
        """Ask the host and send its answer (or its error) back to the view that asked."""
        reply: dict[str, Any] = {"type": "response", "view": view, "id": request_id}
        try:
            if method not in REQUESTS:
                raise ValueError(f"the host does not answer {method!r} from a View")
            reply["result"] = await self._dispatch(str(method), params)
            if method in SAVED_METHODS and (kept := kept_answers(self.answers, str(method), params,
                                                               reply["result"])) is not self.answers:
                self.answers = kept
        except Exception as exc:
            logger.exception("app view %s: %s failed", self.resource_uri, method)
            reply["error"] = {"code": -32603, "message": str(exc) or type(exc).__name__}
        self.send(reply)

    def _dispatch(self, method: str, params: dict[str, Any]) -> Coroutine[Any, Any, dict[str, Any]]:
        if method == "tools/call":
            name = params.get("name")
            if not isinstance(name, str):
                raise ValueError("tools/call needs a tool name")
            arguments = params.get("arguments")
            return self.host.call_tool(name, arguments if isinstance(arguments, Mapping) else {})
        if method == "resources/read":
            uri = params.get("uri")
            if not isinstance(uri, str):
                raise ValueError("resources/read needs a uri")
            return self.host.read_resource(uri)
        if method == "ui/message":
            return self.host.message(params)
        if method == "ui/update-model-context":
            return self.host.update_model_context(params)
        return self.host.download_file(params)
