"""synapse_nb: an LLM agent with MCP tools in Jupyter cells, every session recorded in DuckDB.

`%load_ext synapse_nb` registers the magics. The Python API is here too; heavy parts (the MCP SDK,
httpx, DuckDB, pandas) load on first use so that importing the package stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__
from .errors import (
    AgentError,
    ConfigError,
    HistoryError,
    McpError,
    ProviderError,
    SynapseError,
)
from .types import ContentBlock, Message, ToolCall, ToolResult, ToolSpec, Usage

if TYPE_CHECKING:
    from .agent.orchestrator import Agent
    from .agent.tools import ToolRegistry, tool
    from .history.reader import History
    from .history.reading import history
    from .history.store import HistoryStore
    from .mcp_client.hub import McpHub


__all__ = [
    "Agent",
    "AgentError",
    "ConfigError",
    "ContentBlock",
    "History",
    "HistoryError",
    "HistoryStore",
    "McpError",
    "McpHub",
    "Message",
    "ProviderError",
    "SynapseError",
    "ToolCall",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "history",
    "load_ipython_extension",
    "tool",
    "unload_ipython_extension",
]

# name -> module that defines it; imported on first attribute access (PEP 562).
_LAZY = {
    "Agent": ".agent.orchestrator",
    "History": ".history.reader",
    "HistoryStore": ".history.store",
    "McpHub": ".mcp_client.hub",
    "ToolRegistry": ".agent.tools",
    "history": ".history.reading",
    "tool": ".agent.tools",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'synapse_nb' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def load_ipython_extension(ipython: Any) -> None:
    """Called by `%load_ext synapse_nb`: register the magics and build the extension's state."""
    from .notebook.extension import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """Called by `%unload_ext synapse_nb`: cancel runs, close MCP servers and the history store."""
    from .notebook.extension import unload

    unload(ipython)
