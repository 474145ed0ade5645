"""Qualified tool names (`SERVER__TOOL`, DESIGN.md section 6): sanitising, truncating, resolving collisions."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable

__all__ = ["MAX_NAME", "SEPARATOR", "assign_names", "qualify", "sanitize"]

logger = logging.getLogger("synapse_nb.mcp")

MAX_NAME = 64
"""Both model APIs accept tool names matching ^[A-Za-z0-9_-]{1,64}$."""
SEPARATOR = "__"
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_HASH_LEN = 8


def sanitize(text: str) -> str:
    """Replace every character outside [A-Za-z0-9_-] with `_` (an empty text becomes `_`)."""
    return _INVALID.sub("_", text) or "_"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:_HASH_LEN]


def _fit(name: str, server: str, tool: str, suffix: str = "") -> str:
    """`name + suffix` within MAX_NAME; too long names keep their start and gain a stable hash."""
    if len(name) + len(suffix) <= MAX_NAME:
        return name + suffix
    tail = f"_{_digest(server, tool)}{suffix}"
    return name[: MAX_NAME - len(tail)] + tail


def qualify(server: str, tool: str) -> str:
    """The base qualified name of one server's tool, before collisions are resolved.

    >>> qualify("demo", "list_tables")
    'demo__list_tables'
    >>> qualify("my server", "get.weather")
    'my_server__get_weather'
    """
    return _fit(f"{sanitize(server)}{SEPARATOR}{sanitize(tool)}", server, tool)


def assign_names(entries: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Give every (server, tool) pair a unique qualified name, deterministically.

    Pairs are resolved in a fixed order (names that needed no change first, then by server and
    tool), so the result depends only on the set of pairs, not on the order servers connected in.
    The first pair of a colliding group keeps the base name; the others get `_2`, `_3`, ... (still
    within 64 characters), and a note is logged naming both originals.
    """
    names: dict[tuple[str, str], str] = {}
    owner: dict[str, tuple[str, str]] = {}
    for server, tool in sorted(set(entries), key=lambda p: (qualify(*p) != f"{p[0]}{SEPARATOR}{p[1]}", p)):
        base = qualify(server, tool)
        name, n = base, 1
        while name in owner:
            n += 1
            name = _fit(f"{sanitize(server)}{SEPARATOR}{sanitize(tool)}", server, tool, f"_{n}")
        if n > 1:
            first = owner[base]
            logger.info(
                "MCP tool names collide: %r on server %r and %r on server %r both become %r; "
                "the second is offered as %r",
                first[1], first[0], tool, server, base, name,
            )
        names[(server, tool)] = name
        owner[name] = (server, tool)
    return names
