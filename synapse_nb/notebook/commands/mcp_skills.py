"""`%mcp skills [SERVER] [--refresh]`: the skills connected servers offer (SEP-2640), as a DataFrame.

Each row is one skill as its server's entry describes it: the name the model loads it by (`SERVER/PATH`), its
description, how many files and bytes it has, its SKILL.md's URI. No file of a skill is read to list it (the
extension forbids it): a skill's content is read when the model loads it in a turn (`skills__load`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ...errors import SynapseError
from .servers import find_server

if TYPE_CHECKING:
    import pandas as pd

    from ...mcp_client.hub import McpHub
    from ...skill_entry import SkillEntry

__all__ = ["SKILL_COLUMNS", "parse", "refresh_async", "skills"]

SKILL_COLUMNS = ("skill", "server", "name", "description", "files", "bytes", "uri")
USAGE = "%mcp skills [SERVER] [--refresh]"


def parse(words: list[str]) -> tuple[str | None, bool]:
    """(server or None, refresh) from the words after `%mcp skills`; UsageError naming the mistake."""
    refresh = "--refresh" in words
    rest = [w for w in words if w != "--refresh"]
    unknown = [w for w in rest if w.startswith("-")]
    if unknown:
        raise UsageError(f"%mcp skills: unknown option {unknown[0]!r}; usage: {USAGE}")
    if len(rest) > 1:
        raise UsageError(f"%mcp skills: name at most one server; usage: {USAGE}")
    return (rest[0] if rest else None), refresh


def skills(hub: McpHub | None, server: str | None = None) -> pd.DataFrame:
    """The skills the connected servers (or `server`) listed when they connected, one row each."""
    if server is not None:
        find_server(hub, server)
    return _frame(hub.skills.listed(server) if hub is not None else [])


async def refresh_async(hub: McpHub | None, server: str | None = None) -> pd.DataFrame:
    """The same, each server (or `server`) asked for its listing again first (`skills/list`)."""
    if hub is None:
        return _frame([])
    names = [find_server(hub, server).name] if server is not None else [
        s.name for s in hub.servers if s.state == "connected"]
    for name in names:
        try:
            await hub.skills.refresh(name)
        except SynapseError as exc:
            raise UsageError(f"%mcp skills: {exc}") from None
    return skills(hub, server)


def _frame(entries: list[SkillEntry]) -> pd.DataFrame:
    from ..output.listing import Listing

    rows = [{
        "skill": e.key, "server": e.server, "name": e.name, "description": e.description,
        "files": "dynamic" if e.resources == "dynamic" else len(e.resources), "bytes": e.total_size, "uri": e.uri,
    } for e in entries]
    return Listing(rows, columns=list(SKILL_COLUMNS))
