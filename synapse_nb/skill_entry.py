"""A skill a connected MCP server offers (SEP-2640, `io.modelcontextprotocol/skills`): its entry, and what loading
it or reading one of its files gave, as plain values the agent and the notebook can hold."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["LoadedSkill", "SkillEntry", "SkillFile", "SkillText"]


@dataclass(frozen=True, slots=True)
class SkillFile:
    """One file of a skill as its entry lists it: the URI, the `sha256:<hex>` digest and the size in bytes."""

    uri: str
    digest: str
    size: int


@dataclass(frozen=True, slots=True)
class SkillEntry:
    """One skill a server serves, as `skills/list` or `skills/get` described it.

    Its identity is the pair (`server`, `uri`): two servers may serve the same URI, and they are two skills.
    `frontmatter` is the SKILL.md front matter as the entry carries it (`name` and `description` always);
    `resources` every file of the skill with its digest and size, or "dynamic" when the server cannot publish
    digests (such a skill has no content integrity, and this client does not load it).
    """

    server: str
    uri: str
    frontmatter: Mapping[str, Any]
    resources: tuple[SkillFile, ...] | Literal["dynamic"]

    @property
    def name(self) -> str:
        return str(self.frontmatter.get("name", ""))

    @property
    def description(self) -> str:
        return str(self.frontmatter.get("description", ""))

    @property
    def path(self) -> str:
        """The skill's path in its server's namespace: the URI without its scheme and `/SKILL.md`
        (`skill://acme/billing/refunds/SKILL.md` -> `acme/billing/refunds`)."""
        rest = self.uri.split("://", 1)[-1]
        return rest.removesuffix("/SKILL.md")

    @property
    def root(self) -> str:
        """The URI of the skill's directory, against which its relative references resolve."""
        return self.uri.removesuffix("/SKILL.md")

    @property
    def key(self) -> str:
        """How the model and `%mcp skills` name it: `SERVER/PATH`, unique across servers and within one."""
        return f"{self.server}/{self.path}"

    @property
    def total_size(self) -> int | None:
        """The bytes of all its files (None for a dynamic skill)."""
        return None if self.resources == "dynamic" else sum(f.size for f in self.resources)

    def file(self, uri: str) -> SkillFile | None:
        """The entry's record of the file at `uri`, None when the entry does not list it."""
        if self.resources == "dynamic":
            return None
        return next((f for f in self.resources if f.uri == uri), None)


@dataclass(frozen=True, slots=True)
class SkillText:
    """One verified file of a skill: its URI, its text and its size in bytes."""

    uri: str
    text: str
    size: int


@dataclass(frozen=True, slots=True)
class LoadedSkill:
    """A skill loaded into a turn: the entry it was verified against, and its SKILL.md (front matter included)."""

    entry: SkillEntry
    body: SkillText
    files: tuple[str, ...] = field(default=())
    """The paths of its other files, relative to its root (what the model may read next)."""
