"""Settings: the options users set once (`%config SynapseMagics.NAME = ...`), as one value the commands read."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Settings"]


@dataclass(frozen=True)
class Settings:
    """The options users set once (`%config SynapseMagics.NAME = ...`), as the commands see them."""

    model: str = ""
    approve: str = ""
    max_iterations: int = 10
    format: str = "markdown"
    system: str = ""
    history: bool = True
    stream_interval: float = 0.1
    max_result_chars: int = 20000
    history_rows: int = 10
    kernel_tools: bool = False
    session_budget: float = 0.0  # USD a session may cost (0: no limit)
    tool_budget: int = 40  # tools offered up front; more, and the model searches (0: every tool); agent/tool_search.py
    search_by_meaning: bool = True  # the tool search ranks by meaning too, where the search extra is installed
    hold_over: int = 4000  # tokens: a bigger tool result is held in the kernel by name (0: none is); agent/held.py
    publish_to: str = ""  # a lake directory published after each turn ("": off)
    otel: bool | None = None  # trace turns with OpenTelemetry (None: when OTEL_EXPORTER_OTLP_ENDPOINT is set)
    oauth_redirect: str = "auto"  # where a sign-in's browser comes back: auto, loopback or paste
