"""ServerConfig: one MCP server's settings, the table of their allowed values, and the one parser of them.

The same parser reads a config file's entry (DESIGN.md section 5), `%mcp connect`'s options and
`McpHub.connect(...)`'s keywords, so a value means the same wherever it is written:

    config = parse_server("files", {"command": "npx", "args": ["-y", "srv"], "timeout": 30})

Pydantic checks types and allowed values (the model's fields are the table: a `Literal` lists the
choices, a field's description says what it must be); the checks that span keys live in `_consistency`.
A bad entry is still returned, with `problem` (one line naming the server and each bad key), so one
bad server never hides the others; connecting it fails with that line. A new key is one new field.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Annotated, Any, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import ErrorDetails

from .envvars import expand_vars
from .masking import MASK, command_line, mask_url
from .oauth_settings import OAuthSettings, expand_oauth
from .oauth_settings import problems as oauth_problems

__all__ = [
    "APPROVE_MODES",
    "CHOICES",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_LOG_LEVEL",
    "ELICITATION_MODES",
    "LOG_LEVELS",
    "PROTOCOLS",
    "SAMPLING_MODES",
    "TRANSPORTS",
    "ApproveMode",
    "ApprovePolicy",
    "ConfigWarning",
    "ServerConfig",
    "Transport",
    "choices",
    "parse_server",
]

Transport = Literal["stdio", "http", "sse"]
ApproveMode = Literal["auto", "ask", "deny"]
ElicitationMode = Literal["ask", "decline"]
SamplingMode = Literal["ask", "auto", "deny"]
Protocol = Literal["auto", "2026-07-28", "2025-11-25"]
LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
ApprovePolicy = str | Mapping[str, str]

TRANSPORTS: tuple[Transport, ...] = get_args(Transport)
APPROVE_MODES: tuple[ApproveMode, ...] = get_args(ApproveMode)
ELICITATION_MODES: tuple[ElicitationMode, ...] = get_args(ElicitationMode)
SAMPLING_MODES: tuple[SamplingMode, ...] = get_args(SamplingMode)
LOG_LEVELS: tuple[LogLevel, ...] = get_args(LogLevel)
PROTOCOLS: tuple[Protocol, ...] = get_args(Protocol)
"""Each enum of a server's settings is written once, as a Literal above: the parser, `%mcp connect`'s choices
and help, and other layers (the approval policy, the log ring) take it from here. PROTOCOLS: the revisions a
server can be pinned to: `auto` (the default) asks the server what it speaks (`server/discover`) and falls back
to the 2025 `initialize` handshake; `2026-07-28` speaks that revision only; `2025-11-25` the handshake era only
(what a server that asks the user the 2025 way needs)."""
DEFAULT_LOG_LEVEL: LogLevel = "info"
"""The level a server is asked to log at (and above) when its entry says none, on a 2026-07-28 connection (where
a server sends log messages only when asked; a 2025-era server sends what it chooses until `logging/setLevel`).
`info` and not `debug`: debug messages of a chatty server share the connection with the calls; not `warning`:
the messages a user opens `%mcp logs` for (a server saying what it did, that it connected to its database)
are info."""
_TRANSPORT_ALIASES: dict[str, str] = {"streamable-http": "http", "streamableHttp": "http"}
"""Other editors' names of a transport (the `type` key of Cursor and VS Code entries)."""

DEFAULT_CONNECT_TIMEOUT = 30.0
"""Seconds a server gets to start and complete the handshake, unless its entry says otherwise."""

_Seconds = Annotated[float, Field(gt=0, strict=True)]
_Strings = tuple[str, ...]


class ConfigWarning(UserWarning):
    """Something in a config file was ignored (an unknown key, a duplicate server)."""


class ServerConfig(BaseModel):
    """One MCP server's settings, with `${VAR}` references expanded (when read from a file).

    `env` and `headers` values are secrets as far as we know: `repr()` masks them, and `display`
    shows the command or URL as written (before expansion, without credentials). An entry that
    cannot be used keeps `problem` (one line); connecting it fails with that reason.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", coerce_numbers_to_str=True)

    name: str
    transport: Transport = Field("stdio", description="one of stdio, http, sse")
    command: str | None = Field(None, description="a string")
    args: _Strings = Field((), description="a list of strings")
    env: dict[str, str] = Field(default_factory=dict, description="an object of strings")
    cwd: str | None = Field(None, description="a string")
    url: str | None = Field(None, description="a string")
    headers: dict[str, str] = Field(default_factory=dict, description="an object of strings")
    disabled: Annotated[bool, Field(strict=True)] = Field(False, description="true or false")
    timeout: _Seconds | None = Field(None, description="a positive number of seconds")
    connect_timeout: _Seconds | None = Field(None, description="a positive number of seconds")
    hold_over: Annotated[int, Field(ge=0, strict=True)] | None = Field(
        None, description="a number of tokens, 0 or more (0: hold none of its results)")
    defer_tools: Annotated[bool, Field(strict=True)] | None = Field(
        None, description="true (its tools are found by the model's tool search, never offered up front) or false "
        "(offered up front even over the tool budget)")
    approve: ApproveMode | dict[str, ApproveMode] | None = Field(
        None, description="auto, ask, deny, or an object mapping tool names to those")
    tools: _Strings | None = Field(None, description="a list of strings")
    elicitation: ElicitationMode | None = None
    sampling: SamplingMode | None = None
    roots: _Strings | None = Field(None, description="a list of paths")
    log_level: LogLevel | None = None
    protocol: Protocol | None = Field(None, description="auto, 2026-07-28 or 2025-11-25")
    oauth: OAuthSettings | None = None
    source: str | None = None
    problem: str | None = None
    display: str = ""

    def __init__(self, name: str | None = None, /, **data: Any) -> None:
        # `ServerConfig("demo", command=...)` as with the dataclass this model replaced
        if name is not None:
            data["name"] = name
        super().__init__(**data)

    @model_validator(mode="after")
    def _fill_display(self) -> ServerConfig:
        if not self.display:
            shown = command_line(self.command, self.args) if self.transport == "stdio" else mask_url(self.url or "")
            object.__setattr__(self, "display", shown)
        return self

    def __eq__(self, other: object) -> bool:
        # `display` is how the entry was written, not what it is: two ways of writing one server are equal
        if not isinstance(other, ServerConfig):
            return NotImplemented
        return self.model_dump(exclude={"display"}) == other.model_dump(exclude={"display"})

    __hash__ = None  # type: ignore[assignment]  # dict fields: not hashable, as the dataclass was not

    def __repr__(self) -> str:
        parts = [f"name={self.name!r}", f"transport={self.transport!r}", f"display={self.display!r}"]
        if self.env:
            parts.append(f"env={ {k: MASK for k in self.env} }")
        if self.headers:
            parts.append(f"headers={ {k: MASK for k in self.headers} }")
        if self.cwd:
            parts.append(f"cwd={self.cwd!r}")
        for key in ("disabled", "timeout", "connect_timeout", "hold_over", "defer_tools", "approve", "tools",
                    "elicitation", "sampling", "roots", "log_level", "protocol", "oauth", "problem"):
            value = getattr(self, key)
            if value not in (None, False):
                parts.append(f"{key}={value!r}")
        return f"ServerConfig({', '.join(parts)})"

    __str__ = __repr__

    @property
    def connect_timeout_s(self) -> float:
        """The connect timeout in effect (the entry's, else the default)."""
        return self.connect_timeout if self.connect_timeout is not None else DEFAULT_CONNECT_TIMEOUT


_KEYS = frozenset(ServerConfig.model_fields) - {"name", "source", "problem", "display"} | {"type"}
"""The keys an entry may have (`type` is the config files' name of `transport`)."""


CHOICES: dict[str, tuple[str, ...]] = {
    "transport": TRANSPORTS, "approve": APPROVE_MODES, "elicitation": ELICITATION_MODES, "sampling": SAMPLING_MODES,
    "log_level": LOG_LEVELS, "protocol": PROTOCOLS,
}
"""The keys with a fixed set of values, in the order help and errors list them (the fields' Literals say the
same as sets; typing's caches may reorder a Literal inside a union, so the order is taken from here)."""


def choices(key: str) -> tuple[str, ...]:
    """The allowed values of a ServerConfig key with a fixed set of them (() for any other key)."""
    return CHOICES.get(key, ())


def parse_server(
    name: str,
    entry: Mapping[str, Any],
    *,
    environ: Mapping[str, str] | None = None,
    where: str | None = None,
    source: str | None = None,
    in_process: object | None = None,
) -> ServerConfig:
    """Check one server's settings and build its ServerConfig; problems go into `problem`, never raise.

    `environ`: expand `${env:VAR}` / `${VAR}` in string values from it (a config file; None: take the
    values as given). `where` starts the problem line (default "server 'NAME'"; a file gives its path,
    line and column). Unknown keys give a ConfigWarning and are ignored. `in_process`: a server object
    the SDK pairs with in memory (no command, no url).
    """
    where = where or f"server {name!r}"
    problems: list[str] = []
    missing: list[str] = []
    data: dict[str, Any] = {}
    for key, value in entry.items():
        if key not in _KEYS:
            warnings.warn(f"{where}: unknown key {key!r} ignored", ConfigWarning, stacklevel=3)
        elif value is not None:
            data[key] = value
    written = {"command": data.get("command"), "args": data.get("args"), "url": data.get("url")}
    label = "type" if "type" in data else "transport"
    if "type" in data:
        data["transport"] = data.pop("type")
    explicit = "transport" in data
    if isinstance(data.get("transport"), str):
        data["transport"] = _TRANSPORT_ALIASES.get(data["transport"], data["transport"])
    elif not explicit and data.get("url") is not None and data.get("command") is None:
        data["transport"] = "http"
    for key in ("cwd", "roots"):  # paths are welcome where strings are
        value = data.get(key)
        if isinstance(value, os.PathLike):
            data[key] = os.fspath(value)
        elif isinstance(value, list | tuple):
            data[key] = [os.fspath(v) if isinstance(v, os.PathLike) else v for v in value]
    if environ is not None:
        data = _expanded(data, environ, missing)
    config = _validated(name, data, problems, label, source=source, in_process=in_process)
    if environ is not None or in_process is not None:  # as written, before expansion
        display = (f"in-process {type(in_process).__name__}" if in_process is not None
                   else _written_display(config.transport, written))
        config = config.model_copy(update={"display": display})
    problems.extend(_consistency(config, data, label if explicit else None, in_process is not None))
    if missing:
        problems.append("environment variable(s) not set: " + ", ".join(dict.fromkeys(missing)))
    if problems:
        config = config.model_copy(update={"problem": f"{where}: " + "; ".join(problems)})
    return config


def _validated(name: str, data: dict[str, Any], problems: list[str], label: str, *, source: str | None,
               in_process: object | None) -> ServerConfig:
    """The model of `data`; a key pydantic rejects becomes a problem line and is left out."""
    fixed = {"name": name if isinstance(name, str) else str(name), "source": source}
    while True:
        try:
            return ServerConfig(**fixed, **data)
        except ValidationError as exc:
            errors = exc.errors()
            bad = {str(error["loc"][0]) for error in errors if error["loc"]}
            bad &= set(data)
            if not bad:  # nothing left to drop: should not happen; say it (no value: it may be a secret) not loop
                problems.append(f"invalid settings ({', '.join(sorted({e['type'] for e in errors}))})")
                return ServerConfig(name=fixed["name"], source=source)
            for key in sorted(bad, key=list(data).index):
                if key == "oauth":
                    data.pop(key)
                    problems.extend(oauth_problems(_inside("oauth", errors)))
                else:
                    problems.append(_must(key, data.pop(key), label))


def _inside(key: str, errors: list[ErrorDetails]) -> list[ErrorDetails]:
    """The errors about `key`'s nested model, their `loc` relative to it."""
    return [cast(ErrorDetails, {**e, "loc": e["loc"][1:]}) for e in errors if e["loc"] and e["loc"][0] == key]


def _must(key: str, value: Any, label: str) -> str:
    """One line saying what `key` must be (from the model's table)."""
    shown = label if key == "transport" else key
    allowed = choices(key)
    if allowed and key != "approve":
        return f"{shown} must be one of {', '.join(allowed)} (got {value!r})"
    description = ServerConfig.model_fields[key].description or "valid"
    return f"{shown} must be {description}"


def _consistency(config: ServerConfig, data: Mapping[str, Any], label: str | None, in_process: bool) -> list[str]:
    """What the combination of keys cannot do, each with the fix (`label`: the transport's key, if given)."""
    problems: list[str] = []
    if not config.name.strip():
        problems.append("the server needs a non-empty name")
    if in_process:
        return problems
    command, url = data.get("command"), data.get("url")
    if command and url:
        problems.append("give either command (stdio) or url (http, sse), not both")
    elif label is None:
        if not command and not url:
            problems.append('needs "command" (stdio) or "url" (http, sse)')
    elif "transport" not in data:  # given but not valid: that is the problem already said
        pass
    elif config.transport == "stdio" and not command:
        problems.append(f'{label} stdio needs "command"' + (' (it does not fit "url")' if url else ""))
    elif config.transport != "stdio" and not url:
        problems.append(f'{label} {config.transport} needs "url"' + (' (it does not fit "command")' if command else ""))
    if config.oauth is not None and config.transport == "stdio":
        problems.append("oauth applies to http and sse servers only (a stdio server gets credentials from env)")
    return problems


def _expanded(data: dict[str, Any], environ: Mapping[str, str], missing: list[str]) -> dict[str, Any]:
    """`data` with `${VAR}` expanded in the string values of the keys that take them."""

    def one(key: str, value: Any) -> Any:
        return expand_vars(value, environ, missing, key) if isinstance(value, str) else value

    out = dict(data)
    for key in ("command", "url", "cwd"):
        if key in out:
            out[key] = one(key, out[key])
    for key in ("args", "roots"):
        if isinstance(out.get(key), list):
            out[key] = [one(f"{key}[{i}]", v) for i, v in enumerate(out[key])]
    for key in ("env", "headers"):
        if isinstance(out.get(key), dict):
            out[key] = {k: one(f"{key}.{k}", v) for k, v in out[key].items()}
    if "oauth" in out:
        out["oauth"] = expand_oauth(out["oauth"], environ, missing)
    return out


def _written_display(transport: str, written: Mapping[str, Any]) -> str:
    if transport != "stdio":
        return mask_url(str(written["url"] or ""))
    args = written["args"]
    shown_args = tuple(str(a) for a in args) if isinstance(args, list | tuple) else ()
    command = written["command"]
    return command_line(str(command) if command else None, shown_args)


