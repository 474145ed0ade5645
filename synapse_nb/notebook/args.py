"""Parsing magic lines into typed options; every mistake becomes one UsageError line naming the fix."""

from __future__ import annotations

import argparse
import json
import keyword
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from IPython.core.error import UsageError

from ..server_config import APPROVE_MODES, ServerConfig, choices, parse_server

__all__ = [
    "APPROVE_MODES",
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

FORMATS = ("markdown", "text", "json", "code")
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing and exiting."""

    def __init__(self, prog: str, help_hint: str) -> None:
        super().__init__(prog=prog, add_help=False, allow_abbrev=False)
        self.help_hint = help_hint

    def error(self, message: str) -> NoReturn:
        message = re.sub(r"^unrecognized arguments: ", "unknown option ", message)
        message = message.replace("argument ", "")
        raise UsageError(f"{self.prog}: {message}; see {self.help_hint}")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(f"{self.prog}: {message or 'bad arguments'}; see {self.help_hint}")


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


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _usd(text: str) -> float:
    try:
        value = float(text.strip().lstrip("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an amount in USD, e.g. 0.25") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be more than 0, e.g. 0.25")
    return value


def _ask_parser() -> _Parser:
    p = _Parser("%%synapse", "%%synapse --help")
    p.add_argument("--model")
    p.add_argument("--session")
    p.add_argument("--system")
    p.add_argument("--tools", action="append")
    p.add_argument("--no-tools", action="store_true")
    p.add_argument("--max-iterations", type=_positive_int)
    p.add_argument("--approve")
    p.add_argument("--format")
    p.add_argument("--out")
    p.add_argument("--background", action="store_true")
    p.add_argument("--no-history", action="store_true")
    p.add_argument("--kernel", action="store_true")
    p.add_argument("--budget", type=_usd)
    p.add_argument("--max-tokens", type=_positive_int)
    p.add_argument("--help", "-h", action="store_true")
    return p


def parse_ask(line: str) -> AskOptions:
    """The options of a %%synapse line (validated: modes, formats, names)."""
    words = split(line, "%%synapse")
    ns, rest = _ask_parser().parse_known_args(words)
    if rest:
        unknown = next((w for w in rest if w.startswith("-")), None)
        if unknown is not None:
            raise UsageError(f"%%synapse: unknown option {unknown}; see %%synapse --help")
        raise UsageError(
            f"%%synapse: unexpected {rest[0]!r} on the magic line; write the prompt in the cell body "
            "below %%synapse (see %%synapse --help)"
        )
    if ns.approve is not None and ns.approve not in APPROVE_MODES:
        raise UsageError(f"%%synapse: --approve {ns.approve!r} is not one of auto, ask, deny; e.g. --approve ask")
    if ns.format is not None and ns.format not in FORMATS:
        raise UsageError(
            f"%%synapse: --format {ns.format!r} is not one of markdown, text, json, code; e.g. --format text"
        )
    if ns.out is not None and (not _IDENTIFIER.match(ns.out) or keyword.iskeyword(ns.out)):
        raise UsageError(f"%%synapse: --out {ns.out!r} is not a Python variable name; e.g. --out answer")
    if ns.no_tools and ns.tools:
        raise UsageError("%%synapse: --tools and --no-tools contradict each other; use one of them")
    if ns.no_tools and ns.kernel:
        raise UsageError("%%synapse: --kernel and --no-tools contradict each other; use one of them")
    if ns.session is not None and not ns.session.strip():
        raise UsageError("%%synapse: --session needs a name, e.g. --session analysis")
    if ns.background and ns.format == "code":
        raise UsageError("%%synapse: --format code cannot insert a cell from a --background run; drop one")
    tools: tuple[str, ...] | None = () if ns.no_tools else (tuple(ns.tools) if ns.tools else None)
    return AskOptions(
        model=ns.model, session=ns.session, system=ns.system, tools=tools, max_iterations=ns.max_iterations,
        approve=ns.approve, format=ns.format, out=ns.out, background=ns.background,
        history=not ns.no_history, help=ns.help, kernel=ns.kernel, budget=ns.budget, max_tokens=ns.max_tokens,
    )


# ---------------------------------------------------------------------------------------------- %mcp


@dataclass(frozen=True)
class ConfigFile:
    """`%mcp connect` without a server: connect every enabled server of the config file (`path`, else the default)."""

    path: str | None = None


_CONNECT_HINT = "%mcp help"


def _connect_parser() -> _Parser:
    p = _Parser("%mcp connect", _CONNECT_HINT)
    p.add_argument("name", nargs="?")
    p.add_argument("url", nargs="?")
    p.add_argument("--header", action="append", default=[])
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--cwd")
    p.add_argument("--transport")
    p.add_argument("--timeout", type=float)
    p.add_argument("--approve")
    p.add_argument("--tools", action="append")
    p.add_argument("--config")
    p.add_argument("--log-level", dest="log_level")
    p.add_argument("--sampling")
    p.add_argument("--elicitation")
    return p


def parse_connect(words: Sequence[str]) -> ServerConfig | ConfigFile:
    """`connect NAME -- COMMAND ARGS`, `connect NAME URL [--header K=V]`, `connect`, `connect --config PATH`.

    One server's options become its ServerConfig through server_config.parse_server, the parser the
    config file and `McpHub.connect` use; whatever it finds wrong is a UsageError here, before connecting.
    """
    words = list(words)
    command: list[str] = []
    if "--" in words:
        cut = words.index("--")
        words, command = words[:cut], words[cut + 1 :]
        if not command:
            raise UsageError("%mcp connect: nothing after '--'; give the server command, e.g. -- python -m server")
    ns, rest = _connect_parser().parse_known_args(words)
    if rest:
        raise UsageError(f"%mcp connect: unknown option or extra word {rest[0]!r}; see {_CONNECT_HINT}")
    for option, key in (("--approve", "approve"), ("--transport", "transport"), ("--log-level", "log_level"),
                        ("--sampling", "sampling"), ("--elicitation", "elicitation")):
        value, allowed = getattr(ns, key), choices(key)
        if value is not None and value not in allowed:
            raise UsageError(f"%mcp connect: {option} {value!r} is not one of {', '.join(allowed)}")
    headers = parse_pairs(ns.header, "%mcp connect --header", "--header Authorization='Bearer ...'")
    env = parse_pairs(ns.env, "%mcp connect --env", "--env API_TOKEN=...")
    tools = tuple(ns.tools) if ns.tools else None
    if ns.name is None:
        if command or headers or env or ns.url:
            raise UsageError("%mcp connect: name the server first, e.g. %mcp connect demo -- python -m server")
        per_server = [o for o, v in (("--timeout", ns.timeout), ("--approve", ns.approve), ("--tools", tools),
                                     ("--transport", ns.transport), ("--cwd", ns.cwd), ("--log-level", ns.log_level),
                                     ("--sampling", ns.sampling), ("--elicitation", ns.elicitation)) if v is not None]
        if per_server:
            raise UsageError(
                f"%mcp connect: {per_server[0]} applies to one server; for the config file's servers set "
                '"timeout", "approve" or "tools" in their entries'
            )
        return ConfigFile(ns.config)
    if ns.config is not None:
        raise UsageError("%mcp connect: --config connects every server of a file; drop the server name")
    if not re.match(r"^[A-Za-z0-9_-]{1,64}$", ns.name):
        raise UsageError(f"%mcp connect: server name {ns.name!r} may use letters, digits, '_' and '-' only")
    if command and ns.url:
        raise UsageError("%mcp connect: give either a URL or '-- COMMAND', not both")
    if not command and not ns.url:
        raise UsageError(
            f"%mcp connect {ns.name}: say how to reach it: '-- COMMAND [ARGS...]' (stdio) or a URL (HTTP)"
        )
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


def parse_call_arguments(text: str) -> dict[str, Any]:
    """A JSON object, or `key=value ...` words whose values are JSON when they parse (else strings)."""
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
    arguments: dict[str, Any] = {}
    for key, raw in parse_pairs(split(text, "%mcp call"), "%mcp call", 'text=hi or {"text": "hi"}').items():
        try:
            arguments[key] = json.loads(raw)
        except json.JSONDecodeError:
            arguments[key] = raw
    return arguments
