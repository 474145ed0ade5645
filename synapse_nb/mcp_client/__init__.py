"""mcp_client layer: MCP servers through the official `mcp` SDK (the only layer that imports it).

hub.py (McpHub: servers, tool registry, routing, restarts), connection.py (one owner task per server),
transport.py, process.py (stderr capture, pids), failure.py (error mapping), convert.py (SDK values to
synapse values), naming.py (qualified tool names), info.py (ServerInfo and friends), demo_server.py
(`python -m synapse_nb.mcp_client.demo_server`); the client features: handlers.py (ClientHandlers, injected
answers to elicitation and sampling; per-server policy, roots, logs), elicitation.py, sampling.py, logs.py,
features.py (the SDK calls behind them), deadline.py (timeouts that progress and user questions move).
Import from the modules; this package stays light.
"""
