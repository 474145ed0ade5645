"""The notebook widgets: the MCP inspector, the session trace and the controls of a background run.

The notebook layer calls these three; each widget changes only by trait assignment and reaches the
rest of the extension only through what it is given (the `state` facade, a History, a stop callback).
"""

from __future__ import annotations

from .inspector import Inspector, inspector
from .run_controls import RunControls
from .trace import SessionTrace, session_trace

__all__ = ["Inspector", "RunControls", "SessionTrace", "inspector", "session_trace"]
