"""SynapseState: the container of one kernel's parts. It builds them and hands them out; it does nothing else.

The parts, each with one job: `port` (the kernel's I/O: kernel/port.py), `runner` (kernel/runner.py),
`secret_registry` (secrets.py), `router` (where events go: recording/router.py), `notice` (why turns are not
recorded, said once: recording/notice.py), `sessions` (sessions.py), `deck` (record/replay: recording/tape.py),
`tracer` (recording/tracing.py), `models` (models.py), `manual` (calls made by hand: recording/manual.py),
`apps` (MCP Apps Views: apps/views.py), `kernel` (the notebook's
`@tool` functions and the `kernel__*` group: workspace/tools.py), `settings` (the magics' options, once the
magics are registered), and the services built on first use (hub, registry, policy, store), so loading the
extension stays instant. Built by `%load_ext synapse_nb` and kept on the shell (never in module globals).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .apps.views import AppViews
from .kernel.port import KernelPort
from .kernel.runner import Runner
from .models import Models
from .recording.manual import ManualCalls
from .recording.notice import HistoryNotice
from .recording.reader import reader
from .recording.router import EventRouter
from .recording.tape import TapeDeck
from .recording.tracing import KernelTracing
from .secrets import SecretRegistry
from .sessions import Sessions, default_session_name
from .settings import Settings
from .teardown import close_parts
from .usage import usage_error
from .workspace.tools import KernelTools

if TYPE_CHECKING:
    from ..agent.approval import ApprovalPolicy
    from ..agent.held import HeldResults
    from ..agent.tools import ToolRegistry
    from ..history.store import HistoryStore
    from ..mcp_client.hub import McpHub
    from .questions.answers import NotebookAnswers
    from .questions.sign_in import NotebookSignIn

__all__ = ["STATE_ATTR", "Settings", "SynapseState", "usage_error"]  # the last two re-exported for old imports

STATE_ATTR = "_synapse_nb_state"


class SynapseState:
    """What the magics and unload share in one kernel: its parts (see the module docstring)."""

    def __init__(self, shell: Any | None = None, *, runner: Runner | None = None) -> None:
        self.settings: Callable[[], Settings] = Settings  # the magics' `settings` once they are registered
        self.runner = runner or Runner()
        self.port = KernelPort(shell, self.runner)
        self.secret_registry = SecretRegistry()
        self.tracer = KernelTracing(
            self.secret_registry, wanted=lambda: self.settings().otel, closed=lambda: self.closed)
        self.router = EventRouter(lambda: self.store, self.tracer.sink)
        self.notice = HistoryNotice(lambda: self.store)
        self.sessions = Sessions(
            registry=lambda: self.registry, policy=lambda: self.policy, history=lambda: reader(self.store),
            notebook=self.port.notebook_path, kernel_id=lambda: self.port.kernel_id,
            current=default_session_name(self.port.notebook_path()),
        )
        self.deck = TapeDeck(self.secret_registry)
        self.models = Models(self.secret_registry, self.deck, self.sessions, self.runner)
        self.manual = ManualCalls(lambda: self.hub, lambda: self.registry, self.sessions, self.router)
        self.kernel = KernelTools(shell, secrets=lambda: self.secret_registry.values)
        self.apps = AppViews(hub=lambda: self.hub, manual=self.manual, router=self.router, runner=self.runner,
                             sessions=self.sessions, policy=lambda: self.policy)
        self._hub: McpHub | None = None
        self.answers: NotebookAnswers | None = None  # answers servers' questions (built with the hub)
        self.sign_in: NotebookSignIn | None = None  # signs in to OAuth-protected servers (built with the hub)
        self._store: HistoryStore | None = None
        self._registry: ToolRegistry | None = None
        self._policy: ApprovalPolicy | None = None
        self._held: HeldResults | None = None
        self.closed = False

    @property
    def hub(self) -> McpHub:
        """The MCP hub (built on first use, with what answers its servers' questions and signs in to them)."""
        if self._hub is None:
            from ..mcp_client.hub import McpHub
            from .questions.answers import NotebookAnswers
            from .questions.sign_in import NotebookSignIn

            self.answers = NotebookAnswers(self.port, self.runner, self.router, self.models)
            self.sign_in = NotebookSignIn(self.port, self.router, lambda: self.settings().oauth_redirect)
            self._hub = McpHub(on_event=self.router.record, handlers=self.answers.handlers(), sign_in=self.sign_in,
                               tracer=self.tracer.requests)
            self.registry.source = self._hub
        return self._hub

    @property
    def has_hub(self) -> bool:
        return self._hub is not None

    @property
    def registry(self) -> ToolRegistry:
        """MCP tools of the hub plus the `@synapse_nb.tool` functions of the notebook (built on first use)."""
        if self._registry is None:
            from ..agent.tools import ToolRegistry

            self._registry = ToolRegistry(self._hub)
        return self._registry

    @property
    def held(self) -> HeldResults:
        """The tool results the kernel holds by name (agent/held.py), each also a variable of the user's namespace."""
        if self._held is None:
            from ..agent.held import HeldResults

            namespace = getattr(self.port.shell, "user_ns", None)
            self._held = HeldResults(namespace if isinstance(namespace, dict) else None)
        return self._held

    @property
    def policy(self) -> ApprovalPolicy:
        """The kernel's approval policy: per-server rules from connects, "always" answers remembered."""
        if self._policy is None:
            from ..agent.approval import ApprovalPolicy

            self._policy = ApprovalPolicy()
        return self._policy

    @property
    def store(self) -> HistoryStore:
        """The history store (opened on first use; never raises: check `.available`)."""
        if self._store is None:
            from ..history.store import HistoryStore

            self._store = HistoryStore.open()
            self.secret_registry.subscribe(self._store.redactor.add_secret)  # for as long as the kernel runs
        return self._store

    @property
    def has_store(self) -> bool:
        return self._store is not None

    def close(self) -> None:
        """Close the parts in order (notebook/teardown.py): tape and Views, runs, servers and providers, then
        the lake publisher, the history store and tracing."""
        if self.closed:
            return
        self.closed = True
        close_parts(self.runner, self.deck, self.apps, self._hub, self.models, self.router, self._store, self.tracer)
