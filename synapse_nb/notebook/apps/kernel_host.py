"""KernelAppHost: the kernel's answers to one MCP Apps View (widgets/app_host.py's AppHost protocol).

What a View may do, and nothing more: call tools of its own server whose visibility includes "app", under
the approval policy of whatever opened it (a destructive tool asks; `--approve` and the server's `approve`
rule are never bypassed), recorded in `tool_calls` with origin `app:SERVER`; read its own server's
resources; log into its server's log ring (`%mcp logs`); open a link (the browser opens it; the kernel only
records it); send a message that becomes a turn of the agent in the session (shown under the View); set
the context of the session's next turn (last write wins); save a file into the notebook's folder once the user
agreed (`ui/download-file`: downloads.py). The page grants display modes and says what it granted; a View the page
saw fail (its policy refused something, it did not load) is recorded, and the session's next turn is told, so the
model does not go on believing a tool result that said the View opened. Every request is recorded as a server
event `app_request`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ...errors import SynapseError
from ...events import ServerEvent
from ...server_config import LOG_LEVELS
from ...types import ContentBlock, ToolSpec
from .ui import callable_from_view, wire_result

if TYPE_CHECKING:
    from ...agent.approval import ApprovalPolicy
    from ...mcp_client.hub import McpHub
    from ...protocols import ApprovalCallback
    from ..recording.manual import ManualCalls
    from ..recording.router import EventRouter
    from .context import ModelContexts
    from .downloads import Downloads

__all__ = ["KernelAppHost", "MessageTurn"]

logger = logging.getLogger("synapse_nb.notebook")

MessageTurn = Callable[[str], Awaitable[bool]]
"""Starts a turn of the agent with the View's message as the prompt; False when it could not start."""

_LEVELS = frozenset(LOG_LEVELS)


def _refused(text: str) -> dict[str, Any]:
    return {"isError": True, "content": [{"type": "text", "text": text}]}


def _text_of(params: Mapping[str, Any]) -> str:
    blocks = params.get("content") or []
    texts = [b["text"] for b in blocks if isinstance(b, Mapping) and b.get("type") == "text"
             and isinstance(b.get("text"), str)]
    return "\n".join(t for t in texts if t.strip())


class KernelAppHost:
    """The host of one View of `server`'s `resource_uri`, living in session `session`."""

    def __init__(
        self, hub: McpHub, manual: ManualCalls, router: EventRouter, contexts: ModelContexts, *, server: str,
        resource_uri: str, session: str, policy: ApprovalPolicy, ask: ApprovalCallback | None = None,
        on_message: MessageTurn | None = None, tool: str = "", downloads: Downloads | None = None,
    ) -> None:
        """The parts it uses: the hub (the server's tools, resources, log), the manual calls (the View's tool calls,
        recorded), the router (its requests, recorded), the View contexts of the next turns. `policy` is the
        approval policy of what opened the View (the cell's `--approve`, else the kernel's); `ask` asks the user
        about a call the policy says to ask for (None: such calls are refused); `tool` is the server's tool whose call
        opened the View (the context it gives the model names it); `downloads` saves the files the View offers once
        the user agreed (None: refused)."""
        self.hub = hub
        self.manual = manual
        self.router = router
        self.contexts = contexts
        self.server = server
        self.resource_uri = resource_uri
        self.tool = tool
        self.session = session
        self.policy = policy
        self.ask = ask
        self.on_message = on_message
        self.downloads = downloads
        self.origin = f"app:{server}"

    def _record(self, method: str, detail: Mapping[str, Any]) -> None:
        self.router.record(ServerEvent(
            server=self.server, event="app_request", detail={"method": method, "view": self.resource_uri, **detail}))

    def _spec(self, name: str) -> ToolSpec | None:
        return next((s for s in self.hub.all_tools if s.server == self.server and s.original_name == name), None)

    async def call_tool(self, name: str, arguments: Mapping[str, Any], /) -> dict[str, Any]:
        spec = self._spec(name)
        if spec is None:
            answer, outcome = _refused(f"server {self.server!r} has no tool {name!r}"), "unknown tool"
        elif not callable_from_view(spec):
            answer = _refused(f"{name} is not callable from a View: its visibility does not include 'app'")
            outcome = "not visible to apps"
        else:
            answer, outcome = await self._approved_call(spec, arguments)
        self._record("tools/call", {"tool": name, "outcome": outcome})
        return answer

    async def _approved_call(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
        """The call's answer and what happened to it (`ran`, `failed`, `denied`)."""
        mode = self.policy.decide(spec)
        if mode == "deny":
            return _refused(f"{spec.name} is denied by the approval policy"), "denied"
        if mode == "ask":
            answer = await self.ask(spec, arguments) if self.ask is not None else "no"
            if answer == "always":
                self.policy.remember_always(spec.name)
            elif answer != "yes":
                return _refused(f"the user did not approve {spec.name}"), "denied"
        try:
            result = await self.manual.call(spec, dict(arguments), origin=self.origin)
        except SynapseError as exc:
            return _refused(f"{spec.name} failed: {exc}"), "failed"
        return wire_result(result), "ran"

    async def read_resource(self, uri: str, /) -> dict[str, Any]:
        self._record("resources/read", {"uri": uri})
        blocks = await self.hub.read_resource(self.server, uri)
        return {"contents": [_resource_contents(uri, b) for b in blocks]}

    async def message(self, params: Mapping[str, Any], /) -> dict[str, Any]:
        text = _text_of(params)
        self._record("ui/message", {"chars": len(text)})
        if not text or self.on_message is None:
            return {"isError": True}
        return {} if await self.on_message(text) else {"isError": True}

    async def update_model_context(self, params: Mapping[str, Any], /) -> dict[str, Any]:
        given = self.contexts.put(self.session, server=self.server, tool=self.tool, view=self.resource_uri,
                                  params=params)
        self._record("ui/update-model-context", {"session": self.session, "chars": len(given.text) if given else 0})
        return {}

    async def download_file(self, params: Mapping[str, Any], /) -> dict[str, Any]:
        if self.downloads is None:
            self._record("ui/download-file", {"outcome": "no place to save"})
            return {"isError": True}
        saved, outcome = await self.downloads.save(params, self._read_own)
        self._record("ui/download-file", {"files": saved, "outcome": outcome})
        return {} if saved else {"isError": True}

    async def _read_own(self, uri: str) -> list[ContentBlock]:
        """A linked file's contents: read from the View's own server."""
        return list(await self.hub.read_resource(self.server, uri))

    def notify(self, method: str, params: Mapping[str, Any], /) -> None:
        if method == "notifications/message":
            from ...mcp_client.logs import LogEntry

            level = params.get("level")
            logger_name = params.get("logger")
            self.hub.add_log(self.server, LogEntry(
                level=level if isinstance(level, str) and level in _LEVELS else "info", data=params.get("data"),
                logger=f"view {logger_name}" if isinstance(logger_name, str) else "view"))
            return
        if method == "ui/open-link":
            url = params.get("url")
            self._record("ui/open-link", {"url": url if isinstance(url, str) else ""})
        elif method == "ui/resource-teardown":
            self._record("ui/resource-teardown", {})
        elif method == "ui/request-display-mode":
            self._record("ui/request-display-mode",
                         {"mode": str(params.get("mode")), "granted": str(params.get("granted"))})
        elif method == "synapse/view-problem":
            text = str(params.get("text", ""))[:300]
            self.router.record(ServerEvent(server=self.server, event="app_view_problem",
                                           detail={"view": self.resource_uri, "problem": text}))
            self.contexts.put(self.session, server=self.server, tool=self.tool, view=self.resource_uri, params={
                "content": [{"type": "text", "text": (
                f"The interactive view did not work for the user: {text}. Whatever its tool's result said, the "
                "user did not see a working view; say so if it matters to your answer.")}]})
        elif method == "ui/app-tools":  # the tools the View registered, as it listed them
            tools = params.get("tools")
            self._record("ui/app-tools", {"tools": list(tools) if isinstance(tools, list) else []})


def _resource_contents(uri: str, block: ContentBlock) -> dict[str, Any]:
    item: dict[str, Any] = {"uri": block.uri or uri}
    if block.mime_type:
        item["mimeType"] = block.mime_type
    if block.data is not None:
        item["blob"] = block.data
    else:
        item["text"] = block.text or ""
    return item
