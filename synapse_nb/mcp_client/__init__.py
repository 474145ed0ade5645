"""mcp_client layer: MCP servers through the official `mcp` SDK (the only layer that imports it).

hub.py (McpHub: the public face; it owns table.py's ConnectionTable of connections and tools, and
delegates to loop_owner.py (the owning loop, per-name locks), oauth/accounts.py (tokens, sign-in) and
exit_guard.py), connection.py (ServerConnection: one owner task per server; its ConnectionState in
connection_state.py), inflight.py (requests in flight, in their callers' tasks) and deadline.py (the one timeout
mechanism: progress pushes it back, a question to the user holds it), features.py (the SDK calls
behind every request), tool_discovery.py, transport.py, process.py (stderr capture, pids),
failure.py (error mapping), convert.py (SDK values to synapse values), ui.py (MCP Apps: the extension
advertised, `ui://` Views read and cached), naming.py (qualified tool names), info.py (ServerInfo,
the state transition table), tasks.py (waiting through a cancel, imports off the loop), demo_server.py
(`python -m synapse_nb.mcp_client.demo_server`); what servers ask of the client: handlers.py
(ClientHandlers, injected answers to elicitation and sampling; ServerHooks, per-server policy, roots,
logs), elicitation.py, sampling.py, logs.py.
Import from the modules; this package stays light: importing it loads no SDK (`preload()` starts that in
the background).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import threading
import time

__all__ = ["LATE_PRELOADED", "PRELOADED", "loaded", "preload"]

PRELOADED = (
    "mcp",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "mcp.client.sse",
    "synapse_nb.mcp_client.hub",
)
"""What `preload()` imports: the SDK and the hub (1-4 s of CPU on this machine). Not jsonschema: with
rfc3987-syntax installed (jupyter-events brings it) importing it builds a URI grammar, 2-3 s of CPU that
competed with the kernel's first cells for the GIL and the cores (their last output and idle message came
100-300 ms late); tasks.validation_ready() imports it off the loop before the first call that needs it."""

LATE_PRELOADED = (
    "anyio._backends._asyncio",
    "httpcore2",
    "h11",
    "keyring",
)
"""Imported after PRELOADED, each optional: what a first connect imports on the loop otherwise (anyio's
asyncio backend for every transport; the HTTP connection pool and the keyring of OAuth tokens for an HTTP
server: about a second before the first HTTP handshake, measured with `-X importtime`)."""

_lock = threading.Lock()
_thread: threading.Thread | None = None


def preload() -> threading.Thread:
    """Import the MCP SDK in a daemon thread, once per process; returns that thread (join it to wait).

    The SDK import is most of the first `%mcp connect`'s cost. `%load_ext` starts it here and returns
    at once; a connect that comes before it is done waits on Python's import lock for the rest only.
    (Measured in fresh kernels on this 2-core machine: the `%load_ext` round trip is the same with and
    without it, within the noise.)
    """
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_import_all, name="synapse-mcp-preload", daemon=True)
            _thread.start()
        return _thread


async def loaded() -> float:
    """Wait until the MCP client is imported (preload()'s thread, started now if `%load_ext` did not); the
    seconds this waited, 0.0 when it was ready. The wait is spent off the loop: other tasks go on meanwhile.

    `%mcp connect` reports that time apart from the connection's own: it is paid once per kernel."""
    thread = preload()
    if not thread.is_alive():
        return 0.0
    started = time.perf_counter()
    await asyncio.to_thread(thread.join)
    return time.perf_counter() - started


def _import_all() -> None:
    for module in PRELOADED:
        try:
            importlib.import_module(module)
        except Exception:  # a broken install shows at the real import, with its traceback there
            logging.getLogger("synapse_nb.mcp").debug("preloading %s failed", module, exc_info=True)
            return
    for module in LATE_PRELOADED:
        try:
            importlib.import_module(module)
        except Exception:  # optional (keyring), or imported for real when needed
            logging.getLogger("synapse_nb.mcp").debug("preloading %s failed", module, exc_info=True)
