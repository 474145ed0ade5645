"""The MCP Apps host, kernel side and widget: Views of UI tools, their sandbox policy, the bridge's requests, model
context.
"""
