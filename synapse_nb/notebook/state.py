"""SynapseState: the thin container of one kernel's parts, for the magics, the widgets and unload.

It holds small parts with one job each: `secret_registry` (notebook/secrets.py), `router` (where events
go: notebook/recording/router.py), `sessions` (notebook/sessions.py), `deck` (record/replay:
notebook/recording/tape.py), `tracer` (OpenTelemetry: notebook/recording/tracing.py), `models` (providers:
notebook/models.py), `apps` (MCP Apps Views: notebook/apps/views.py), and the services built on first use (hub,
registry, policy, store), so
loading the extension stays instant.
Built by `%load_ext synapse_nb` and kept on the shell (never in module globals). Commands and helpers
take the parts they use; the methods here that only forward to a part are kept for the callers that
hold the whole.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ..errors import SynapseError, TaskDetachedError
from ..events import Event, ServerEvent, ToolCallFinished, utcnow
from ..types import ToolCall, ToolResult
from .apps.views import AppViews
from .kernel.port import KernelPort, notebook_path
from .kernel.runner import CANCEL_GRACE, Runner
from .models import Models
from .recording.router import EventRouter
from .recording.tape import TapeDeck
from .recording.tracing import KernelTracing
from .secrets import SecretRegistry
from .sessions import Sessions
from .settings import Settings
from .usage import usage_error

if TYPE_CHECKING:
    from ..agent.approval import ApprovalPolicy
    from ..agent.orchestrator import Agent
    from ..agent.tools import ToolRegistry
    from ..history.lake_background import LakePublisher
    from ..history.reader import History
    from ..history.store import HistoryStore
    from ..mcp_client.hub import McpHub
    from ..mcp_client.task_watch import TaskWatch
    from ..protocols import EventSink, ProgressCallback, Provider
    from ..telemetry.export import Tracing
    from ..telemetry.spans import SpanSink
    from .questions.answers import NotebookAnswers
    from .questions.sign_in import NotebookSignIn
    from .recording.tape import Tape
    from .turns.result import BackgroundRun
    from .workspace.tools import KernelTools

__all__ = ["STATE_ATTR", "Settings", "SynapseState", "usage_error"]  # the last two re-exported for old imports

logger = logging.getLogger("synapse_nb.notebook")

STATE_ATTR = "_synapse_nb_state"


class SynapseState:
    """What the magics, the widgets and unload share in one kernel: the kernel's parts (see the module
    docstring), the services built on first use, and the teardown of all of them."""

    def __init__(self, shell: Any | None = None, *, runner: Runner | None = None) -> None:
        self.runner = runner or Runner()
        self.port = KernelPort(shell, self.runner)  # the kernel's I/O: shell, displays, questions, kernel id
        self.secret_registry = SecretRegistry()
        self.tracer = KernelTracing(
            self.secret_registry, wanted=lambda: getattr(self.magics, "otel", None), closed=lambda: self.closed)
        self.router = EventRouter(lambda: self.store, self.tracer.sink)
        self.sessions = Sessions(
            registry=lambda: self.registry, policy=lambda: self.policy, history=self.history,
            notebook=self.port.notebook_path, kernel_id=lambda: self.port.kernel_id,
            current=default_session_name(shell),
        )
        self.deck = TapeDeck(self.secret_registry)  # record / replay (notebook/recording/tape.py)
        self.models = Models(self.secret_registry, self.deck, self.sessions, self.runner)
        self.apps = AppViews(self)  # MCP Apps Views and the context they give the next turn (notebook/apps/views.py)
        self._hub: McpHub | None = None
        self.answers: NotebookAnswers | None = None  # answers servers' questions (built with the hub)
        self.sign_in: NotebookSignIn | None = None  # signs in to OAuth-protected servers (built with the hub)
        self._store: HistoryStore | None = None
        self._registry: ToolRegistry | None = None
        self._policy: ApprovalPolicy | None = None
        self.magics: Any = None  # the SynapseMagics instance (set by extension.load)
        self.kernel: KernelTools | None = None  # the `kernel__*` tool group (set by extension.load)
        self.warned_history = False
        self.closed = False

    # -- forwarded to the parts (for callers holding the whole)

    @property
    def current(self) -> str:
        """The current session's name (`%synapse session NAME`)."""
        return self.sessions.current

    @current.setter
    def current(self, name: str) -> None:
        self.sessions.current = name

    @property
    def background(self) -> dict[str, BackgroundRun]:
        """The background run of each session (the latest, done or not)."""
        return self.sessions.background

    @property
    def tape(self) -> Tape | None:
        """What is on: recording or replaying (notebook/recording/tape.py); None: neither."""
        return self.deck.tape

    @property
    def lake_publisher(self) -> LakePublisher | None:
        """`publish_to`: publishes the lake after each turn (None: off)."""
        return self.router.lake_publisher

    @lake_publisher.setter
    def lake_publisher(self, publisher: LakePublisher | None) -> None:
        self.router.lake_publisher = publisher

    # -- lazily built parts

    @property
    def hub(self) -> McpHub:
        """The MCP hub (created on first use; its events go to the history)."""
        if self._hub is None:
            from ..mcp_client.hub import McpHub
            from .questions.answers import NotebookAnswers

            # Servers' questions (elicitation, sampling) are answered in the running cell: notebook/questions/answers.py
            from .questions.sign_in import NotebookSignIn

            self.answers = NotebookAnswers(self.port, self.runner, self.router, self.models)
            self.sign_in = NotebookSignIn(
                self.port, self.router, lambda: str(getattr(self.magics, "oauth_redirect", "auto") or "auto"))
            self._hub = McpHub(on_event=self.router.record, handlers=self.answers.handlers(), sign_in=self.sign_in,
                               tracer=self.tracer.requests)
            self.registry.source = self._hub
        return self._hub

    @property
    def has_hub(self) -> bool:
        return self._hub is not None

    @property
    def registry(self) -> ToolRegistry:
        """MCP tools of the hub plus the `@synapse_nb.tool` functions of the notebook."""
        if self._registry is None:
            from ..agent.tools import ToolRegistry

            self._registry = ToolRegistry(self._hub)
        return self._registry

    def register_notebook_tools(self) -> list[str]:
        """Offer the notebook's `@synapse_nb.tool` functions (found in the user namespace) to the model,
        and register the opt-in `kernel__*` group (offered only when a cell turns it on)."""
        namespace: Mapping[str, Any] = getattr(self.port.shell, "user_ns", None) or {}
        if self.kernel is not None:
            self.kernel.install(self.registry)
        try:
            return self.registry.register_namespace(namespace)
        except SynapseError as exc:
            raise usage_error(exc) from None

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

    def history(self) -> History | None:
        """A reader over the history file, or None when it cannot be used."""
        store = self.store
        if not store.available:
            return None
        return store.history()

    def require_history(self) -> History:
        """The history reader, or a UsageError saying why there is none."""
        store = self.store
        if not store.available:
            raise UsageError(f"history is not available: {store.problem or 'the store is closed'}")
        try:
            return store.history()
        except SynapseError as exc:
            raise usage_error(exc) from None

    # -- recording

    def add_secret(self, value: str) -> None:
        """A value that must never reach the history file or the display (header or env value)."""
        self.secret_registry.add(value)

    @property
    def secrets(self) -> tuple[str, ...]:
        return self.secret_registry.values

    def record(self, event: Event) -> None:
        """The history sink the hub uses (notebook/recording/router.py)."""
        self.router.record(event)

    def tell_panels(self, event: ServerEvent) -> None:
        """Give open panels a ServerEvent without recording it (notebook/recording/router.py)."""
        self.router.tell_panels(event)

    def on_server_event(self, listener: EventSink) -> Callable[[], None]:
        """Call `listener` with every ServerEvent; returns the unsubscribe function (notebook/recording/router.py)."""
        return self.router.on_server_event(listener)

    def history_sink(self, enabled: bool) -> EventSink:
        """A sink recording one turn, or nothing of it (notebook/recording/router.py)."""
        return self.router.history_sink(enabled)

    def running_call(self, server: str) -> tuple[str, str, bool] | None:
        """The tool call running on `server` now: (session id, tool call id, recorded?), or None."""
        return self.router.running_call(server)

    def tracing(self) -> SpanSink | None:
        """The span sink of OpenTelemetry tracing while it is on, else None (notebook/recording/tracing.py)."""
        return self.tracer.sink()

    @property
    def tracing_pipeline(self) -> Tracing | None:
        """The open tracing pipeline (for `%synapse status`), or None: off, or not opened yet."""
        return self.tracer.pipeline

    def flush_tracing(self) -> bool:
        """Export the spans of ended turns now, in this thread; False when tracing is off."""
        return self.tracer.flush()

    def close_tracing(self) -> None:
        """Stop tracing: open spans end, queued ones get a bounded moment to export."""
        self.tracer.close()

    async def call_tool(
        self, qualified_name: str, arguments: Mapping[str, Any], *, on_progress: ProgressCallback | None = None,
        origin: str = "manual", on_recorded: Callable[[float], None] | None = None, task: TaskWatch | None = None,
    ) -> ToolResult:
        """Run one MCP tool by hand (`%mcp call`, the inspector's Call) and record it as the agent's calls
        are, with approval "manual", in the current session (or none before the first turn). A built-in
        group's tool (`kernel__*`) and an `@synapse_nb.tool` function (`python.NAME`) run in process through the
        registry. `on_progress` sees the server's
        progress reports (the inspector's bar); `origin` is recorded as who asked ("manual", or
        "app:SERVER" for an MCP Apps View's call); `on_recorded` gets the duration recorded (ms), so what shows
        the call (the inspector's badge) says what its history row says. A call the server runs as an MCP task is
        seen through `task` (its status, its question); one detached from (TaskDetachedError) is recorded when its
        result is fetched (commands/mcp_tasks.py), under the same tool call id."""
        grouped = self.registry.group_of(qualified_name) is not None or any(  # runs in process: a group's
            s.name == qualified_name for s in self.registry.native)  # tool, or an @synapse_nb.tool function
        spec = self.registry.spec(qualified_name) if grouped else self.hub.tool(qualified_name)
        call = ToolCall(uuid.uuid4().hex, qualified_name, dict(arguments))
        started_at, started = utcnow(), time.perf_counter()
        result: ToolResult | None = None
        error: str | None = "cancelled"
        agent = self.sessions.get(self.current)
        if spec.server is not None:
            self.router.call_started(
                spec.server, agent.session_id if agent is not None and agent.messages else "", call.id)
        if task is not None:
            task.tool_call_id = call.id
            task.session_id = agent.session_id if agent is not None and agent.messages else None
        detached = False
        try:
            if grouped:
                result = await self.registry.call(qualified_name, arguments, on_progress=on_progress)
            else:
                result = await self.hub.call(qualified_name, arguments, on_progress=on_progress, task=task)
            error = None
            return result
        except TaskDetachedError:
            detached = True
            raise
        except SynapseError as exc:
            error = str(exc)
            raise
        finally:
            if not detached:  # a detached task's result is recorded when it is fetched (commands/mcp_tasks.py)
                agent = self.sessions.get(self.current)
                took = (time.perf_counter() - started) * 1000
                self.router.record(ToolCallFinished(
                    session_id=agent.session_id if agent is not None and agent.messages else "", call=call,
                    server=spec.server, tool=spec.original_name or qualified_name, approval="manual",
                    started_at=started_at, duration_ms=took, result=result, error=error, origin=origin,
                ))
                if on_recorded is not None:
                    on_recorded(took)

    # -- models and sessions

    def provider(self, model_id: str | None) -> Provider:
        """The provider for a model id (None: the kernel's model, else SYNAPSE_MODEL, else scripted:demo);
        see notebook/models.py."""
        return self.models.provider(model_id)

    @property
    def model(self) -> str | None:
        """The kernel's model (`%synapse model ID`), or None."""
        return self.models.model

    @model.setter
    def model(self, model_id: str | None) -> None:
        self.models.model = model_id

    def agent(self, name: str, provider: Provider) -> Agent:
        """The agent of a session of this kernel, created (not yet recorded) on first use."""
        return self.sessions.agent(name, provider)

    def own_session_name(self, name: str) -> str:
        """`name`, or `name-KERNEL` when another kernel recorded a session of that name (notebook/sessions.py)."""
        return self.sessions.own_name(name)

    def new_session_name(self) -> str:
        """A name no session of this kernel has (notebook/sessions.py)."""
        return self.sessions.new_name()

    # -- teardown

    async def aclose(self) -> None:
        """Close MCP servers and providers (background runs are cancelled by the caller first)."""
        if self._hub is not None:
            try:
                await self._hub.aclose()
            except Exception:  # teardown goes on whatever one part does
                logger.exception("closing the MCP hub failed")
        await self.models.aclose()

    def close(self) -> None:
        """Cancel background runs, close servers, providers and the history store (bounded).

        Called from a cell of a running kernel (`%unload_ext`), the loop cannot be waited on without a
        nested run (which would patch asyncio for good: notebook/kernel/runner.py), so the teardown is then a
        task that finishes right after the cell; elsewhere it is done when this returns.
        """
        if self.closed:
            return
        self.closed = True
        self.deck.close()
        self.apps.close_all()
        if not self.runner.can_block:
            for task in self.runner.tasks:
                task.cancel()
            self.runner.spawn(self._teardown(), name="synapse_nb teardown")
            return
        self.runner.cancel_all()
        try:
            self.runner.run(self.aclose(), timeout=30)
        except BaseException:  # unload must finish even if closing is interrupted or times out
            logger.exception("closing synapse_nb did not finish cleanly")
        self._close_history()

    async def _teardown(self) -> None:
        me = asyncio.current_task()
        pending = [t for t in self.runner.tasks if t is not me and not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=CANCEL_GRACE)
        try:
            async with asyncio.timeout(30):
                await self.aclose()
        except BaseException:  # the store is closed whatever happened to the servers
            logger.exception("closing synapse_nb did not finish cleanly")
        self._close_history()

    def _close_history(self) -> None:
        if self.router.lake_publisher is not None:
            self.router.lake_publisher.close()
            self.router.lake_publisher = None
        if self._store is not None:
            self._store.close()
        self.close_tracing()


def default_session_name(shell: Any | None) -> str:
    """The notebook's file name (without suffix) when the frontend tells us, else `main`."""
    path = notebook_path(shell)
    if path:
        stem = re.sub(r"[^\w.-]+", "-", Path(path).stem).strip("-")
        if stem:
            return stem
    return "main"

