"""Skills from servers (SEP-2640): listing a server's skill entries, and loading a skill or reading one of its
files with every check the extension requires.

A skill's files are read only when it is loaded (its SKILL.md) or when one of its files is asked for, never on
connecting or listing. What is read is verified against the entry held for the skill: its byte length against the
entry's `size`, its SHA-256 against the `digest`, and a SKILL.md's YAML front matter field by field against the
entry's `frontmatter`; a read of a file the entry does not list is refused. Any mismatch is a SkillError (one line:
the skill, the file, what differed) and nothing of the content is used. The functions taking a `Client` run as one
of the server's requests (inflight.py, under its deadline).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import posixpath
import re
from collections.abc import Mapping
from typing import Any

import mcp.types as mt
import yaml
from mcp import Client

from ..errors import SkillError
from ..skill_entry import LoadedSkill, SkillEntry, SkillFile, SkillText
from .skill_wire import SKILLS_EXTENSION, GetSkill, GetSkillParams, GetSkillResult, ListSkills, ListSkillsResult

__all__ = [
    "MAX_FILES",
    "MAX_TOTAL_BYTES",
    "check_frontmatter",
    "check_limits",
    "entry_of",
    "front_matter",
    "get_skill",
    "list_skills",
    "load",
    "offers_skills",
    "read_file",
    "resolve",
    "verify",
]

logger = logging.getLogger("synapse_nb.mcp")

MAX_FILES = 512
"""Resources per skill every host must accept (the extension's limit); a skill over it is not loaded."""
MAX_TOTAL_BYTES = 16 * 1024 * 1024
"""Total file size per skill every host must accept (16 MiB); a skill over it is not loaded."""
_PAGE_CAP = 100
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def offers_skills(client: Client) -> bool:
    """The server declared the extension (only then are `skills/list` and `skills/get` asked)."""
    extensions = client.server_capabilities.extensions or {}
    return SKILLS_EXTENSION in extensions


async def list_skills(client: Client, server: str) -> tuple[SkillEntry, ...]:
    """Every skill entry the server lists (all pages); invalid entries are left out, each logged."""
    entries: list[SkillEntry] = []
    cursor: str | None = None
    for _ in range(_PAGE_CAP):
        params = mt.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await client.session.send_request(ListSkills(params=params), ListSkillsResult)
        for raw in page.skills:
            entry = entry_of(server, raw)
            if entry is not None:
                entries.append(entry)
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(entries)


async def get_skill(client: Client, server: str, uri: str) -> SkillEntry:
    """The server's current entry for the skill at `uri` (`skills/get`); SkillError when it serves none there."""
    result = await client.session.send_request(GetSkill(params=GetSkillParams(uri=uri)), GetSkillResult)
    entry = entry_of(server, result.skill)
    if entry is None or entry.uri != uri:
        raise SkillError(f"MCP server {server!r} sent no valid entry for the skill {uri}", server=server, uri=uri)
    return entry


def entry_of(server: str, raw: Any) -> SkillEntry | None:
    """The SkillEntry of one JSON entry, None (logged) when it is not a valid entry: no `uri` of a SKILL.md, no
    front matter with a name and a description, or `resources` neither a list of files nor "dynamic"."""
    problem = _entry_problem(raw)
    if problem is not None:
        logger.warning("MCP server %r: a skill entry was left out: %s", server, problem)
        return None
    front = dict(raw["frontmatter"])
    if raw["resources"] == "dynamic":
        return SkillEntry(server=server, uri=raw["uri"], frontmatter=front, resources="dynamic")
    files = tuple(SkillFile(uri=f["uri"], digest=f["digest"], size=f["size"]) for f in raw["resources"])
    return SkillEntry(server=server, uri=raw["uri"], frontmatter=front, resources=files)


def _entry_problem(raw: Any) -> str | None:
    if not isinstance(raw, Mapping):
        return "it is not an object"
    uri = raw.get("uri")
    if not isinstance(uri, str) or not uri.endswith("/SKILL.md") or "://" not in uri:
        return f"its uri {uri!r} is not the URI of a SKILL.md"
    front = raw.get("frontmatter")
    if not isinstance(front, Mapping) or not all(isinstance(front.get(k), str) and front.get(k)
                                                  for k in ("name", "description")):
        return f"{uri}: its frontmatter has no name and description"
    resources = raw.get("resources")
    if resources == "dynamic":
        return None
    if not isinstance(resources, list):
        return f"{uri}: its resources are neither a list of files nor \"dynamic\""
    for f in resources:
        if not (isinstance(f, Mapping) and isinstance(f.get("uri"), str) and isinstance(f.get("digest"), str)
                and _DIGEST.match(f["digest"]) and isinstance(f.get("size"), int) and f["size"] >= 0):
            return f"{uri}: a file entry is not {{uri, digest: sha256:<64 hex>, size}}: {f!r}"[:300]
    if not any(f["uri"] == uri for f in resources):
        return f"{uri}: its resources do not list the SKILL.md itself"
    return None


def check_limits(entry: SkillEntry) -> None:
    """SkillError when the skill cannot be verified (dynamic) or is over the extension's limits, before any read."""
    where = f"skill {entry.key}"
    if entry.resources == "dynamic":
        raise SkillError(f"{where} is not loaded: its server publishes no digests for it (resources \"dynamic\"), "
                         "so its content cannot be verified", server=entry.server, uri=entry.uri)
    if len(entry.resources) > MAX_FILES:
        raise SkillError(f"{where} is not loaded: it has {len(entry.resources)} files, over the {MAX_FILES} a "
                         "skill may have", server=entry.server, uri=entry.uri)
    total = entry.total_size or 0
    if total > MAX_TOTAL_BYTES:
        raise SkillError(f"{where} is not loaded: its files total {total:,} bytes, over the 16 MiB a skill may "
                         "have", server=entry.server, uri=entry.uri)


async def read_file(client: Client, uri: str) -> bytes:
    """The raw bytes of one resource (a text item as UTF-8, a blob decoded); the item for `uri` first."""
    contents = (await client.read_resource(uri)).contents
    item = next((c for c in contents if str(c.uri) == uri), contents[0] if contents else None)
    if item is None:
        return b""
    if isinstance(item, mt.TextResourceContents):
        return item.text.encode("utf-8")
    try:
        return base64.b64decode(item.blob, validate=True)
    except binascii.Error:
        return item.blob.encode("utf-8")  # not base64: its digest will not match, and it is refused


def verify(entry: SkillEntry, uri: str, data: bytes) -> SkillText:
    """The file's text once its size and digest match the entry's record of it; SkillError otherwise."""
    listed = entry.file(uri)
    where = f"skill {entry.key}: {uri}"
    if listed is None:
        raise SkillError(f"{where} is not listed in the skill's entry, so it is not read", server=entry.server,
                         uri=uri)
    if len(data) != listed.size:
        raise SkillError(f"{where} is {len(data):,} bytes, but its entry says {listed.size:,}: the skill is not "
                         "used (the server changed or corrupted it; `%mcp skills` lists it afresh)",
                         server=entry.server, uri=uri)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    if digest != listed.digest:
        raise SkillError(f"{where} does not match its entry's digest: the skill is not used (the server changed or "
                         "corrupted it; `%mcp skills` lists it afresh)", server=entry.server, uri=uri)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
    return SkillText(uri=uri, text=text, size=len(data))


class _Loader(yaml.SafeLoader):
    """YAML without implicit timestamps: front matter compares with the entry's JSON, where a date is a string."""


_Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def front_matter(text: str) -> dict[str, Any] | None:
    """The YAML front matter of a SKILL.md as a mapping; None when it has none or it does not parse."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        return None
    try:
        parsed = yaml.load("\n".join(lines[1:end]), Loader=_Loader)  # a SafeLoader
    except yaml.YAMLError:
        return None
    return parsed if isinstance(parsed, dict) else None


def check_frontmatter(entry: SkillEntry, body: SkillText) -> None:
    """SkillError unless the SKILL.md's front matter equals the entry's, field by field."""
    parsed = front_matter(body.text)
    where = f"skill {entry.key}"
    if parsed is None:
        raise SkillError(f"{where} is not loaded: its SKILL.md has no YAML front matter to compare with its entry",
                         server=entry.server, uri=entry.uri)
    differ = sorted(k for k in {*parsed, *entry.frontmatter} if parsed.get(k) != entry.frontmatter.get(k))
    if differ:
        raise SkillError(f"{where} is not loaded: its SKILL.md's front matter differs from its entry in "
                         f"{', '.join(differ)}", server=entry.server, uri=entry.uri)


async def load(client: Client, entry: SkillEntry) -> LoadedSkill:
    """Load the skill: its limits checked, its SKILL.md read and verified (size, digest, front matter)."""
    check_limits(entry)
    body = verify(entry, entry.uri, await read_file(client, entry.uri))
    check_frontmatter(entry, body)
    root = entry.root + "/"
    listed = () if entry.resources == "dynamic" else entry.resources
    files = tuple(f.uri.removeprefix(root) for f in listed if f.uri != entry.uri and f.uri.startswith(root))
    return LoadedSkill(entry=entry, body=body, files=files)


def resolve(entry: SkillEntry, path: str) -> str:
    """The URI of a file of the skill named relative to its root (`references/FORMS.md`), or given whole;
    SkillError when the path leaves the skill's directory."""
    if "://" in path:
        return path
    clean = posixpath.normpath("/" + path.strip()).lstrip("/")
    if not clean or clean == "." or path.strip().startswith("..") or "/../" in f"/{path.strip()}/":
        raise SkillError(f"skill {entry.key}: {path!r} is not a file of the skill (name it relative to the skill's "
                         "root, e.g. references/GUIDE.md)", server=entry.server, uri=entry.uri)
    return f"{entry.root}/{clean}"
