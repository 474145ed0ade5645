"""`%mcp read SERVER URI` and `%mcp prompt SERVER NAME [k=v ...]`: a server's resources and prompts by hand."""

from __future__ import annotations

from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ...errors import SynapseError
from ...types import ContentBlock
from ..output.calls import read_bundle, read_text, resource_parts
from ..output.markup import Html, join
from ..turns.view import size_text
from ..usage import usage_error
from .args import parse_pairs
from .servers import find_server

if TYPE_CHECKING:
    from ...mcp_client.hub import McpHub
    from ...mcp_client.info import PromptResult

__all__ = ["PromptOutput", "ReadOutput", "prompt_async", "read_async", "run"]


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


async def read_async(hub: McpHub | None, server: str, uri: str) -> ReadOutput:
    """`%mcp read SERVER URI`: read one resource of a connected server."""
    find_server(hub, server)
    assert hub is not None  # it has that server
    try:
        contents = await hub.read_resource(server, uri)
    except SynapseError as exc:
        raise usage_error(exc) from None
    return ReadOutput(server, uri, contents, _views_of(hub, server, uri))


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


def run(hub: McpHub | None, sub: str, words: Sequence[str]) -> Coroutine[Any, Any, ReadOutput | PromptOutput]:
    """Parse `%mcp read` / `%mcp prompt` words (UsageError at once on bad input) into the command to await."""
    if sub == "read":
        if len(words) != 2:
            raise UsageError("%mcp read: name a server and a resource URI, e.g. %mcp read demo demo://schema")
        return read_async(hub, words[0], words[1])
    if len(words) < 2:
        raise UsageError("%mcp prompt: name a server and a prompt, e.g. %mcp prompt demo explore_table table=orders")
    arguments = parse_pairs(words[2:], "%mcp prompt", "table=orders")
    return prompt_async(hub, words[0], words[1], arguments)
