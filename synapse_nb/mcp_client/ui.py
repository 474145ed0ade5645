"""MCP Apps on the client side: the extension this client advertises, and reading a View's `ui://` resource
(MIME-checked, `_meta.ui` of the read content item over the `resources/list` entry's) into a UiResource,
cached per connection (UiCache) until the server says its resources changed or the connection restarts.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp.types as mt
from mcp import Client, MCPError
from mcp.client import ClientExtension, advertise

from ..errors import UiResourceError
from ..types import APP_MIME_TYPE, UiResource

__all__ = ["EXTENSION_ID", "Fetched", "UiCache", "check_ui_uri", "fetch", "ui_extension", "view"]

EXTENSION_ID = "io.modelcontextprotocol/ui"
"""The MCP Apps extension (SEP-1865); servers list their UI tools to clients that advertise it."""
_PAGE_CAP = 100

logger = logging.getLogger("synapse_nb.mcp")


def ui_extension() -> ClientExtension:
    """The extension as `mcp.Client(extensions=[...])` advertises it: with the one View MIME type we render."""
    return advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})


def check_ui_uri(server: str, uri: str) -> None:
    """UiResourceError unless `uri` is a `ui://` URI (a View is never read from anywhere else)."""
    if not uri.startswith("ui://"):
        raise UiResourceError(
            f"MCP server {server!r}: {uri!r} is not a ui:// resource, so it cannot be shown as an MCP Apps view",
            server=server, uri=uri)


def _same_mime(found: str | None) -> bool:
    return found is not None and "".join(found.split()).lower() == APP_MIME_TYPE


@dataclass(frozen=True, slots=True)
class Fetched:
    """What the server sent for a View: the `_meta.ui` of its `resources/list` entry and the read contents."""

    listed: Mapping[str, Any]
    contents: tuple[mt.TextResourceContents | mt.BlobResourceContents, ...]


async def fetch(client: Client, uri: str) -> Fetched:
    """The SDK requests behind a View (run as one of the server's requests; `view` checks the answer)."""
    listed = await _listed_meta(client, uri)
    return Fetched(listed, tuple((await client.read_resource(uri)).contents))


def view(server: str, uri: str, fetched: Fetched) -> UiResource:
    """The View in `fetched`; UiResourceError (one line: server, URI, MIME type found) when it is not one."""
    check_ui_uri(server, uri)
    contents = fetched.contents
    item = next((c for c in contents if _same_mime(c.mime_type) and str(c.uri) == uri), None)
    item = item or next((c for c in contents if _same_mime(c.mime_type)), None)
    if item is None:
        found = ", ".join(sorted({c.mime_type or "no MIME type" for c in contents})) or "no content"
        raise UiResourceError(
            f"MCP server {server!r}: {uri} is served as {found}, not {APP_MIME_TYPE}, so it is not an MCP Apps view",
            server=server, uri=uri, mime_type=contents[0].mime_type if contents else None)
    meta = {**fetched.listed, **_ui_meta(item.meta)}
    return UiResource(
        uri=uri,
        html=_html(item, server, uri),
        mime_type=item.mime_type or APP_MIME_TYPE,
        csp=dict(meta["csp"]) if isinstance(meta.get("csp"), Mapping) else {},
        permissions=dict(meta["permissions"]) if isinstance(meta.get("permissions"), Mapping) else {},
        domain=meta["domain"] if isinstance(meta.get("domain"), str) else None,
        prefers_border=meta["prefersBorder"] if isinstance(meta.get("prefersBorder"), bool) else None,
    )


def _ui_meta(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    return dict(ui) if isinstance(ui, Mapping) else {}


async def _listed_meta(client: Client, uri: str) -> dict[str, Any]:
    """The `_meta.ui` of the `resources/list` entry for `uri` (empty when it is not listed there, or the server
    refuses the listing: the read item's own `_meta.ui` still counts)."""
    if client.server_capabilities.resources is None:
        return {}
    cursor: str | None = None
    for _ in range(_PAGE_CAP):
        try:
            page = await client.list_resources(cursor=cursor)
        except MCPError as exc:
            logger.debug("resources/list failed while reading %s: %s", uri, exc)
            return {}
        for resource in page.resources:
            if str(resource.uri) == uri:
                return _ui_meta(resource.meta)
        cursor = page.next_cursor
        if not cursor:
            break
    return {}


def _html(item: mt.TextResourceContents | mt.BlobResourceContents, server: str, uri: str) -> str:
    if isinstance(item, mt.TextResourceContents):
        return item.text
    try:
        return base64.b64decode(item.blob, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise UiResourceError(f"MCP server {server!r}: {uri} is a blob that is not UTF-8 HTML ({exc})",
                              server=server, uri=uri, mime_type=item.mime_type) from exc


class UiCache:
    """One connection's Views by URI. `clear()` when the server's resources change or it (re)connects; a read
    that started before a clear does not put its (maybe stale) answer back (`version` tells)."""

    def __init__(self) -> None:
        self._views: dict[str, UiResource] = {}
        self.version = 0

    def get(self, uri: str) -> UiResource | None:
        return self._views.get(uri)

    def put(self, resource: UiResource, version: int) -> None:
        """Keep `resource` if nothing was cleared since `version` was read."""
        if version == self.version:
            self._views[resource.uri] = resource

    def clear(self) -> None:
        self._views.clear()
        self.version += 1

    def __len__(self) -> int:
        return len(self._views)
