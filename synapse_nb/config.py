"""Settings resolved from the environment (DESIGN.md section 5): file locations and MCP server config."""

from __future__ import annotations

import json
import os
import re
import shlex
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from .envvars import expand_vars
from .errors import ConfigError
from .masking import MASK, mask_url
from .oauth_settings import OAuthSettings, parse_oauth

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "MCP_URL_CONNECT_TIMEOUT",
    "ConfigWarning",
    "ServerConfig",
    "data_dir",
    "history_path",
    "load_mcp_config",
    "mcp_config_path",
    "parse_mcp_config",
]


def history_path() -> Path:
    """The history file: `SYNAPSE_DB`, else `$XDG_DATA_HOME/synapse/history.duckdb` (~/.local/share)."""
    explicit = os.environ.get("SYNAPSE_DB", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME", "").strip() or str(Path.home() / ".local" / "share")
    return Path(data_home).expanduser() / "synapse" / "history.duckdb"


def data_dir() -> Path:
    """synapse's data folder (OAuth tokens live here): `$XDG_DATA_HOME/synapse` (~/.local/share/synapse).

    Deliberately not the folder of `SYNAPSE_DB`, which may sit next to a notebook that gets shared.
    """
    data_home = os.environ.get("XDG_DATA_HOME", "").strip() or str(Path.home() / ".local" / "share")
    return Path(data_home).expanduser() / "synapse"


def mcp_config_path() -> Path | None:
    """The MCP servers file: `SYNAPSE_MCP_CONFIG` > ./.synapse/mcp_servers.json > ~/.config/synapse/...

    Returns None when no file exists (no servers, no error). An explicit `SYNAPSE_MCP_CONFIG` is
    returned even if missing, so the loader can say that the named file does not exist.
    """
    explicit = os.environ.get("SYNAPSE_MCP_CONFIG", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    config_home = os.environ.get("XDG_CONFIG_HOME", "").strip() or str(Path.home() / ".config")
    for candidate in (Path.cwd() / ".synapse" / "mcp_servers.json", Path(config_home) / "synapse" / "mcp_servers.json"):
        if candidate.is_file():
            return candidate
    return None


# --- MCP servers file (DESIGN.md section 5) -------------------------------------------------------

Transport = Literal["stdio", "http", "sse"]
ApprovePolicy = str | Mapping[str, str]

DEFAULT_CONNECT_TIMEOUT = 30.0
"""Seconds a server gets to start and complete the handshake, unless its entry says otherwise."""
MCP_URL_CONNECT_TIMEOUT = 5.0
"""Connect timeout of the `default` server that `MCP_URL` adds."""

_ENTRY_KEYS = frozenset(
    {"command", "args", "env", "cwd", "url", "headers", "type", "disabled", "timeout", "connect_timeout", "approve",
     "tools", "elicitation", "sampling", "roots", "log_level", "oauth"}
)
_TOP_KEYS = frozenset({"mcpServers", "servers"})
_QUIET_TOP_KEYS = frozenset({"inputs", "$schema"})  # VS Code keeps these next to `servers`; not ours to read
_TRANSPORTS: dict[str, Transport] = {
    "stdio": "stdio", "http": "http", "streamable-http": "http", "streamableHttp": "http", "sse": "sse",
}
_APPROVE_VALUES = frozenset({"auto", "ask", "deny"})
_CHOICES: dict[str, tuple[str, ...]] = {
    "elicitation": ("ask", "decline"),
    "sampling": ("ask", "auto", "deny"),
    "log_level": ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"),
}


class ConfigWarning(UserWarning):
    """Something in a config file was ignored (an unknown key, a duplicate server)."""


@dataclass(frozen=True, slots=True, repr=False)
class ServerConfig:
    """One MCP server entry, with `${VAR}` references expanded.

    `env` and `headers` values are secrets as far as we know: `repr()` masks them, and `display`
    shows the command or URL as written in the file (before expansion, without credentials). An
    entry that cannot be used keeps `problem` (one line); connecting it fails with that reason.
    """

    name: str
    transport: Transport = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    disabled: bool = False
    timeout: float | None = None
    connect_timeout: float | None = None
    approve: ApprovePolicy | None = None
    tools: tuple[str, ...] | None = None
    elicitation: str | None = None
    sampling: str | None = None
    roots: tuple[str, ...] | None = None
    log_level: str | None = None
    oauth: OAuthSettings | None = None
    source: str | None = None
    problem: str | None = None
    display: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.display:
            shown = self.url if self.transport != "stdio" else _command_line(self.command, self.args)
            object.__setattr__(self, "display", mask_url(shown or "") if self.transport != "stdio" else shown)

    def __repr__(self) -> str:
        parts = [f"name={self.name!r}", f"transport={self.transport!r}", f"display={self.display!r}"]
        if self.env:
            parts.append(f"env={ {k: MASK for k in self.env} }")
        if self.headers:
            parts.append(f"headers={ {k: MASK for k in self.headers} }")
        if self.cwd:
            parts.append(f"cwd={self.cwd!r}")
        for key in ("disabled", "timeout", "connect_timeout", "approve", "tools", "elicitation", "sampling", "roots",
                    "log_level", "oauth", "problem"):
            value = getattr(self, key)
            if value not in (None, False):
                parts.append(f"{key}={value!r}")
        return f"ServerConfig({', '.join(parts)})"

    __str__ = __repr__

    @property
    def connect_timeout_s(self) -> float:
        """The connect timeout in effect (the entry's, else the default)."""
        return self.connect_timeout if self.connect_timeout is not None else DEFAULT_CONNECT_TIMEOUT


def load_mcp_config(path: Path | str | None = None) -> dict[str, ServerConfig]:
    """Read the MCP servers file (`path`, else `mcp_config_path()`), plus `default` from `MCP_URL`.

    No file: no servers, no error. A named file that is missing or unreadable, or JSON that does not
    parse, raises ConfigError naming the file (and line and column). Unknown keys give a
    ConfigWarning. Entries that cannot be used are returned with `problem` set, so that one bad
    server never hides the others.
    """
    file = Path(path).expanduser() if path is not None else mcp_config_path()
    servers: dict[str, ServerConfig] = {}
    if file is not None:
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            message = f"MCP config file {file} does not exist; create it or fix the path"
            raise ConfigError(message, path=str(file)) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"MCP config file {file} cannot be read: {exc}", path=str(file)) from exc
        servers = parse_mcp_config(text, source=str(file))
    url = os.environ.get("MCP_URL", "").strip()
    if url:
        if "default" in servers:
            warnings.warn(
                f"MCP_URL is set, so it replaces the server 'default' defined in {file}", ConfigWarning, stacklevel=2
            )
        servers["default"] = ServerConfig(
            name="default", transport="http", url=url, connect_timeout=MCP_URL_CONNECT_TIMEOUT, source="MCP_URL"
        )
    return servers


def parse_mcp_config(
    text: str, *, source: str = "<string>", environ: Mapping[str, str] | None = None
) -> dict[str, ServerConfig]:
    """Parse the text of an MCP servers file (JSON; VS Code's comments and trailing commas allowed)."""
    env = os.environ if environ is None else environ
    try:
        data = json.loads(_strip_jsonc(text))
    except json.JSONDecodeError as exc:
        message = f"{source}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}"
        raise ConfigError(message, path=source, line=exc.lineno, column=exc.colno) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a JSON object with \"mcpServers\" or \"servers\"", path=source, line=1,
                          column=1)
    for key in data:
        if key not in _TOP_KEYS and key not in _QUIET_TOP_KEYS:
            warnings.warn(f"{source}: unknown top-level key {key!r} ignored", ConfigWarning, stacklevel=3)
    servers: dict[str, ServerConfig] = {}
    for top in ("mcpServers", "servers"):
        section = data.get(top)
        if section is None:
            continue
        if not isinstance(section, dict):
            line, column = _locate(text, top)
            raise ConfigError(f"{source}:{line}:{column}: {top!r} must be an object of servers", path=source,
                              line=line, column=column)
        for name, entry in section.items():
            if name in servers:
                warnings.warn(f"{source}: server {name!r} is defined in both mcpServers and servers; using the first",
                              ConfigWarning, stacklevel=3)
                continue
            servers[name] = _parse_entry(name, entry, text=text, source=source, environ=env)
    return servers


def _parse_entry(name: str, entry: Any, *, text: str, source: str, environ: Mapping[str, str]) -> ServerConfig:
    line, column = _locate(text, name)
    where = f"{source}:{line}:{column}: server {name!r}"
    if not isinstance(entry, dict):
        return ServerConfig(name=name, source=source, problem=f"{where}: entry must be an object")
    for key in entry:
        if key not in _ENTRY_KEYS:
            warnings.warn(f"{where}: unknown key {key!r} ignored", ConfigWarning, stacklevel=4)
    problems: list[str] = []
    missing: list[str] = []

    def text_value(key: str, value: Any, *, expand: bool = True) -> str | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            problems.append(f"{key} must be a string")
            return None
        return expand_vars(str(value), environ, missing, key) if expand else str(value)

    def text_map(key: str) -> dict[str, str]:
        raw = entry.get(key) or {}
        if not isinstance(raw, dict):
            problems.append(f"{key} must be an object of strings")
            return {}
        return {str(k): v for k, v in ((k, text_value(f"{key}.{k}", raw[k])) for k in raw) if v is not None}

    def text_list(key: str) -> list[str]:
        raw = entry.get(key) or []
        if isinstance(raw, str) or not isinstance(raw, list):
            problems.append(f"{key} must be a list of strings")
            return []
        items = [text_value(f"{key}[{i}]", x, expand=False) for i, x in enumerate(raw)]
        return [x for x in items if x is not None]

    def seconds(key: str) -> float | None:
        raw = entry.get(key)
        if raw is None:
            return None
        if isinstance(raw, bool) or not isinstance(raw, int | float) or raw <= 0:
            problems.append(f"{key} must be a positive number of seconds")
            return None
        return float(raw)

    command = text_value("command", entry.get("command"))
    url = text_value("url", entry.get("url"))
    raw_type = entry.get("type")
    transport: Transport = "stdio" if url is None else "http"
    if raw_type is not None:
        if raw_type not in _TRANSPORTS:
            problems.append(f"type must be one of stdio, http, sse (got {raw_type!r})")
        else:
            transport = _TRANSPORTS[raw_type]
    if transport == "stdio" and not command:
        problems.append("needs \"command\" (stdio) or \"url\" (http, sse)")
    if transport != "stdio" and not url:
        problems.append(f"type {transport} needs \"url\"")
    raw_args = tuple(text_list("args"))
    args = tuple(expand_vars(a, environ, missing, f"args[{i}]") for i, a in enumerate(raw_args))
    disabled = entry.get("disabled", False)
    if not isinstance(disabled, bool):
        problems.append("disabled must be true or false")
        disabled = False
    tools: tuple[str, ...] | None = None
    if "tools" in entry:
        tools = tuple(text_list("tools"))
    roots: tuple[str, ...] | None = None
    if "roots" in entry:
        roots = tuple(expand_vars(r, environ, missing, f"roots[{i}]") for i, r in enumerate(text_list("roots")))

    def choice(key: str) -> str | None:
        raw = entry.get(key)
        if raw is None:
            return None
        if raw not in _CHOICES[key]:
            problems.append(f"{key} must be one of {', '.join(_CHOICES[key])} (got {raw!r})")
            return None
        return str(raw)
    oauth: OAuthSettings | None = None
    if entry.get("oauth") is not None:
        oauth, oauth_problems = parse_oauth(
            entry["oauth"], lambda key, value: expand_vars(value, environ, missing, key))
        problems.extend(oauth_problems)
        if oauth is not None and transport == "stdio":
            problems.append("oauth applies to http and sse servers only (a stdio server gets credentials from env)")
    config = ServerConfig(
        name=name,
        transport=transport,
        command=command,
        args=args,
        env=text_map("env"),
        cwd=text_value("cwd", entry.get("cwd")),
        url=url,
        headers=text_map("headers"),
        disabled=disabled,
        timeout=seconds("timeout"),
        connect_timeout=seconds("connect_timeout"),
        approve=_approve(entry.get("approve"), problems),
        tools=tools,
        elicitation=choice("elicitation"),
        sampling=choice("sampling"),
        roots=roots,
        log_level=choice("log_level"),
        oauth=oauth,
        source=source,
        display=(
            _command_line(str(entry.get("command") or ""), raw_args)
            if transport == "stdio"
            else mask_url(str(entry.get("url") or ""))
        ),
    )
    if missing:
        problems.append("environment variable(s) not set: " + ", ".join(dict.fromkeys(missing)))
    if problems:
        config = replace(config, problem=f"{where}: " + "; ".join(problems))
    return config


def _approve(raw: Any, problems: list[str]) -> ApprovePolicy | None:
    if raw is None:
        return None
    if isinstance(raw, str) and raw in _APPROVE_VALUES:
        return raw
    if isinstance(raw, dict) and all(isinstance(v, str) and v in _APPROVE_VALUES for v in raw.values()):
        return {str(k): str(v) for k, v in raw.items()}
    problems.append("approve must be auto, ask, deny, or an object mapping tool names to those")
    return None



def _command_line(command: str | None, args: tuple[str, ...]) -> str:
    return shlex.join([command or "", *args]) if command else ""


def _locate(text: str, key: str) -> tuple[int, int]:
    """Line and column (1-based) of the first `"key":` in the text; (1, 1) when it cannot be found."""
    match = re.search(re.escape(json.dumps(key)) + r"\s*:", text)
    if match is None:
        return 1, 1
    before = text[: match.start()]
    return before.count("\n") + 1, match.start() - (before.rfind("\n") + 1) + 1


def _strip_jsonc(text: str) -> str:
    """Blank out // and /* */ comments and trailing commas, keeping every line and column in place."""
    out = list(text)
    i, n = 0, len(text)
    in_string = False
    last_comma: int | None = None
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_string = False
        elif c == '"':
            in_string, last_comma = True, None
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end == -1 else end
            out[i:end] = " " * (end - i)
            i = end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end == -1 else end + 2
            out[i:end] = [ch if ch == "\n" else " " for ch in text[i:end]]
            i = end
            continue
        elif c == ",":
            last_comma = i
        elif c in "}]":
            if last_comma is not None:
                out[last_comma] = " "
            last_comma = None
        elif not c.isspace():
            last_comma = None
        i += 1
    return "".join(out)
