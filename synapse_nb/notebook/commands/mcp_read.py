"""`%mcp resources [NAME]`, `%mcp read SERVER URI [k=v ...]` and `%mcp prompt SERVER NAME [k=v ...]`: a server's
resources, resource templates and prompts by hand."""

from __future__ import annotations

from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ...errors import SynapseError
from ...mcp_client import uri_template
from ...types import ContentBlock
from ..output.calls import read_bundle, read_text, resource_parts
from ..output.markup import Html, join
from ..turns.view import size_text
from ..usage import usage_error
from .args import parse_pairs
from .servers import find_server

if TYPE_CHECKING:
    import pandas as pd

    from ...mcp_client.hub import McpHub
    from ...mcp_client.info import PromptResult

__all__ = ["RESOURCE_COLUMNS", "PromptOutput", "ReadOutput", "prompt_async", "read_async", "resources_async", "run"]

RESOURCE_COLUMNS = ("server", "kind", "uri", "name", "description", "mime_type", "variables")


@dataclass(frozen=True)
class ReadOutput:
    """What `%mcp read` returns and shows: each content item of the resource as what it is (notebook/output/calls.py):
    an MCP Apps View as one line saying which tool shows it, text capped with "show all", a blob by its MIME
    type and size (and its text, for text types). `.text` holds all the text, `.blobs` the blobs' bytes.

    `used_by` names the tools (`SERVER.TOOL`) whose MCP Apps View this resource is."""

    server: str
    uri: str
    contents: tuple[ContentBlock, ...]
    used_by: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The text of the resource: its text contents and its text-type blobs decoded, joined; other blobs
        as `[image/png, 2.1 KB]`."""
        texts = []
        for part in resource_parts(self.contents, self.uri):
            texts.append(part.text if part.text is not None else f"[{part.mime_type}, {size_text(part.size)}]")
        return "\n".join(texts)

    @property
    def blobs(self) -> tuple[bytes, ...]:
        """The decoded bytes of each blob content item, in order (text contents are in `.text`)."""
        return tuple(part.data for part in resource_parts(self.contents, self.uri) if part.data is not None)

    def __repr__(self) -> str:
        return read_text(self.server, self.uri, self.contents, self.used_by)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return read_bundle(self.server, self.uri, self.contents, self.used_by)


@dataclass(frozen=True)
class PromptOutput:
    """What `%mcp prompt` shows: the rendered prompt's messages (`.messages` to send them on)."""

    server: str
    name: str
    arguments: Mapping[str, str]
    result: PromptResult

    @property
    def messages(self) -> tuple[Any, ...]:
        return self.result.messages

    @property
    def text(self) -> str:
        """The messages' text, one `role: content` paragraph each."""
        return "\n\n".join(f"{m.role}: {m.content}" for m in self.result.messages)

    def __repr__(self) -> str:
        head = f"{self.server}.{self.name}" + (f" — {self.result.description}" if self.result.description else "")
        return f"{head}\n{self.text}"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        parts = [Html("<div><code>{}.{}</code></div>").format(self.server, self.name)]
        for message in self.result.messages:
            parts.append(Html("<div><b>{}</b><pre>{}</pre></div>").format(message.role, message.content))
        return {"text/plain": repr(self), "text/html": join(parts)}


async def resources_async(hub: McpHub | None, server: str | None = None) -> pd.DataFrame:
    """`%mcp resources [NAME]`: the resources and resource templates of one server (or of every usable one),
    a row each, every cell whole. A template's `uri` keeps its `{variables}`, named in `variables`:
    `%mcp read SERVER TEMPLATE name=value` fills them."""
    from ..output.listing import Listing

    if server is not None:
        find_server(hub, server)
    rows: list[dict[str, Any]] = []
    if hub is None:  # no server was ever connected
        return Listing(rows, columns=list(RESOURCE_COLUMNS))
    names = [server] if server is not None else [s.name for s in hub.servers if s.usable]
    try:
        for name in names:
            for r in await hub.list_resources(name):
                rows.append({"server": name, "kind": "resource", "uri": r.uri, "name": r.name,
                             "description": r.description or "", "mime_type": r.mime_type or "", "variables": ""})
            for t in await hub.list_resource_templates(name):
                rows.append({"server": name, "kind": "template", "uri": t.uri_template, "name": t.name,
                             "description": t.description or "", "mime_type": t.mime_type or "",
                             "variables": ", ".join(_variables(t.uri_template))})
    except SynapseError as exc:
        raise usage_error(exc) from None
    return Listing(rows, columns=list(RESOURCE_COLUMNS))


def _variables(template: str) -> list[str]:
    try:
        return uri_template.variables(template)
    except SynapseError:
        return []  # a template the SDK cannot parse is still listed; reading it says why


async def read_async(hub: McpHub | None, server: str, uri: str,
                     values: Mapping[str, str] | None = None) -> ReadOutput:
    """`%mcp read SERVER URI [k=v ...]`: read one resource of a connected server. A resource template
    (`demo://table/{name}`) is filled in from the `k=v` words first (RFC 6570); a variable left without a
    value is one UsageError line naming it, nothing is sent."""
    find_server(hub, server)
    assert hub is not None  # it has that server
    uri = _filled(server, uri, values or {})
    try:
        contents = await hub.read_resource(server, uri)
    except SynapseError as exc:
        raise usage_error(exc) from None
    return ReadOutput(server, uri, contents, _views_of(hub, server, uri))


def _filled(server: str, uri: str, values: Mapping[str, str]) -> str:
    """The URI to read: `uri` itself, or the template it is filled with `values`."""
    if not uri_template.is_template(uri):
        if values:
            raise UsageError(f"%mcp read: {uri} is no template, so {', '.join(values)}=... has nothing to fill; "
                             f"e.g. %mcp read {server} {uri}")
        return uri
    try:
        names = uri_template.variables(uri)
    except SynapseError as exc:
        raise UsageError(f"%mcp read: {exc}") from None
    try:
        return uri_template.expand(uri, values)
    except SynapseError as exc:
        example = " ".join(f"{n}={values.get(n, 'VALUE')}" for n in names)
        raise UsageError(f"%mcp read: {exc}; e.g. %mcp read {server} {uri} {example}") from None


def _views_of(hub: McpHub, server: str, uri: str) -> tuple[str, ...]:
    """The tools of `server` (as `SERVER.TOOL`) whose MCP Apps View is the resource `uri`. A tool's View is its
    ToolSpec's `ui.resource_uri` (MCP Apps, issue 24), read by name so that a spec without `ui` has none."""
    return tuple(
        f"{server}.{spec.original_name or spec.name}" for spec in hub.tools
        if spec.server == server and getattr(getattr(spec, "ui", None), "resource_uri", None) == uri
    )


async def prompt_async(hub: McpHub | None, server: str, name: str, arguments: Mapping[str, str]) -> PromptOutput:
    """`%mcp prompt SERVER NAME [k=v ...]`: render one prompt template of a server.

    The prompt and its required arguments are checked against the server's listing first, so a typo
    gets the list of prompts and a missing argument its name, not the server's error."""
    find_server(hub, server)
    assert hub is not None  # it has that server
    try:
        listed = {p.name: p for p in await hub.list_prompts(server)}
        prompt = listed.get(name)
        if prompt is None:
            known = ", ".join(listed) or "none"
            raise UsageError(f"%mcp prompt: server {server!r} has no prompt {name!r}; its prompts: {known}")
        missing = [a.name for a in prompt.arguments if a.required and a.name not in arguments]
        if missing:
            example = " ".join(f"{m}=VALUE" for m in missing)
            raise UsageError(
                f"%mcp prompt: {name} needs {', '.join(missing)}; e.g. %mcp prompt {server} {name} {example}"
            )
        result = await hub.get_prompt(server, name, arguments)
    except SynapseError as exc:
        raise usage_error(exc) from None
    return PromptOutput(server, name, dict(arguments), result)


def run(hub: McpHub | None, sub: str,
        words: Sequence[str]) -> Coroutine[Any, Any, ReadOutput | PromptOutput | pd.DataFrame]:
    """Parse `%mcp resources` / `%mcp read` / `%mcp prompt` words (UsageError at once on bad input) into the
    command to await."""
    if sub == "resources":
        if len(words) > 1:
            raise UsageError("%mcp resources: name at most one server, e.g. %mcp resources demo")
        return resources_async(hub, words[0] if words else None)
    if sub == "read":
        if len(words) < 2:
            raise UsageError("%mcp read: name a server and a resource URI, e.g. %mcp read demo demo://schema")
        values = parse_pairs(words[2:], "%mcp read", "%mcp read SERVER demo://table/{name} name=orders")
        return read_async(hub, words[0], words[1], values)
    if len(words) < 2:
        raise UsageError("%mcp prompt: name a server and a prompt, e.g. %mcp prompt demo explore_table table=orders")
    arguments = parse_pairs(words[2:], "%mcp prompt", "table=orders")
    return prompt_async(hub, words[0], words[1], arguments)
