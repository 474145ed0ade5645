"""AppTools: the tools an MCP Apps View registered (the draft's Host->App `tools/list` / `tools/call`), as the kernel
knows them, and the kernel's calls of them through the browser.

When a View declares the `tools` capability, its browser half (static/app_view.js) lists them once the View has
initialized (and again when the View says its list changed) and tells the kernel in a `ui/app-tools` notification,
with the id of the browser view that loaded it. A call of one goes to that browser view as `{type: "app-request",
view, id, method: "tools/call", params}`; its bridge asks the View and answers `{type: "app-response", id, result |
error}`. JupyterLab 4.6 delivers comm messages while a cell runs (on a subshell thread), so a call made from a
running `%%synapse` turn or an awaited cell is answered at once; a frontend that queues them behind the cell
answers only when the cell ends, so every call is bounded by `timeout`.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["APP_TOOLS_TIMEOUT", "AppToolError", "AppTools"]

APP_TOOLS_TIMEOUT = 60.0
"""Seconds a call of a View's tool waits for the View's answer (the View's own SDK gives up on a request then)."""


class AppToolError(Exception):
    """A View's tool could not be called: no browser view has the View loaded, it is gone, it did not answer in
    time, or it answered with an error."""


class AppTools:
    """The View's registered tools (wire `Tool` dicts) and its calls in flight, for one AppView."""

    def __init__(self, send: Callable[[dict[str, Any]], None]) -> None:
        """`send` sends a message to the browser views of the widget (AppView.send)."""
        self._send = send
        self.tools: tuple[dict[str, Any], ...] = ()
        self.reporter: str | None = None  # the browser view that listed them, which answers the calls
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}

    @property
    def names(self) -> list[str]:
        return [str(t.get("name")) for t in self.tools]

    def listed(self, view: str, tools: Sequence[Any]) -> None:
        """The browser view `view` listed the View's tools (a new load of the View replaces the list)."""
        self.reporter = view
        self.tools = tuple(dict(t) for t in tools if isinstance(t, Mapping) and isinstance(t.get("name"), str))

    def gone(self, view: str) -> None:
        """The browser view `view` was torn down: its tools go with it, and the calls it had are failed."""
        if view != self.reporter:
            return
        self.reporter, self.tools = None, ()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(AppToolError("the View was closed before it answered"))
        self._pending.clear()

    def answered(self, content: Mapping[str, Any]) -> None:
        """An `app-response` from the browser: resolve the call it answers."""
        request_id = content.get("id")
        future = self._pending.pop(request_id, None) if isinstance(request_id, int) else None
        if future is None or future.done():
            return
        error = content.get("error")
        if isinstance(error, Mapping):
            future.set_exception(AppToolError(f"the View answered with an error: {error.get('message') or error}"))
        else:
            result = content.get("result")
            future.set_result(dict(result) if isinstance(result, Mapping) else {})

    async def call(self, name: str, arguments: Mapping[str, Any], *, timeout: float = APP_TOOLS_TIMEOUT,
                   ) -> dict[str, Any]:
        """Call the View's tool `name`: its CallToolResult as a wire dict (`content`, `structuredContent`,
        `isError`). AppToolError when it has no such tool, no browser view has it loaded, or it does not answer."""
        if self.reporter is None:
            raise AppToolError("the View is not loaded in a browser (its cell is not shown, or the page was closed)")
        if name not in self.names:
            listed = ", ".join(self.names) or "none"
            raise AppToolError(f"the View has no tool {name!r}; its tools: {listed}")
        request_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._send({"type": "app-request", "view": self.reporter, "id": request_id, "method": "tools/call",
                    "params": {"name": name, "arguments": dict(arguments)}})
        try:
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            raise AppToolError(f"the View did not answer {name} within {timeout:.0f} s") from None
        finally:
            self._pending.pop(request_id, None)
