"""A server's tools: listing them page by page, and listing them again whenever the server says they changed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import anyio
import anyio.abc
import mcp.types as mt
from mcp import Client
from mcp.shared.subscriptions import ResourcesListChanged, ToolsListChanged

from .convert import RawTool, raw_tool
from .failure import describe

__all__ = ["LIST_TIMEOUT", "list_tools", "listen", "refresh_tools"]

logger = logging.getLogger("synapse_nb.mcp")

LIST_TIMEOUT = 30.0
"""Seconds a re-listing after a change notification may take before the old list is kept."""
_PAGE_CAP = 100


async def list_tools(client: Client) -> tuple[RawTool, ...]:
    if client.server_capabilities.tools is None:
        return ()
    tools: list[mt.Tool] = []
    cursor: str | None = None
    for _ in range(_PAGE_CAP):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(raw_tool(t) for t in tools)


async def listen(
    client: Client, dirty: asyncio.Event, server: str, *, tools: bool = True,
    on_resources: Callable[[], None] | None = None,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """On the 2026-07-28 protocol list changes arrive on a `subscriptions/listen` stream: tool changes set
    `dirty` (when `tools`), resource changes call `on_resources` (when given)."""
    try:
        async with client.listen(tools_list_changed=tools, resources_list_changed=on_resources is not None) as sub:
            task_status.started()
            async for event in sub:
                if isinstance(event, ToolsListChanged):
                    dirty.set()
                elif isinstance(event, ResourcesListChanged) and on_resources is not None:
                    on_resources()
    except Exception as exc:  # a lost subscription only costs live list updates; calls still work
        logger.debug("MCP server %r: list change subscription ended: %r", server, exc)
    with contextlib.suppress(RuntimeError):  # started() already called
        task_status.started()


async def refresh_tools(
    client: Client, dirty: asyncio.Event, server: str, apply: Callable[[tuple[RawTool, ...]], bool],
) -> None:
    """List the tools again each time `dirty` is set; `apply` takes the new list, or returns False when stale."""
    while True:
        await dirty.wait()
        dirty.clear()
        try:
            with anyio.fail_after(LIST_TIMEOUT):
                tools = await list_tools(client)
        except Exception as exc:  # a failed refresh keeps the old list; a dead server is noticed elsewhere
            logger.warning("MCP server %r: could not refresh its tools: %s", server, describe(exc))
            continue
        if not apply(tools):
            return
