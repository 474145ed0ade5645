"""The demo server's skills (SEP-2640, `io.modelcontextprotocol/skills`): the skill folders of `demo_skills/`,
each file a `skill://` resource, listed by `skills/list` and `skills/get` with every file's digest and size.

    build_server(skills=DemoSkills.bundled())   # what demo_server does
    DemoSkills(Path("my-skills"))                # any folder of skill folders (each with a SKILL.md)

A server-side reference for the tests and the demo, built on the SDK's server extension seam (`MethodBinding`,
`ResourceBinding`): the SDK has no skills support of its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import mcp.types as mt
from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp.server.extension import Extension, MethodBinding, ResourceBinding
from mcp.server.mcpserver.resources import TextResource

from .skills import front_matter

__all__ = ["SKILLS_EXTENSION", "DemoSkills"]

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
_PAGE = 50


class _GetParams(mt.RequestParams):
    uri: str


class DemoSkills(Extension):
    """Serves every skill folder under `root` (a folder holding a SKILL.md) as the extension says."""

    identifier = SKILLS_EXTENSION

    def __init__(self, root: Path, *, add_files: bool = True) -> None:
        """`add_files=False`: the server adds `file_resources()` itself, where it wants them in its listing."""
        self.root = root
        self.add_files = add_files
        self._entries: dict[str, dict[str, Any]] = {}
        self._files: dict[str, tuple[bytes, str]] = {}  # uri -> (content, MIME type)
        for skill_md in sorted(root.rglob("SKILL.md")):
            self._add(skill_md.parent)

    @classmethod
    def bundled(cls, *, add_files: bool = True) -> DemoSkills:
        """The skills shipped in the wheel (`synapse_nb/mcp_client/demo_skills/`)."""
        return cls(Path(str(resources.files(__package__ or "synapse_nb.mcp_client").joinpath("demo_skills"))),
                   add_files=add_files)

    def _add(self, folder: Path) -> None:
        path = folder.relative_to(self.root).as_posix()
        uri = f"skill://{path}/SKILL.md"
        data = (folder / "SKILL.md").read_bytes()
        front = front_matter(data.decode("utf-8"))
        if front is None:
            raise ValueError(f"{folder / 'SKILL.md'} has no YAML front matter: every skill needs its name and "
                             "description there")
        files = []
        for file in sorted(p for p in folder.rglob("*") if p.is_file()):
            content = file.read_bytes()
            file_uri = f"skill://{path}/{file.relative_to(folder).as_posix()}"
            files.append({"uri": file_uri, "digest": "sha256:" + hashlib.sha256(content).hexdigest(),
                          "size": len(content)})
            self._files[file_uri] = (content, "text/markdown" if file.suffix == ".md" else "text/plain")
        self._entries[uri] = {"uri": uri, "frontmatter": front, "resources": files}

    @property
    def entries(self) -> list[dict[str, Any]]:
        return [self._entries[uri] for uri in sorted(self._entries)]

    def resources(self) -> Sequence[ResourceBinding]:
        return [ResourceBinding(r) for r in self.file_resources()] if self.add_files else []

    def file_resources(self) -> list[TextResource]:
        """Every file of every skill as a `skill://` resource (a SKILL.md named and described by its front matter)."""
        found = []
        for uri, (content, mime) in self._files.items():
            front = self._entries.get(uri, {}).get("frontmatter", {})
            found.append(TextResource(
                uri=uri, name=front.get("name", uri.rsplit("/", 1)[-1]), description=front.get("description"),
                mime_type=mime, text=content.decode("utf-8")))
        return found

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding(method="skills/list", params_type=mt.PaginatedRequestParams, handler=self._list),
            MethodBinding(method="skills/get", params_type=_GetParams, handler=self._get),
        )

    async def _list(self, ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams) -> dict[str, Any]:
        start = int(params.cursor) if params is not None and params.cursor and params.cursor.isdigit() else 0
        page = self.entries[start:start + _PAGE]
        result: dict[str, Any] = {"skills": page, "ttlMs": 0, "cacheScope": "public"}
        if start + _PAGE < len(self._entries):
            result["nextCursor"] = str(start + _PAGE)
        return result

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: _GetParams) -> dict[str, Any]:
        entry = self._entries.get(params.uri)
        if entry is None:
            raise MCPError(code=mt.INVALID_PARAMS, message=f"No skill is served at {params.uri}")
        return {"skill": entry, "ttlMs": 0, "cacheScope": "public"}
