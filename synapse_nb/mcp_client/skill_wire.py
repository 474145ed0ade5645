"""The wire shapes of the skills extension (SEP-2640, `io.modelcontextprotocol/skills`; specification
`specification/stable/skills.mdx` of modelcontextprotocol/ext-skills) as typed SDK requests and results.

The SDK has no skills support (python-sdk PR #3485 is open), so `skills/list` and `skills/get` are declared here on
the SDK's bases and go out through `ClientSession.send_request`, which stamps them like any request. The entries of
a result stay plain JSON here: skills.py checks each one (an invalid entry is dropped, never loaded).
"""

from __future__ import annotations

from typing import Any, Literal

import mcp.types as mt
from mcp.client import ClientExtension, advertise
from pydantic import Field

__all__ = ["SKILLS_EXTENSION", "GetSkill", "GetSkillParams", "GetSkillResult", "ListSkills", "ListSkillsResult",
           "skills_extension"]

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
"""The extension's identifier: servers declare it in their capabilities, this client in its own."""


def skills_extension() -> ClientExtension:
    """The client's declaration of the extension (no settings are defined for clients): servers that load
    skills through a tool for plain hosts may leave it out for a host that loads skills itself."""
    return advertise(SKILLS_EXTENSION, {})


class ListSkills(mt.PaginatedRequest[Literal["skills/list"]]):
    """`skills/list`: the skills the server serves, a page at a time."""

    method: Literal["skills/list"] = "skills/list"


class ListSkillsResult(mt.PaginatedResult):
    skills: list[Any] = Field(default_factory=list)


class GetSkillParams(mt.RequestParams):
    uri: str


class GetSkill(mt.Request[GetSkillParams, Literal["skills/get"]]):
    """`skills/get`: the entry of one skill, named by the URI of its SKILL.md."""

    method: Literal["skills/get"] = "skills/get"
    params: GetSkillParams


class GetSkillResult(mt.Result):
    skill: Any = None
