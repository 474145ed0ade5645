"""Server log messages (`notifications/message`): a bounded ring per server, filtered by level."""

from __future__ import annotations

import datetime as _dt
import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..errors import McpError
from ..events import utcnow
from ..server_config import LOG_LEVELS, LogLevel

__all__ = ["LEVELS", "LogEntry", "LogLevel", "LogRing", "check_level", "level_at_least"]

LEVELS: tuple[LogLevel, ...] = LOG_LEVELS
"""The syslog levels of MCP logging, least severe first."""

RING_SIZE = 1000


def check_level(level: str) -> LogLevel:
    """`level` as a LogLevel; raises McpError naming the accepted levels."""
    for known in LEVELS:
        if level == known:
            return known
    raise McpError(f"unknown log level {level!r}; use one of {', '.join(LEVELS)}")


def level_at_least(level: str, floor: str) -> bool:
    """True when `level` is `floor` or more severe (unknown levels count as info)."""
    rank: dict[str, int] = {name: i for i, name in enumerate(LEVELS)}
    return rank.get(level, 1) >= rank.get(floor, 1)


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One log message from a server: its level, the logger that sent it, and its data (any JSON value)."""

    level: str
    data: Any
    logger: str | None = None
    at: _dt.datetime = field(default_factory=utcnow)

    @property
    def text(self) -> str:
        return self.data if isinstance(self.data, str) else json.dumps(self.data, default=str)

    def __str__(self) -> str:
        who = f" {self.logger}" if self.logger else ""
        return f"{self.at:%H:%M:%S} {self.level.upper()}{who}: {self.text}"


class LogRing:
    """The last `size` log messages of one server, oldest first."""

    def __init__(self, size: int = RING_SIZE) -> None:
        self._entries: deque[LogEntry] = deque(maxlen=size)
        self.dropped = 0

    def add(self, entry: LogEntry) -> None:
        if len(self._entries) == self._entries.maxlen:
            self.dropped += 1
        self._entries.append(entry)

    def tail(self, n: int | None = None, level: str = "debug") -> list[LogEntry]:
        """The last `n` entries (all when None) at `level` or above."""
        floor = check_level(level)
        kept = [e for e in self._entries if level_at_least(e.level, floor)]
        return kept if n is None else kept[-n:] if n > 0 else []

    def __len__(self) -> int:
        return len(self._entries)
