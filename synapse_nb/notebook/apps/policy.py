"""The sandbox policy of an MCP Apps View: the Content-Security-Policy built from the resource's declared
domains (`_meta.ui.csp`), and the text a frontend without widgets shows instead of the View."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..output.calls import CALL_REST, capped_plain
from ..turns.render import Rest

__all__ = ["CspError", "content_security_policy", "fallback_text"]

# A CSP source the server may declare: a host source (`https://api.example.com`, `*.example.com:443`,
# `wss://x.example`) or a scheme source (`https:`). No quotes (keywords such as 'unsafe-eval' are the host's
# to grant), no separators that would start another source or directive, no bare `*`.
_SOURCE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:(?://)?)?(?:\*\.)?[a-z0-9.-]+(?::(?:\d{1,5}|\*))?(?:/[^\s;,'\"]*)?$"
                     r"|^[a-z][a-z0-9+.-]*:$", re.IGNORECASE)
_NONE = "'none'"
_KEYS = {
    "connectDomains": "connect",
    "resourceDomains": "resource",
    "frameDomains": "frame",
    "baseUriDomains": "base",
}


class CspError(ValueError):
    """A declared CSP domain that is not a plain source (it could widen the policy beyond what it names)."""


def _sources(declared: Mapping[str, Any], key: str) -> list[str]:
    value = declared.get(key)
    if value is None:
        return []
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise CspError(f"_meta.ui.csp.{key} must be a list of domains, got {type(value).__name__}")
    out: list[str] = []
    for item in value:
        if not isinstance(item, str) or not _SOURCE.match(item):
            raise CspError(f"_meta.ui.csp.{key} holds {item!r}, which is not a domain or scheme source")
        if item not in out:
            out.append(item)
    return out


def content_security_policy(declared: Mapping[str, Any] | None) -> str:
    """The policy of the View's document: inline scripts and styles of the resource itself, data/blob media,
    and only the origins the resource declared for network (`connectDomains`), scripts, styles, images,
    fonts and media (`resourceDomains`), nested frames (`frameDomains`) and `<base>` (`baseUriDomains`).
    With nothing declared, the View can load and reach nothing outside its own HTML."""
    declared = declared or {}
    unknown = sorted(set(declared) - set(_KEYS))
    if unknown:
        raise CspError(f"_meta.ui.csp has unknown keys {unknown}; expected {sorted(_KEYS)}")
    found = {short: _sources(declared, key) for key, short in _KEYS.items()}
    resource, connect = found["resource"], found["connect"]

    def directive(name: str, *sources: str) -> str:
        return f"{name} {' '.join(sources) or _NONE}"

    return "; ".join([
        "default-src 'none'",
        directive("script-src", "'unsafe-inline'", *resource),
        directive("style-src", "'unsafe-inline'", *resource),
        directive("img-src", "data:", "blob:", *resource),
        directive("font-src", "data:", *resource),
        directive("media-src", "data:", "blob:", *resource),
        directive("connect-src", *connect),
        directive("frame-src", *found["frame"]),
        directive("base-uri", *found["base"]),
        "form-action 'none'",
        "object-src 'none'",
    ])


def fallback_text(
    server: str, tool: str, resource_uri: str, result: Mapping[str, Any] | None, rest: Rest = CALL_REST,
) -> str:
    """What a saved notebook or a frontend without widgets shows: the tool's text result, capped as `%mcp
    call` caps its plain text (the last line says how much more there is and where: `rest`), then a line
    naming the interactive view and where it renders."""
    texts: list[str] = []
    for block in (result or {}).get("content") or []:
        if isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
    lines = [capped_plain("\n".join(texts), rest)] if texts else []
    lines.append(
        f"[{server}.{tool} has an interactive view ({resource_uri}): it renders in JupyterLab, Notebook 7 "
        "or VS Code with the kernel running; run the cell there to open it]"
    )
    return "\n".join(lines)
