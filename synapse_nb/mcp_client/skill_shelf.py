"""SkillShelf: the skills the hub's connected servers offer (SEP-2640), by `SERVER/PATH`, and loading them.

Each connection lists its server's skills when it connects (only a server that declares the extension is asked,
and only for entries: no file is read then). The shelf names them `SERVER/PATH` (entry.key: a server's label and
the skill's path, so same-named skills of two servers, or of two paths of one, never shadow each other), loads
one on demand (skills.load: SKILL.md read and verified) and reads a loaded skill's other files only as its held
entry lists them. It satisfies `protocols.SkillSource`, which the agent's skill tools use.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Protocol, TypeVar

from mcp import Client

from ..errors import McpError, SkillError
from ..skill_entry import LoadedSkill, SkillEntry, SkillText
from . import skills
from .table import ConnectionTable

__all__ = ["SkillShelf"]

T = TypeVar("T")



class Requester(Protocol):
    """Runs one request on a named server (the hub's `_request`: bounded, never restarting the server)."""

    def __call__(self, name: str, run: Callable[[Client], Awaitable[T]], label: str) -> Awaitable[T]: ...


class SkillShelf:
    """The skills of the hub's connected servers: listed as they connect, loaded and read through `request`."""

    def __init__(self, table: ConnectionTable, request: Requester) -> None:
        self._table = table
        self._request = request

    def listed(self, server: str | None = None) -> list[SkillEntry]:
        """The skills the connected servers (or `server` alone) listed, in server order, then by path."""
        conns = [self._table.get(server)] if server is not None else list(self._table)
        return [e for c in conns if c.state.current == "connected" for e in sorted(c.skills, key=lambda e: e.path)]

    async def refresh(self, server: str) -> list[SkillEntry]:
        """List the server's skills afresh (`skills/list`) and keep that listing; [] for a server without skills."""
        conn = self._table.get(server)
        if not conn.offers_skills:
            return []
        found: tuple[SkillEntry, ...] = await self._request(
            server, partial(skills.list_skills, server=server), "skills/list")
        conn.skills = found
        return self.listed(server)

    def find(self, key: str) -> SkillEntry:
        """The listed skill named `key` (`SERVER/PATH`); SkillError naming the known ones when there is none."""
        for entry in self.listed():
            if entry.key == key:
                return entry
        known = ", ".join(e.key for e in self.listed()[:30]) or "none"
        server = key.split("/", 1)[0]
        raise SkillError(f"no skill named {key!r} is offered (known: {known})", server=server, uri=key)

    async def entry(self, server: str, uri: str) -> SkillEntry:
        """The entry of the skill at `uri` of `server`: the listed one, else the server's own (`skills/get`: a
        skill need not be listed to be served)."""
        conn = self._table.get(server)
        listed = next((e for e in conn.skills if e.uri == uri), None)
        if listed is not None:
            return listed
        got: SkillEntry = await self._request(
            server, partial(skills.get_skill, server=server, uri=uri), f"skills/get {uri!r}")
        return got

    async def load_skill(self, key: str) -> LoadedSkill:
        """Load the skill `key`: its SKILL.md read and verified against its entry (SkillError, one line, if not).

        A skill its server serves but did not list (a listing may be partial) is loaded by its key too: its entry
        is asked for (`skills/get` of `skill://PATH/SKILL.md`)."""
        try:
            entry = self.find(key)
        except SkillError:
            entry = await self._unlisted(key)
        loaded: LoadedSkill = await self._request(
            entry.server, partial(skills.load, entry=entry), f"skill {entry.key}")
        return loaded

    async def _unlisted(self, key: str) -> SkillEntry:
        """The entry of a skill not listed, from its server (`skills/get`); the SkillError of `find` when the server
        is unknown, offers no skills or serves none at that path."""
        server, _, path = key.partition("/")
        conn = self._table.find(server)
        if conn is None or not conn.offers_skills or not path:
            return self.find(key)
        try:
            return await self.entry(server, f"skill://{path}/SKILL.md")
        except McpError:
            return self.find(key)

    async def read_skill_file(self, entry: SkillEntry, path: str) -> SkillText:
        """One file of a loaded skill, named relative to its root, read and verified against the held `entry`
        (a file it does not list is refused unread)."""
        uri = skills.resolve(entry, path)
        if entry.file(uri) is None:
            listed = ", ".join(f.uri.removeprefix(entry.root + "/") for f in entry.resources
                               if f.uri != entry.uri) if entry.resources != "dynamic" else ""
            raise SkillError(f"skill {entry.key}: {path!r} is not one of its files (its files: {listed or 'none'})",
                             server=entry.server, uri=uri)
        data: bytes = await self._request(
            entry.server, partial(skills.read_file, uri=uri), f"resources/read {uri!r}")
        return skills.verify(entry, uri, data)
