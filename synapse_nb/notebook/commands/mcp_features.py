"""`%mcp logs`, `%mcp roots`, `%mcp subscribe` / `unsubscribe`: what a connected server logs, sees and watches."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ...errors import SynapseError
from ...mcp_client.logs import LEVELS, level_at_least
from ..usage import usage_error
from .options import Option, OptionSet

if TYPE_CHECKING:
    import pandas as pd

    from ..state import SynapseState

__all__ = ["LOG_COLUMNS", "logs", "parse_logs", "roots_async", "subscribe_async", "unsubscribe_async"]

LOG_COLUMNS = ("at", "level", "logger", "message")
_LOGS_USAGE = "%mcp logs NAME [-n N] [--level LEVEL | --stderr]"


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"takes a positive number, not {text!r}")
    return int(text)


LOGS_OPTIONS = OptionSet(_LOGS_USAGE, "%mcp help", (
    Option("name", "NAME"),
    Option("-n", "N", "the last N messages (default: all kept)", type=_positive),
    Option("--level", "LEVEL", "this level and above: {choices}", type=str.lower, choices=tuple(LEVELS)),
    Option("--stderr", help="what the server's process wrote to stderr since it started (the last 200 lines "
           "kept), its env and header values masked"),
))
"""`%mcp logs`' options, declared once (notebook/commands/options.py builds the parser and the help from them)."""


def parse_logs(words: Sequence[str]) -> tuple[str, int | None, str, bool]:
    """`NAME [-n N] [--level LEVEL | --stderr]` into (name, n, level, stderr); bad input is a one-line UsageError."""
    ns, rest = LOGS_OPTIONS.parse(words)
    if rest:
        raise UsageError(f"{_LOGS_USAGE}: unexpected {rest[0]!r}")
    if ns.name is None:
        raise UsageError(f"{_LOGS_USAGE}: name the server, e.g. %mcp logs demo -n 20")
    if ns.stderr and ns.level is not None:
        raise UsageError(f"{_LOGS_USAGE}: stderr lines have no level; drop --level or --stderr")
    return str(ns.name), ns.n, ns.level or "debug", bool(ns.stderr)


def logs(state: SynapseState, name: str, n: int | None = None, level: str = "debug",
         stderr: bool = False) -> pd.DataFrame | None:
    """The server's last log messages (at `level` or above), oldest first, as a DataFrame; None (and a
    hint) when there are none yet. With `stderr`, the last lines its process wrote to stderr instead."""
    import pandas as pd

    if stderr:
        _print_stderr(state, name, n)
        return None
    try:
        entries = state.hub.logs(name, n, level=level)
    except SynapseError as exc:
        raise usage_error(exc) from None
    if not entries:
        print(_no_logs(name, level, state.hub.asked_log_level(name)))
        return None
    rows = [{"at": e.at, "level": e.level, "logger": e.logger, "message": e.text} for e in entries]
    return pd.DataFrame(rows, columns=list(LOG_COLUMNS))


def _no_logs(name: str, level: str, asked: str | None) -> str:
    """What is true when no log message is kept: the level the server was asked for (a 2026-07-28 server sends
    nothing below it), and that nothing arrived at or above the level looked for."""
    stderr = f"see its stderr: %mcp logs {name} --stderr"
    more = f"ask for more with %mcp connect {name} --log-level debug ..., or {stderr}"
    if asked is None:
        return f"no log messages from {name} at {level} or above; it was asked for no level (it sends what it " \
               f"chooses); {more}"
    floor = level if level_at_least(level, asked) else asked
    return (f"no log messages from {name} at {floor} or above; it was asked for {asked} and above; "
            + (stderr if asked == "debug" else more))


def _print_stderr(state: SynapseState, name: str, n: int | None) -> None:
    from ...masking import SecretMask

    try:
        lines = state.hub.stderr(name, n)
    except SynapseError as exc:
        raise usage_error(exc) from None
    if not lines:
        print(f"{name} wrote nothing to stderr" + ("" if state.hub.server(name).transport == "stdio"
                                                    else " (only a command server has a stderr)"))
        return
    mask = SecretMask(state.secrets)  # the kernel's registered secrets too (the ring masked the server's own)
    print(f"{name} stderr (last {len(lines)} line{'s' if len(lines) != 1 else ''}):")
    for line in lines:
        print(mask.mask(line))


async def roots_async(state: SynapseState, name: str, paths: Sequence[str]) -> None:
    """Show the server's roots, or replace them with `paths` (the server is told the list changed; a server
    that was offered none is reconnected, as roots are declared at the handshake)."""
    try:
        if paths:
            missing = [p for p in paths if not _is_dir(p)]
            if missing:
                raise UsageError(f"%mcp roots {name}: {missing[0]!r} is not a directory; give existing folders")
            roots = await state.hub.set_roots(name, paths)
        else:
            roots = state.hub.roots(name)
    except SynapseError as exc:
        raise usage_error(exc) from None
    if not roots:
        print(f"{name} is offered no roots: it uses its own folders (e.g. those of its command line); "
              f"%mcp roots {name} DIR... offers some (it reconnects {name})")
        return
    print(f"roots of {name}:")
    for root in roots:
        print(f"  {root.as_uri()}")


async def subscribe_async(state: SynapseState, name: str, uri: str | None) -> None:
    """Subscribe to a resource's updates (they show in the running cell and are recorded); without a URI,
    list the updates received from the server so far."""
    if uri is None:
        updates = [u for server, u in (state.answers.updates if state.answers else []) if server == name]
        if not updates:
            print(f"no resource updates from {name} yet")
        for u in updates:
            print(f"⟳ {u}")
        return
    try:
        await state.hub.subscribe(name, uri)
    except SynapseError as exc:
        raise usage_error(exc) from None
    print(f"✓ subscribed to {uri} on {name}; updates show in the running cell (%mcp subscribe {name} lists them)")


async def unsubscribe_async(state: SynapseState, name: str, uri: str) -> None:
    try:
        await state.hub.unsubscribe(name, uri)
    except SynapseError as exc:
        raise usage_error(exc) from None
    print(f"✓ unsubscribed from {uri} on {name}")


def _is_dir(path: str) -> bool:
    from pathlib import Path

    return Path(path).expanduser().is_dir()
