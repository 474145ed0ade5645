"""Settings resolved from the environment (DESIGN.md section 5): file locations and MCP server config."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "history_path",
    "mcp_config_path",
]


def history_path() -> Path:
    """The history file: `SYNAPSE_DB`, else `$XDG_DATA_HOME/synapse/history.duckdb` (~/.local/share)."""
    explicit = os.environ.get("SYNAPSE_DB", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME", "").strip() or str(Path.home() / ".local" / "share")
    return Path(data_home).expanduser() / "synapse" / "history.duckdb"


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
