"""Settings resolved from the environment (DESIGN.md section 5): file locations and the MCP servers file.

One entry of the file is checked by server_config.parse_server, as `%mcp connect` and `McpHub.connect` are.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .server_config import (
    DEFAULT_CONNECT_TIMEOUT,
    ApprovePolicy,
    ConfigWarning,
    ServerConfig,
    Transport,
    parse_server,
)

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "MCP_URL_CONNECT_TIMEOUT",
    "ApprovePolicy",
    "ConfigWarning",
    "ServerConfig",
    "Transport",
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

MCP_URL_CONNECT_TIMEOUT = 5.0
"""Connect timeout of the `default` server that `MCP_URL` adds."""

_TOP_KEYS = frozenset({"mcpServers", "servers"})
_QUIET_TOP_KEYS = frozenset({"inputs", "$schema"})  # VS Code keeps these next to `servers`; not ours to read


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
    return parse_server(name, entry, environ=environ, where=where, source=source)


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
