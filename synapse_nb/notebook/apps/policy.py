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
_WASM = "wasmUnsafeEval"


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
    """The policy of the View's document, the specification's reference host's (ext-apps examples/basic-host):
    scripts inline, by eval and from `blob:` / `data:` URLs, workers from `blob:`, styles, fonts, images and
    media inline or from `blob:` / `data:`; plus the origins the resource declared for scripts, styles,
    images, fonts, media and workers (`resourceDomains`), network (`connectDomains`), nested frames
    (`frameDomains`) and `<base>` (`baseUriDomains`), and `'wasm-unsafe-eval'` when it asks for it
    (`wasmUnsafeEval`). What the reference host grants with `'self'` is left out: the frame has no origin of
    its own, and the notebook's is never the View's. Inside the sandboxed, origin-less frame the `blob:`,
    `data:` and eval sources only let the View run code it could already run inline; what it can reach is
    decided by the opaque origin and `connect-src`: with nothing declared, nothing outside its own HTML."""
    declared = declared or {}
    unknown = sorted(set(declared) - set(_KEYS) - {_WASM})
    if unknown:
        raise CspError(f"_meta.ui.csp has unknown keys {unknown}; expected {sorted({*_KEYS, _WASM})}")
    wasm = declared.get(_WASM, False)
    if not isinstance(wasm, bool):
        raise CspError(f"_meta.ui.csp.{_WASM} must be true or false, got {type(wasm).__name__}")
    found = {short: _sources(declared, key) for key, short in _KEYS.items()}
    resource, connect = found["resource"], found["connect"]
    inline = ("'unsafe-inline'", "blob:", "data:")

    def directive(name: str, *sources: str) -> str:
        return f"{name} {' '.join(sources) or _NONE}"

    return "; ".join([
        "default-src 'none'",
        directive("script-src", "'unsafe-inline'", "'unsafe-eval'", *(["'wasm-unsafe-eval'"] if wasm else []),
                  "blob:", "data:", *resource),
        directive("worker-src", "blob:", *resource),
        directive("style-src", *inline, *resource),
        directive("img-src", "data:", "blob:", *resource),
        directive("font-src", "data:", "blob:", *resource),
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
