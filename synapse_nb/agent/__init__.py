"""The agent layer: the Agent loop (told per turn by TurnOptions), ToolRegistry with `@tool`, the approval policy."""

from __future__ import annotations

from .approval import ApprovalPolicy
from .orchestrator import Agent
from .result import TurnResult
from .tools import NativeTool, ToolRegistry, tool
from .turn import TurnOptions

__all__ = ["Agent", "ApprovalPolicy", "NativeTool", "ToolRegistry", "TurnOptions", "TurnResult", "tool"]
