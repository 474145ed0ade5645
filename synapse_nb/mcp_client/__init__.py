"""mcp_client layer."""
