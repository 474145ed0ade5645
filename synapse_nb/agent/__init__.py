"""The agent layer: the Agent loop, the ToolRegistry with `@tool` native tools, and the approval policy."""

from __future__ import annotations

from .approval import ApprovalPolicy
from .orchestrator import Agent
from .result import TurnResult
from .tools import NativeTool, ToolRegistry, tool

__all__ = ["Agent", "ApprovalPolicy", "NativeTool", "ToolRegistry", "TurnResult", "tool"]
