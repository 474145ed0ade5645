"""AppHost: what an MCP Apps View may ask of the kernel, as one small protocol the hub side implements.

The View's requests arrive as the MCP Apps wire objects (JSON-RPC `params`), already checked against the
spec's schemas by the browser-side bridge, and the answers go back as wire results. The implementation
decides what is allowed: only the View's own server, only tools whose `_meta.ui.visibility` includes
`"app"`, the same approval policy as the agent's calls; and it records what it does. A method that
raises answers the View with a JSON-RPC error carrying the exception's message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

__all__ = ["AppHost", "DisplayMode", "REQUESTS"]

DisplayMode = Literal["inline", "fullscreen", "pip"]

REQUESTS = frozenset({"tools/call", "resources/read", "ui/message", "ui/update-model-context", "ui/download-file"})
"""The View-initiated requests the kernel answers (everything else the bridge or the browser handles: the page
grants display modes, and tells the kernel what it granted as a notification)."""


class AppHost(Protocol):
    """The kernel side of one View: its server's tools and resources, and the session it lives in."""

    async def call_tool(self, name: str, arguments: Mapping[str, Any], /) -> dict[str, Any]:
        """`tools/call` from the View: the server's CallToolResult as a wire dict (`content`, `isError`...)."""
        ...

    async def read_resource(self, uri: str, /) -> dict[str, Any]:
        """`resources/read` from the View: the server's ReadResourceResult as a wire dict (`contents`)."""
        ...

    async def message(self, params: Mapping[str, Any], /) -> dict[str, Any]:
        """`ui/message`: a user turn (`role`, `content`) from the View; `{}`, or `{"isError": True}` if refused."""
        ...

    async def update_model_context(self, params: Mapping[str, Any], /) -> dict[str, Any]:
        """`ui/update-model-context`: context (`content`, `structuredContent`) for the next turn; last write wins."""
        ...

    async def download_file(self, params: Mapping[str, Any], /) -> dict[str, Any]:
        """`ui/download-file`: save the files (`contents`: embedded resources or links to the server's own
        resources) once the user agreed; `{}`, or `{"isError": True}` when refused or failed."""
        ...

    def notify(self, method: str, params: Mapping[str, Any], /) -> None:
        """A notification from the View or its frame: `notifications/message` (a log line), `ui/open-link`
        (opened by the browser; told here to be recorded), `ui/resource-teardown` (the view was removed),
        `ui/request-display-mode` (`mode` asked, `granted` by the page), `synapse/view-problem` (`text`: the
        page saw the View fail to load, or its policy refuse something), `ui/app-tools` (the names of the tools the
        View registered, as it listed them)."""
        ...
