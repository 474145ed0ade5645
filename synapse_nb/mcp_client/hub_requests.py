"""The hub's requests that never restart a server: resources, prompts, log level, roots and subscriptions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from mcp import Client

from ..types import ContentBlock
from . import features
from .convert import prompt_info, prompt_result, resource_blocks, resource_info
from .hub_core import HubCore
from .info import PromptInfo, PromptResult, ResourceInfo
from .logs import LogEntry, check_level

__all__ = ["HubRequests"]


class HubRequests(HubCore):
    """McpHub's resource, prompt and client-feature requests (a crashed server is not restarted for these)."""

    async def list_resources(self, name: str) -> list[ResourceInfo]:
        async def run(client: Client) -> list[ResourceInfo]:
            if client.server_capabilities.resources is None:
                return []
            return [resource_info(r) for r in (await client.list_resources()).resources]

        return await self._request(name, run, "resources/list")

    async def read_resource(self, name: str, uri: str) -> tuple[ContentBlock, ...]:
        async def run(client: Client) -> tuple[ContentBlock, ...]:
            return resource_blocks(await client.read_resource(uri))

        return await self._request(name, run, f"resources/read {uri!r}")

    async def list_prompts(self, name: str) -> list[PromptInfo]:
        async def run(client: Client) -> list[PromptInfo]:
            if client.server_capabilities.prompts is None:
                return []
            return [prompt_info(p) for p in (await client.list_prompts()).prompts]

        return await self._request(name, run, "prompts/list")

    async def get_prompt(self, name: str, prompt: str, arguments: Mapping[str, str] | None = None) -> PromptResult:
        args = {k: str(v) for k, v in (arguments or {}).items()}

        async def run(client: Client) -> PromptResult:
            return prompt_result(await client.get_prompt(prompt, args))

        return await self._request(name, run, f"prompt {prompt!r}")

    # --- client features (handlers.py, features.py) -----------------------------------------------

    def logs(self, name: str, n: int | None = None, *, level: str = "debug") -> list[LogEntry]:
        """The server's last `n` log messages (all kept when None) at `level` or above, oldest first."""
        return self._conn(name).hooks.log_ring.tail(n, level)

    async def set_log_level(self, name: str, level: str) -> None:
        """Ask the server for log messages at `level` and above (they land in `logs(name)`).

        On a 2026-07-28 connection the level travels in each request's _meta, fixed when the client
        connects: there it applies from the next (re)connection."""
        conn = self._conn(name)
        conn.hooks.log_level = check_level(level)
        await self._request(name, lambda client: features.set_log_level(client, check_level(level)),
                            "logging/setLevel")

    def roots(self, name: str) -> tuple[Path, ...]:
        """The directories this client offers the server as roots."""
        return self._conn(name).hooks.roots

    async def set_roots(self, name: str, paths: Sequence[str | Path]) -> tuple[Path, ...]:
        """Replace the server's roots and tell it (notifications/roots/list_changed); returns them resolved."""
        conn = self._conn(name)
        roots = conn.hooks.set_roots(paths)
        await self._request(name, features.notify_roots_changed, "roots/list_changed")
        self._emit(name, "roots_changed", {"roots": [str(p) for p in roots]})
        return roots

    async def subscribe(self, name: str, uri: str) -> None:
        """Subscribe to a resource; its updates reach `handlers.on_resource_updated(server, uri)`."""
        await self._request(name, lambda client: features.subscribe(client, uri), f"resources/subscribe {uri!r}")

    async def unsubscribe(self, name: str, uri: str) -> None:
        await self._request(name, lambda client: features.unsubscribe(client, uri), f"resources/unsubscribe {uri!r}")
