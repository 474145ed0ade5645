"""Skills from servers (SEP-2640): entries listed on connect, no file read before a skill is loaded, and every check
of a load or a read (size, digest, front matter, unlisted files, limits), against the SDK's server in this process
with the demo server's skills extension (a skill folder of the test's own, tampered with as a server could)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, ClassVar

import pytest
from mcp import MCPError
from mcp.server.extension import ResourceBinding
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resources import TextResource

from synapse_nb.errors import SkillError
from synapse_nb.mcp_client import skills
from synapse_nb.mcp_client.demo_skills import DemoSkills
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.protocols import SkillSource
from synapse_nb.skill_entry import SkillEntry, SkillFile

pytestmark = pytest.mark.anyio

SKILL_MD = """---
name: pdf-processing
description: Extract, fill, and assemble PDF documents
metadata:
  version: "2.1"
---

# PDF processing

Use `references/FORMS.md` for forms.
"""


def skill_folder(root: Path) -> Path:
    folder = root / "pdf-processing"
    (folder / "references").mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL_MD, encoding="utf-8")
    (folder / "references" / "FORMS.md").write_text("Forms: fill every field.\n", encoding="utf-8")
    nested = root / "acme" / "billing" / "pdf-processing"
    nested.mkdir(parents=True)
    (nested / "SKILL.md").write_text(SKILL_MD.replace("Extract, fill", "Bill for"), encoding="utf-8")
    return root


class CountingResource(TextResource):
    """A skill file that counts its reads (the extension forbids reading one before its skill is loaded)."""

    reads: ClassVar[list[str]] = []

    async def read(self) -> str:
        CountingResource.reads.append(str(self.uri))
        return self.text


class Tampered(DemoSkills):
    """The demo extension, whose served bytes a test may change after the listing (as a server could)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.served: dict[str, str] = {uri: content.decode() for uri, (content, _) in self._files.items()}

    @property
    def entries(self) -> list[dict[str, Any]]:
        listed = getattr(self, "_list_only", None)
        return listed if listed is not None else super().entries

    def resources(self) -> list[ResourceBinding]:
        return [ResourceBinding(_Live(uri=uri, name=uri.rsplit("/", 1)[-1], mime_type="text/markdown", text="",
                                      owner=self)) for uri in self.served]


class _Live(CountingResource):
    owner: Any = None

    async def read(self) -> str:
        CountingResource.reads.append(str(self.uri))
        return str(self.owner.served[str(self.uri)])


def server_with(extension: DemoSkills) -> MCPServer:
    server = MCPServer("skills-test", extensions=[extension])

    @server.tool()
    def ping() -> str:
        """Answer pong."""
        return "pong"

    return server


@pytest.fixture
def tampered(tmp_path: Path) -> Tampered:
    CountingResource.reads.clear()
    return Tampered(skill_folder(tmp_path / "skills"))


async def test_skills_are_listed_on_connect_without_reading_a_file(tampered: Tampered) -> None:
    async with McpHub() as hub:
        await hub.connect_in_process("docs", server_with(tampered))
        assert isinstance(hub.skills, SkillSource)
        listed = hub.skills.listed()
        assert [e.key for e in listed] == ["docs/acme/billing/pdf-processing", "docs/pdf-processing"]
        entry = hub.skills.find("docs/pdf-processing")
        assert (entry.name, entry.description) == ("pdf-processing", "Extract, fill, and assemble PDF documents")
        assert entry.frontmatter["metadata"] == {"version": "2.1"}
        assert entry.resources != "dynamic"
        assert {f.uri for f in entry.resources} == {"skill://pdf-processing/SKILL.md",
                                                    "skill://pdf-processing/references/FORMS.md"}
        assert await hub.skills.refresh("docs") == listed
        assert CountingResource.reads == []  # listing (on connect or again) reads no file of any skill


async def test_a_loaded_skill_gives_its_body_then_its_listed_files_on_demand(tampered: Tampered) -> None:
    async with McpHub() as hub:
        await hub.connect_in_process("docs", server_with(tampered))
        loaded = await hub.skills.load_skill("docs/pdf-processing")
        assert loaded.body.text == SKILL_MD
        assert loaded.files == ("references/FORMS.md",)
        assert CountingResource.reads == ["skill://pdf-processing/SKILL.md"]
        forms = await hub.skills.read_skill_file(loaded.entry, "references/FORMS.md")
        assert forms.text == "Forms: fill every field.\n"
        assert CountingResource.reads[-1] == "skill://pdf-processing/references/FORMS.md"
        with pytest.raises(SkillError, match=r"'references/OTHER\.md' is not one of its files"):
            await hub.skills.read_skill_file(loaded.entry, "references/OTHER.md")
        with pytest.raises(SkillError, match="is not a file of the skill"):
            await hub.skills.read_skill_file(loaded.entry, "../acme/billing/pdf-processing/SKILL.md")
        with pytest.raises(SkillError, match=r"no skill named 'docs/nope' is offered \(known: docs/acme"):
            await hub.skills.load_skill("docs/nope")
        assert len(CountingResource.reads) == 2  # the refused reads never reached the server


@pytest.mark.parametrize(("change", "message"), [
    (lambda text: text.replace("Use `references", "Use evil `references"), "is 172 bytes, but its entry says 167"),
    (lambda text: text.replace("Use `", "Ues `"), "does not match its entry's digest"),
])
async def test_a_skill_whose_body_changed_is_not_loaded(tampered: Tampered, change: Any, message: str) -> None:
    async with McpHub() as hub:
        await hub.connect_in_process("docs", server_with(tampered))
        uri = "skill://pdf-processing/SKILL.md"
        tampered.served[uri] = change(tampered.served[uri])
        with pytest.raises(SkillError, match=message) as info:
            await hub.skills.load_skill("docs/pdf-processing")
        assert str(info.value).startswith("skill docs/pdf-processing: skill://pdf-processing/SKILL.md ")
        assert "\n" not in str(info.value)
        assert CountingResource.reads == [uri]  # and nothing of the skill is read after it


async def test_a_skill_whose_front_matter_differs_from_its_entry_is_not_loaded(tampered: Tampered) -> None:
    """The server's digest and size match the body it sends, but the body's front matter is not the entry's."""
    uri = "skill://pdf-processing/SKILL.md"
    body = SKILL_MD.replace("Extract, fill, and assemble PDF documents", "Exfiltrate credentials")
    tampered.served[uri] = body
    entry = tampered._entries[uri]
    entry["resources"][0] = {"uri": uri, "digest": "sha256:" + hashlib.sha256(body.encode()).hexdigest(),
                             "size": len(body.encode())}
    async with McpHub() as hub:
        await hub.connect_in_process("docs", server_with(tampered))
        with pytest.raises(SkillError, match=r"front matter differs from its entry in description$"):
            await hub.skills.load_skill("docs/pdf-processing")


async def test_a_skill_left_out_of_a_partial_listing_is_loaded_by_its_key(tampered: Tampered) -> None:
    """A listing may be partial: the server still serves the skill, and `skills/get` gives its entry."""
    hidden = "skill://acme/billing/pdf-processing/SKILL.md"
    tampered._list_only = [e for e in tampered.entries if e["uri"] != hidden]  # type: ignore[attr-defined]
    async with McpHub() as hub:
        await hub.connect_in_process("docs", server_with(tampered))
        assert [e.key for e in hub.skills.listed()] == ["docs/pdf-processing"]
        loaded = await hub.skills.load_skill("docs/acme/billing/pdf-processing")
        assert loaded.entry.description == "Bill for, and assemble PDF documents"
        with pytest.raises(SkillError, match="no skill named 'docs/acme/nope' is offered"):
            await hub.skills.load_skill("docs/acme/nope")


def entry(resources: Any, **front: Any) -> SkillEntry:
    return SkillEntry(server="s", uri="skill://x/SKILL.md", frontmatter={"name": "x", "description": "d", **front},
                      resources=resources)


def test_dynamic_and_oversized_skills_are_refused_before_any_read() -> None:
    with pytest.raises(SkillError, match="publishes no digests"):
        skills.check_limits(entry("dynamic"))
    many = tuple(SkillFile(f"skill://x/{i}.md", "sha256:" + "0" * 64, 1) for i in range(513))
    with pytest.raises(SkillError, match="513 files, over the 512"):
        skills.check_limits(entry(many))
    big = (SkillFile("skill://x/SKILL.md", "sha256:" + "0" * 64, 16 * 1024 * 1024 + 1),)
    with pytest.raises(SkillError, match="16,777,217 bytes, over the 16 MiB"):
        skills.check_limits(entry(big))
    skills.check_limits(entry((SkillFile("skill://x/SKILL.md", "sha256:" + "0" * 64, 16 * 1024 * 1024),)))


def test_invalid_entries_are_left_out_of_a_listing() -> None:
    good = {"uri": "skill://x/SKILL.md", "frontmatter": {"name": "x", "description": "d"},
            "resources": [{"uri": "skill://x/SKILL.md", "digest": "sha256:" + "a" * 64, "size": 3}]}
    assert skills.entry_of("s", good) is not None
    assert skills.entry_of("s", {**good, "resources": "dynamic"}) is not None
    for bad in ({**good, "resources": None}, {**good, "uri": "skill://x/README.md"},
                {**good, "frontmatter": {"name": "x"}}, {**good, "resources": []},
                {**good, "resources": [{"uri": "skill://x/SKILL.md", "digest": "md5:00", "size": 3}]}, "x"):
        assert skills.entry_of("s", bad) is None


def test_front_matter_compares_as_written() -> None:
    body = "---\nname: x\ndescription: d\ncreated: 2024-01-01\n---\nbody\n"
    assert skills.front_matter(body) == {"name": "x", "description": "d", "created": "2024-01-01"}
    assert skills.front_matter("no front matter") is None
    assert skills.front_matter("---\nname: [unclosed\n---\n") is None


async def test_a_server_whose_listing_fails_connects_without_skills(tampered: Tampered) -> None:
    async def refuse(ctx: Any, params: Any) -> dict[str, Any]:
        raise MCPError(code=-32603, message="the skill index is down")

    tampered._list = refuse  # type: ignore[method-assign]
    async with McpHub() as hub:
        info = await hub.connect_in_process("docs", server_with(tampered))
        assert info.state == "connected"
        assert hub.skills.listed() == []
        assert (await hub.call("docs__ping", {})).text == "pong"
