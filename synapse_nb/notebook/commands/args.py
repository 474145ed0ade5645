"""Parsing magic lines into typed options; every mistake becomes one UsageError line naming the fix."""

from __future__ import annotations

import argparse
import json
import keyword
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError

from ...server_config import APPROVE_MODES, ServerConfig, choices, parse_server
from ..turns.view import FORMATS
from .options import Option, OptionSet

__all__ = [
    "APPROVE_MODES",
    "ASK_OPTIONS",
    "CONNECT_OPTIONS",
    "FORMATS",
    "AskOptions",
    "CallTarget",
    "ConfigFile",
    "expand",
    "parse_ask",
    "parse_call_arguments",
    "parse_call_target",
    "parse_connect",
    "parse_pairs",
    "split",
]

_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")


def split(line: str, where: str) -> list[str]:
    """Shell-like words of a magic line; an unclosed quote is a UsageError."""
    try:
        return shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"{where}: {exc} in {line.strip()!r}; close the quote") from None


def expand(text: str, namespace: Mapping[str, Any]) -> str:
    """IPython's `$name` / `{expr}` expansion of a magic line, from the user namespace (unchanged on failure)."""
    if "$" not in text and "{" not in text:
        return text
    from IPython.utils.text import DollarFormatter

    try:
        return DollarFormatter().vformat(text, args=[], kwargs=dict(namespace))
    except Exception:  # like IPython: a line that does not format is used as written
        return text


# ---------------------------------------------------------------------------------------------- %%synapse


@dataclass(frozen=True)
class AskOptions:
    """The options of one %%synapse cell (None: use the configured default)."""

    model: str | None = None
    session: str | None = None
    system: str | None = None
    tools: tuple[str, ...] | None = None  # None: all tools; (): none
    max_iterations: int | None = None
    approve: str | None = None
    format: str | None = None
    out: str | None = None
    background: bool = False
    history: bool = True
    help: bool = False
    kernel: bool = False  # offer the kernel__* tools in this cell
    budget: float | None = None  # USD this cell's model calls may cost (agent/spend.py)
    max_tokens: int | None = None  # prompt + output tokens this cell's model calls may use
    hold_over: int | None = None  # tokens: a bigger tool result is held in the kernel (0: none is)
    tool_budget: int | None = None  # tools offered up front; more, and the model searches (0: every tool)
    resume: bool = False  # continue the turn the kernel left waiting on tool results (commands/turn_resume.py)


def _whole(what: str, example: int, least: int, zero: str = "") -> Callable[[str], int]:
    """An option's type: a whole number of `what` (`1,000` and `1_000` read as 1000), at least `least`; each
    refusal names the number expected and an example (`zero` says what 0 means where 0 is allowed)."""

    def parse(text: str) -> int:
        try:
            value = int(text.replace(",", "").replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}, e.g. {example}") from None
        if value < least:
            bound = "at least 1" if least == 1 else f"{least} or more"
            raise argparse.ArgumentTypeError(f"{value} must be {bound}{f' ({zero})' if zero else ''}")
        return value

    return parse


_tool_count = _whole("a number of tools", 40, 0, "0: offer every tool")
_positive_int = _whole("a whole number", 10, 1)
_tokens = _whole("a number of tokens", 4000, 0, "0: hold no result")


def _usd(text: str) -> float:
    try:
        value = float(text.strip().lstrip("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an amount in USD, e.g. 0.25") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be more than 0, e.g. 0.25")
    return value


ASK_OPTIONS = OptionSet("%%synapse", "%%synapse --help", (
    Option("--model", "ID", "provider:model for this cell (e.g. openai:gpt-4.1-mini, scripted:demo)"),
    Option("--session", "NAME", "continue (or start) the session NAME instead of the current one"),
    Option("--system", "TEXT", "system prompt for this cell"),
    Option("--tools", "PATTERN", "offer only tools matching the glob (repeatable), e.g. --tools 'demo__*'",
           repeat=True),
    Option("--no-tools", help="offer no tools"),
    Option("--kernel", help="offer the kernel__* tools: list_variables, describe_dataframe, get_value, recent_cells, "
           "and run_python (asks before it runs); --tools 'kernel__*' selects among them. For every cell: "
           "%config SynapseMagics.kernel_tools = True"),
    Option("--max-iterations", "N", "stop after N model calls (default 10)", type=_positive_int),
    Option("--budget", "USD", "stop before a model call that could take this cell past USD (e.g. --budget 0.25); "
           "per session: %config SynapseMagics.session_budget = 2.0", type=_usd),
    Option("--max-tokens", "N", "stop before a model call that could take this cell past N tokens (prompt + output "
           "of all its model calls, cached prompt tokens included)", type=_positive_int),
    Option("--hold-over", "TOKENS", "hold tool results over TOKENS tokens (and tables of over 20 rows) in the kernel "
           "by name, the model getting a summary and results__sql (0: send results as text; default "
           "SynapseMagics.hold_over)", type=_tokens),
    Option("--tool-budget", "N", "offer at most N tools up front; with more connected the model gets tools__search "
           "and loads what it needs (0: offer every tool; default SynapseMagics.tool_budget)", type=_tool_count),
    Option("--approve", "MODE", "{choices} for every tool call of this cell", choices=APPROVE_MODES,
           example="--approve ask"),
    Option("--format", "FORMAT", "{choices} (code: the first code block goes into a new cell)", choices=FORMATS,
           example="--format text"),
    Option("--out", "NAME", "also store the result in the variable NAME"),
    Option("--background", help="return at once with a handle (await it, or .result()); Stop/approve with buttons"),
    Option("--no-history", help="do not record this turn in the history file"),
    Option("--resume", help="continue the turn a kernel restart left waiting on tool results (an MCP task): its "
           "results are taken from the history (waiting for a task still running) and the model goes on; the "
           "newest such turn of this notebook, or --session NAME's; no prompt"),
    Option("--help", help="this help (also %synapse --help)", aliases=("-h",)),
))
"""The options of a %%synapse cell: parse_ask reads them, `%%synapse --help` lists them."""


def parse_ask(line: str) -> AskOptions:
    """The options of a %%synapse line (validated: modes, formats, names)."""
    words = split(line, "%%synapse")
    ns, rest = ASK_OPTIONS.parse(words)
    if rest:
        raise UsageError(
            f"%%synapse: unexpected {rest[0]!r} on the magic line; write the prompt in the cell body "
            "below %%synapse (see %%synapse --help)"
        )
    if ns.out is not None and (not _IDENTIFIER.match(ns.out) or keyword.iskeyword(ns.out)):
        raise UsageError(f"%%synapse: --out {ns.out!r} is not a Python variable name; e.g. --out answer")
    if ns.no_tools and ns.tools:
        raise UsageError("%%synapse: --tools and --no-tools contradict each other; use one of them")
    if ns.no_tools and ns.kernel:
        raise UsageError("%%synapse: --kernel and --no-tools contradict each other; use one of them")
    if ns.session is not None and not ns.session.strip():
        raise UsageError("%%synapse: --session needs a name, e.g. --session analysis")
    if ns.resume and ns.background:
        raise UsageError("%%synapse: --resume runs in the foreground (it may wait for a task's result); drop "
                         "--background")
    if ns.background and ns.format == "code":
        raise UsageError("%%synapse: --format code cannot insert a cell from a --background run; drop one")
    tools: tuple[str, ...] | None = () if ns.no_tools else (tuple(ns.tools) if ns.tools else None)
    return AskOptions(
        model=ns.model, session=ns.session, system=ns.system, tools=tools, max_iterations=ns.max_iterations,
        approve=ns.approve, format=ns.format, out=ns.out, background=ns.background,
        history=not ns.no_history, help=ns.help, kernel=ns.kernel, budget=ns.budget, max_tokens=ns.max_tokens,
        hold_over=ns.hold_over, tool_budget=ns.tool_budget, resume=ns.resume,
    )


# ---------------------------------------------------------------------------------------------- %mcp


@dataclass(frozen=True)
class ConfigFile:
    """`%mcp connect` without a way to reach a server: every enabled server of the config file (`path`, else
    the default), or only its entry `name` (`%mcp connect NAME`, enabled or not: it was asked for by name)."""

    path: str | None = None
    name: str | None = None


CONNECT_OPTIONS = OptionSet("%mcp connect", "%mcp help", (
    Option("name", "NAME"),
    Option("url", "URL"),
    Option("--header", "K=V", "an HTTP header for a URL server (repeatable); its value is a secret", repeat=True),
    Option("--env", "K=V", "an environment variable of a command server (repeatable); its value is a secret",
           repeat=True),
    Option("--cwd", "DIR", "the folder a command server starts in"),
    Option("--transport", "KIND", "{choices} (default: stdio for a command, http for a URL)",
           choices=choices("transport")),
    Option("--timeout", "SECONDS", "seconds each tool call may take (default 120)", type=float),
    Option("--approve", "MODE", "{choices} for every tool call of this server", choices=choices("approve")),
    Option("--hold-over", "TOKENS", "hold this server's results over TOKENS tokens in the kernel and give the model "
           "a summary (0: never; default SynapseMagics.hold_over)", type=_tokens),
    Option("--tools", "PATTERN", "offer only the tools matching the glob (repeatable)", repeat=True),
    Option("--defer-tools", help="the model finds this server's tools with tools__search, never up front (in a "
           "config entry: \"defer_tools\": true, or false to offer them up front even over the tool budget)"),
    Option("--log-level", "LEVEL", "what the server logs: {choices}", choices=choices("log_level")),
    Option("--roots", "DIR", "offer the server this folder as a root (repeatable; e.g. --roots . for the working "
           "folder); without it the server is offered no roots and uses its own folders", repeat=True),
    Option("--sampling", "MODE", "may the server use the kernel's model: {choices}", choices=choices("sampling")),
    Option("--elicitation", "MODE", "may the server ask you for input: {choices}", choices=choices("elicitation")),
    Option("--protocol", "REV", "the MCP revision to speak: {choices} (default auto: the newest both speak; "
           "2025-11-25 for a server whose questions are unavailable on 2026-07-28)", choices=choices("protocol")),
    Option("--config", "PATH", "connect every enabled server of PATH instead (no NAME)"),
), rest="command")
"""`%mcp connect`'s options; every word after `--` is the server's command line (options there are the server's)."""


def parse_connect(words: Sequence[str]) -> ServerConfig | ConfigFile:
    """`connect NAME -- COMMAND ARGS`, `connect NAME URL [--header K=V]`, `connect`, `connect --config PATH`.

    One server's options become its ServerConfig through server_config.parse_server, the parser the
    config file and `McpHub.connect` use; whatever it finds wrong is a UsageError here, before connecting.
    """
    ns, rest = CONNECT_OPTIONS.parse(words)
    command: list[str] = ns.command
    if "--" in words and not command:
        raise UsageError("%mcp connect: nothing after '--'; give the server command, e.g. -- python -m server")
    if rest:
        raise UsageError(f"%mcp connect: unexpected word {rest[0]!r}; see %mcp help")
    headers = parse_pairs(ns.header or [], "%mcp connect --header", "--header Authorization='Bearer ...'")
    env = parse_pairs(ns.env or [], "%mcp connect --env", "--env API_TOKEN=...")
    tools = tuple(ns.tools) if ns.tools else None
    if ns.name is None:
        if command or headers or env or ns.url:
            raise UsageError("%mcp connect: name the server first, e.g. %mcp connect demo -- python -m server")
        per_server = [o for o, v in (("--timeout", ns.timeout), ("--approve", ns.approve), ("--tools", tools),
                                     ("--hold-over", ns.hold_over), ("--defer-tools", ns.defer_tools or None),
                                     ("--transport", ns.transport), ("--cwd", ns.cwd), ("--log-level", ns.log_level),
                                     ("--sampling", ns.sampling), ("--elicitation", ns.elicitation),
                                     ("--roots", ns.roots), ("--protocol", ns.protocol)) if v is not None]
        if per_server:
            raise UsageError(
                f"%mcp connect: {per_server[0]} applies to one server; for the config file's servers set "
                '"timeout", "approve", "tools" or "protocol" in their entries'
            )
        return ConfigFile(ns.config)
    if not re.match(r"^[A-Za-z0-9_-]{1,64}$", ns.name):
        raise UsageError(f"%mcp connect: server name {ns.name!r} may use letters, digits, '_' and '-' only")
    if command and ns.url:
        raise UsageError("%mcp connect: give either a URL or '-- COMMAND', not both")
    if not command and not ns.url:
        if headers or env or tools or any(v is not None for v in (
                ns.timeout, ns.approve, ns.transport, ns.cwd, ns.log_level, ns.sampling, ns.elicitation, ns.roots,
                ns.protocol, ns.hold_over, ns.defer_tools or None)):
            raise UsageError(
                f"%mcp connect {ns.name}: say how to reach it: '-- COMMAND [ARGS...]' (stdio) or a URL (HTTP); "
                "a server of the config file takes its options from its entry"
            )
        return ConfigFile(ns.config, name=ns.name)  # the config file's entry of that name
    if ns.config is not None:
        raise UsageError("%mcp connect: --config names the file of `%mcp connect [NAME]`; drop it, or the command")
    if ns.url and not re.match(r"^https?://", ns.url):
        raise UsageError(f"%mcp connect: {ns.url!r} is not an http(s) URL; for a command use '-- {ns.url}'")
    if command and headers:
        raise UsageError("%mcp connect: --header is for URL servers; use --env K=V for a command")
    if ns.url and (env or ns.cwd):
        raise UsageError("%mcp connect: --env and --cwd are for command servers; use --header K=V for a URL")
    entry = {
        "command": command[0] if command else None, "args": command[1:], "url": ns.url, "headers": headers,
        "env": env, "cwd": ns.cwd, "transport": ns.transport, "timeout": ns.timeout, "approve": ns.approve,
        "tools": tools, "log_level": ns.log_level, "sampling": ns.sampling, "elicitation": ns.elicitation,
        "roots": ns.roots, "protocol": ns.protocol, "hold_over": ns.hold_over,
        "defer_tools": True if ns.defer_tools else None,
    }
    config = parse_server(ns.name, entry)
    if config.problem is not None:
        raise UsageError(f"%mcp connect: {config.problem}")
    return config


def parse_pairs(items: Sequence[str], option: str, example: str = "KEY=VALUE") -> dict[str, str]:
    """`K=V` words into a dict; a word without '=' is a UsageError."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{option}: {item!r} is not KEY=VALUE; e.g. {example}")
        pairs[key.strip()] = value
    return pairs


@dataclass(frozen=True)
class CallTarget:
    server: str
    tool: str


def parse_call_target(word: str) -> CallTarget:
    """`SERVER.TOOL` (or the qualified `SERVER__TOOL`)."""
    server, sep, tool = word.partition(".")
    if not sep:
        server, sep, tool = word.partition("__")
    if not sep or not server or not tool:
        raise UsageError(f"%mcp call: {word!r} is not SERVER.TOOL; e.g. %mcp call demo.echo text=hi")
    return CallTarget(server, tool)


def parse_call_arguments(text: str, input_schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A JSON object, or `key=value ...` words typed by the tool's input schema (schema_words: a string
    parameter gets the word as written); a parameter the schema does not describe (or no schema) gets JSON
    when the word parses, else the word as a string."""
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"%mcp call: malformed JSON arguments ({exc.msg} at column {exc.colno}); "
                'e.g. {"text": "hi"} or key=value words'
            ) from None
        if not isinstance(value, dict):
            raise UsageError("%mcp call: the JSON arguments must be an object, e.g. {\"text\": \"hi\"}")
        return value
    from .schema_words import typed_words

    words = parse_pairs(split(text, "%mcp call"), "%mcp call", 'text=hi or {"text": "hi"}')
    return typed_words(words, input_schema or {})
