"""TurnParts: what a `%%synapse` turn uses of the kernel's parts (commands/ask.py), every member of it.

A turn reads nothing else of the kernel: the magics build this from the state (subcommands.py: `turn_parts`),
as they build the inspector's WidgetParts. The parts the state builds on first use (the hub, the registry, the
policy, the held results) are given as callables, so that loading the extension still builds none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...agent.approval import ApprovalPolicy
    from ...agent.held import HeldResults
    from ...agent.tools import ToolRegistry
    from ...history.store import HistoryStore
    from ...mcp_client.hub import McpHub
    from ..apps.views import AppViews
    from ..kernel.port import KernelPort
    from ..kernel.runner import Runner
    from ..models import Models
    from ..questions.answers import NotebookAnswers
    from ..recording.notice import HistoryNotice
    from ..recording.router import EventRouter
    from ..recording.tape import TapeDeck
    from ..recording.tracing import KernelTracing
    from ..sessions import Sessions
    from ..settings import Settings
    from ..workspace.tools import KernelTools

__all__ = ["TurnParts"]


@dataclass(frozen=True)
class TurnParts:
    """The kernel's parts one turn uses (see the module docstring)."""

    port: KernelPort  # the cell's output, stdin questions, the user namespace
    runner: Runner  # background runs and a View's turns are its tasks
    sessions: Sessions  # the conversation a turn continues, its agent
    models: Models  # the provider of a model id
    deck: TapeDeck  # record / replay
    router: EventRouter  # where the turn's events are recorded
    tracer: KernelTracing  # OpenTelemetry spans of the turn, while tracing is on
    apps: AppViews  # MCP Apps Views of UI tools, and the context they give the model
    kernel: KernelTools  # the notebook's @tool functions and the kernel__* group
    notice: HistoryNotice  # why turns are not recorded, said once
    settings: Callable[[], Settings]  # the magics' options now (a View's turn reads them when it starts)
    registry: Callable[[], ToolRegistry]
    policy: Callable[[], ApprovalPolicy]
    held: Callable[[], HeldResults]
    store: Callable[[], HistoryStore]  # the history (a --resume turn's transcript, the tool search's tie-breaker)
    hub: Callable[[], McpHub | None]  # the hub, once one was built (a turn never builds it)
    answers: Callable[[], NotebookAnswers | None]  # built with the hub: a server's question shows in the turn
