"""`%mcp read SERVER URI` and `%mcp prompt SERVER NAME [k=v ...]`: a server's resources and prompts by hand."""

from __future__ import annotations

import html
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ...errors import SynapseError
from ...types import ContentBlock, ToolResult
from ..args import parse_pairs
from ..usage import usage_error
from .mcp import _server

if TYPE_CHECKING:
    from ...mcp_client.info import PromptResult
    from ..state import SynapseState

__all__ = ["PromptOutput", "ReadOutput", "prompt_async", "read_async", "run"]


@dataclass(frozen=True)
class ReadOutput:
    """What `%mcp read` shows: the resource's contents (text, or images and blob sizes)."""

    server: str
    uri: str
    contents: tuple[ContentBlock, ...]

    @property
    def text(self) -> str:
        """The text of the resource (its text contents, joined)."""
        return ToolResult(content=self.contents).text

    def __repr__(self) -> str:
        return f"{self.server} {self.uri}\n{self.text}"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        parts = [f"<div><code>{html.escape(self.server)}</code> <code>{html.escape(self.uri)}</code></div>"]
        if self.text:
            parts.append(f"<pre>{html.escape(self.text)}</pre>")
        for block in self.contents:
            if block.kind == "image" and block.data:
                parts.append(f'<img src="data:{block.mime_type or "image/png"};base64,{block.data}"/>')
        return {"text/plain": repr(self), "text/html": "".join(parts)}


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
        parts = [f"<div><code>{html.escape(self.server)}.{html.escape(self.name)}</code></div>"]
        for message in self.result.messages:
            parts.append(f"<div><b>{html.escape(message.role)}</b><pre>{html.escape(message.content)}</pre></div>")
        return {"text/plain": repr(self), "text/html": "".join(parts)}


async def read_async(state: SynapseState, server: str, uri: str) -> ReadOutput:
    """`%mcp read SERVER URI`: read one resource of a connected server."""
    _server(state, server)
    try:
        contents = await state.hub.read_resource(server, uri)
    except SynapseError as exc:
        raise usage_error(exc) from None
    return ReadOutput(server, uri, contents)


async def prompt_async(state: SynapseState, server: str, name: str, arguments: Mapping[str, str]) -> PromptOutput:
    """`%mcp prompt SERVER NAME [k=v ...]`: render one prompt template of a server.

    The prompt and its required arguments are checked against the server's listing first, so a typo
    gets the list of prompts and a missing argument its name, not the server's error."""
    _server(state, server)
    try:
        listed = {p.name: p for p in await state.hub.list_prompts(server)}
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
        result = await state.hub.get_prompt(server, name, arguments)
    except SynapseError as exc:
        raise usage_error(exc) from None
    return PromptOutput(server, name, dict(arguments), result)


def run(state: SynapseState, sub: str, words: Sequence[str]) -> Coroutine[Any, Any, ReadOutput | PromptOutput]:
    """Parse `%mcp read` / `%mcp prompt` words (UsageError at once on bad input) into the command to await."""
    if sub == "read":
        if len(words) != 2:
            raise UsageError("%mcp read: name a server and a resource URI, e.g. %mcp read demo demo://schema")
        return read_async(state, words[0], words[1])
    if len(words) < 2:
        raise UsageError("%mcp prompt: name a server and a prompt, e.g. %mcp prompt demo explore_table table=orders")
    arguments = parse_pairs(words[2:], "%mcp prompt", "table=orders")
    return prompt_async(state, words[0], words[1], arguments)
