"""Sessions: the conversations of one kernel by name (their Agents), the current one, background runs, naming."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import SynapseError

if TYPE_CHECKING:
    from ..agent.approval import ApprovalPolicy
    from ..agent.orchestrator import Agent
    from ..agent.tools import ToolRegistry
    from ..history.reader import History
    from ..protocols import Provider
    from .turns.result import BackgroundRun

__all__ = ["Sessions", "default_session_name"]


def default_session_name(notebook: str | None) -> str:
    """The notebook's file name (without suffix) when the frontend tells us, else `main`."""
    if notebook:
        stem = re.sub(r"[^\w.-]+", "-", Path(notebook).stem).strip("-")
        if stem:
            return stem
    return "main"


class Sessions(Mapping[str, "Agent"]):
    """The sessions of this kernel, a mapping of name to Agent (created on first use by `agent`, with the
    kernel's tool `registry` and approval `policy`); the `current` name, the background run of each session,
    and the naming rules (a name another kernel recorded gets this kernel's id; `-2`, `-3`... for new ones).
    `notebook` and `kernel_id` are asked when needed (the frontend may tell the notebook's path late)."""

    def __init__(
        self, *, registry: Callable[[], ToolRegistry], policy: Callable[[], ApprovalPolicy],
        history: Callable[[], History | None], notebook: Callable[[], str | None] = lambda: None,
        kernel_id: Callable[[], str | None] = lambda: None, current: str = "main",
    ) -> None:
        self._registry = registry
        self._policy = policy
        self._history = history
        self.notebook = notebook
        self._kernel_id = kernel_id  # qualifies names another kernel (the same notebook opened twice) took
        self.current = current
        self.agents: dict[str, Agent] = {}
        self.background: dict[str, BackgroundRun] = {}
        self._counter = 1

    def __getitem__(self, name: str) -> Agent:
        return self.agents[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.agents)

    def __len__(self) -> int:
        return len(self.agents)

    def agent(self, name: str, provider: Provider) -> Agent:
        """The agent of a session of this kernel, created (not yet recorded) on first use."""
        agent = self.agents.get(name)
        if agent is None:
            from ..agent.orchestrator import Agent

            agent = Agent(
                provider, self._registry(), session_name=name, approval=self._policy(),
                notebook=self.notebook(), kernel_id=self._kernel_id(),
            )
            self.agents[name] = agent
        return agent

    def resume_recorded(self, name: str, provider: Callable[[], Provider]) -> str | None:
        """The history file's session NAME (or id prefix) loaded into this kernel under its recorded name (its
        agent answered by `provider()`), which is returned; None when the history has none (or there is no
        history). `session switch` and `%%synapse --session NAME` both continue the recorded conversation
        instead of starting a second one of the same name."""
        history = self._history()
        if history is None:
            return None
        session_id = history.find_session(name)
        if session_id is None:
            return None
        messages, next_seq = history.transcript(session_id)
        found = history.sessions(session_id=session_id)
        recorded_name = str(found["name"].iloc[0]) if not found.empty else name
        taken = self.get(recorded_name)
        if taken is not None and taken.messages and taken.session_id != session_id:
            recorded_name = f"{recorded_name}-{session_id[:8]}"  # this kernel has its own session by that name
        self.agent(recorded_name, provider()).resume(session_id, messages, next_seq=next_seq,
                                                     last_usage=history.last_usage(session_id))
        return recorded_name

    def own_name(self, name: str) -> str:
        """`name`, or `name-KERNEL` (8 characters of this kernel's id) when another kernel recorded a session
        of that name: a notebook opened twice (or reopened) must not write two conversations as one name.

        Asked when a session of this kernel starts; without a kernel id or a readable history, `name`."""
        kernel_id = self._kernel_id()
        if kernel_id is None or name in self.agents:
            return name
        try:
            history = self._history()
            if history is None:
                return name
            taken = history.rows(  # rows, not sql: no pandas import (~1 s) before the cell's first output
                "SELECT 1 FROM sessions WHERE name = $1 AND kernel_id IS DISTINCT FROM $2 LIMIT 1",
                [name, kernel_id], relations=("sessions",),
            )
        except SynapseError:
            return name  # the history cannot say: the turn itself reports why
        return f"{name}-{kernel_id[:8]}" if taken else name

    def new_name(self) -> str:
        """A name no session of this kernel has: the current one's stem with the next number."""
        base = re.sub(r"-\d+$", "", self.current) or "session"
        while True:
            self._counter += 1
            name = f"{base}-{self._counter}"
            if name not in self.agents:
                return name

    def all_done(self) -> bool:
        """True when no background run is still going."""
        return all(run.done() for run in self.background.values())
