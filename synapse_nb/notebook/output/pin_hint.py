"""The line that says how to pin a server's protocol revision, when what it answered says a feature is
unavailable on the revision the connection speaks (fastmcp's and the SDK's `ctx.elicit` on 2026-07-28:
"elicitation via server-initiated requests is unavailable on 2026-07-28 connections")."""

from __future__ import annotations

import re

from .markup import Html

__all__ = ["pin_hint", "pin_hint_html"]

_UNAVAILABLE = re.compile(r"\b(?:unavailable|not available|not supported|unsupported) (?:on|in|over) "
                          r"(?:protocol |revision )?(?P<rev>20\d\d-\d\d-\d\d)\b", re.IGNORECASE)
_HEAD = 2_000
"""Characters of a result or error read for that sentence: it is a short message, and a result of 50,000 rows read
whole at every refresh of a turn's display cost a second of the turn."""
PIN_TO = "2025-11-25"
"""The revision to pin to: the handshake era, where a server may send the user its questions itself."""


def pin_hint(server: str | None, text: str) -> str | None:
    """`… pin it: %mcp connect NAME --protocol 2025-11-25 …` when `text` (a result or an error of `server`)
    says something is unavailable on a newer revision; None otherwise (and for tools of no server)."""
    found = _UNAVAILABLE.search(text, 0, _HEAD) if server else None
    if found is None or found.group("rev") <= PIN_TO:
        return None
    return (f"{server} cannot do this on protocol {found.group('rev')}; pin it to {PIN_TO}: "
            f"%mcp connect {server} --protocol {PIN_TO} -- COMMAND (or URL), or \"protocol\": \"{PIN_TO}\" in its "
            "config entry")


def pin_hint_html(server: str | None, text: str) -> Html:
    """pin_hint as a line of HTML (empty when there is none)."""
    hint = pin_hint(server, text)
    if hint is None:
        return Html()
    return Html('<div class="snb-pin-hint" style="margin:4px 0;font-size:12px">&#9432; {}</div>').format(hint)
