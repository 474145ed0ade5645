"""The extension's state in one kernel: runner, MCP hub, history store, sessions, providers, settings.

Built by `%load_ext synapse_nb` and kept on the shell (never in module globals); every heavy part (the
MCP SDK, DuckDB, httpx) is created on first use, so loading the extension stays instant.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ..errors import SynapseError
from ..events import (
    Event,
    ServerEvent,
    SessionStarted,
    ToolCallFinished,
    ToolCallStarted,
    TurnCancelled,
    TurnFailed,
    TurnFinished,
    utcnow,
)
from ..types import ToolCall, ToolResult
from .kernel_port import KernelPort, notebook_path
from .runner import CANCEL_GRACE, Runner

if TYPE_CHECKING:
    from ..agent.approval import ApprovalPolicy
    from ..agent.orchestrator import Agent
    from ..agent.tools import ToolRegistry
    from ..history.lake_background import LakePublisher
    from ..history.reader import History
    from ..history.store import HistoryStore
    from ..mcp_client.hub import McpHub
    from ..protocols import EventSink, ProgressCallback, Provider
    from ..providers.registry import ProviderCache
    from ..telemetry.export import Tracing
    from ..telemetry.spans import SpanSink
    from .elicit import NotebookAnswers
    from .kernel_tools import KernelTools
    from .result import BackgroundRun
    from .sign_in import NotebookSignIn
    from .tape import Tape

__all__ = ["STATE_ATTR", "Settings", "SynapseState", "usage_error"]

logger = logging.getLogger("synapse_nb.notebook")

STATE_ATTR = "_synapse_nb_state"


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


def usage_error(exc: SynapseError) -> UsageError:
    """The one place a SynapseError becomes IPython's UsageError (one line, no traceback)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return UsageError(text)


class SynapseState:
    """Everything the magics and widgets share in one kernel (also the facade the widgets get)."""

    def __init__(self, shell: Any | None = None, *, runner: Runner | None = None) -> None:
        self.runner = runner or Runner()
        self.port = KernelPort(shell, self.runner)  # the kernel's I/O: shell, displays, questions, kernel id
        self.model: str | None = None  # set by `%synapse model ID`
        self.current = default_session_name(shell)
        self.sessions: dict[str, Agent] = {}
        self.background: dict[str, BackgroundRun] = {}
        self._hub: McpHub | None = None
        self.answers: NotebookAnswers | None = None  # answers servers' questions (built with the hub)
        self.sign_in: NotebookSignIn | None = None  # signs in to OAuth-protected servers (built with the hub)
        self._store: HistoryStore | None = None
        self.lake_publisher: LakePublisher | None = None  # `publish_to`: publishes after each turn
        self._registry: ToolRegistry | None = None
        self._policy: ApprovalPolicy | None = None
        self._providers: ProviderCache | None = None
        self._secrets: list[str] = []
        self._session_events: dict[str, SessionStarted] = {}
        self._recorded_sessions: set[str] = set()
        # server -> the tool call running on it (session id, call id, recorded?): a sampling request
        # the server sends meanwhile is recorded as caused by that call (notebook/elicit.py).
        self._running_calls: dict[str, tuple[str, str, bool]] = {}
        self._session_counter = 1
        self.magics: Any = None  # the SynapseMagics instance (set by extension.load)
        self.kernel: KernelTools | None = None  # the `kernel__*` tool group (set by extension.load)
        self.warned_history = False
        self.closed = False
        self._server_listeners: list[EventSink] = []
        self.tape: Tape | None = None  # record or replay (notebook/tape.py); None: neither is on
        self._tracing: Tracing | None = None
        self._tracing_said = False  # the missing-extra line was given

    # -- lazily built parts

    @property
    def hub(self) -> McpHub:
        """The MCP hub (created on first use; its events go to the history)."""
        if self._hub is None:
            from ..mcp_client.hub import McpHub
            from .elicit import NotebookAnswers

            # Servers' questions (elicitation, sampling) are answered in the running cell: notebook/elicit.py
            from .sign_in import NotebookSignIn

            self.answers = NotebookAnswers(self)
            self.sign_in = NotebookSignIn(self)
            self._hub = McpHub(on_event=self.record, handlers=self.answers.handlers(), sign_in=self.sign_in)
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
            for secret in self._secrets:
                self._store.redactor.add_secret(secret)
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
        if not value or value in self._secrets:
            return
        self._secrets.append(value)
        if self._store is not None:
            self._store.redactor.add_secret(value)
        if self.tape is not None:
            self.tape.mask.add_secret(value)
        if self._tracing is not None:
            self._tracing.add_secret(value)

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(self._secrets)

    def record(self, event: Event) -> None:
        """The history sink (used by the hub): records everything; server events also go to open panels, the
        rest (a server's sampling request, a call made by hand) to tracing when it is on."""
        self._sink(event, enabled=True)
        if isinstance(event, ServerEvent):
            self.tell_panels(event)
        elif (sink := self.tracing()) is not None:  # a server's sampling request, a call made by hand
            try:
                sink(event)
            except Exception:  # tracing must never break recording
                logger.exception("tracing a %s event failed", type(event).__name__)

    def tell_panels(self, event: ServerEvent) -> None:
        """Give open panels a ServerEvent without recording it (e.g. a question waiting for an answer)."""
        for listener in list(self._server_listeners):
            try:
                listener(event)
            except Exception:  # a widget's listener must not break the hub
                logger.exception("a server event listener failed")

    def on_server_event(self, listener: EventSink) -> Callable[[], None]:
        """Call `listener` with every ServerEvent (the inspector's panels); returns the unsubscribe function."""
        self._server_listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._server_listeners:
                self._server_listeners.remove(listener)

        return unsubscribe

    def tracing(self) -> SpanSink | None:
        """The span sink of OpenTelemetry tracing while it is on (`SynapseMagics.otel`, else the standard
        OTEL_EXPORTER_OTLP_* variables), opened on first use; None when off. Tracing asked for without the
        otel extra installed says so in one line, once, and the turn runs untraced."""
        from .. import telemetry

        if not telemetry.wanted(getattr(self.magics, "otel", None)):
            self.close_tracing()
            return None
        if self._tracing is None and not self.closed:
            for value in telemetry.header_secrets():  # the collector's credentials: secrets everywhere
                self.add_secret(value)
            try:
                self._tracing = telemetry.open_tracing(secrets=self._secrets)
            except ImportError:
                if not self._tracing_said:
                    self._tracing_said = True
                    logger.warning("%s", telemetry.MISSING_EXTRA)
                return None
        return self._tracing.sink if self._tracing is not None else None

    @property
    def tracing_pipeline(self) -> Tracing | None:
        """The open tracing pipeline (for `%synapse status`), or None: off, or not opened yet."""
        return self._tracing

    def flush_tracing(self) -> bool:
        """Export the spans of ended turns now, in this thread (they otherwise go in batches, off the loop);
        False when tracing is off. A collector that cannot be reached is said once, as always."""
        return self._tracing.flush() if self._tracing is not None else False

    def close_tracing(self) -> None:
        """Stop tracing: open spans end, queued ones get a bounded moment to export."""
        tracing, self._tracing = self._tracing, None
        if tracing is not None:
            tracing.close()

    def history_sink(self, enabled: bool) -> EventSink:
        """A sink for one turn; `enabled=False` (--no-history) records nothing of it.

        A session whose first turn was not recorded gets its session row with its first recorded turn.
        """
        return lambda event: self._sink(event, enabled=enabled)

    def running_call(self, server: str) -> tuple[str, str, bool] | None:
        """The tool call running on `server` now: (session id, tool call id, recorded?), or None."""
        return self._running_calls.get(server)

    def _sink(self, event: Event, *, enabled: bool) -> None:
        if isinstance(event, SessionStarted):
            self._session_events[event.session_id] = event
        elif isinstance(event, ToolCallStarted) and event.server is not None:
            self._running_calls[event.server] = (event.session_id, event.call.id, enabled)
        elif (isinstance(event, ToolCallFinished) and event.server is not None
              and self._running_calls.get(event.server, ("", "", True))[1] == event.call.id):
            del self._running_calls[event.server]
        if not enabled:
            return
        session_id = getattr(event, "session_id", None)
        if session_id is not None and session_id not in self._recorded_sessions:
            started = self._session_events.get(session_id)
            if started is not None:
                self._recorded_sessions.add(session_id)
                if started is not event:
                    self.store.record(started)
        self.store.record(event)
        if self.lake_publisher is not None and isinstance(event, TurnFinished | TurnFailed | TurnCancelled):
            self.lake_publisher.request()  # sets an event: the publish runs on the publisher's thread

    async def call_tool(
        self, qualified_name: str, arguments: Mapping[str, Any], *, on_progress: ProgressCallback | None = None,
    ) -> ToolResult:
        """Run one MCP tool by hand (`%mcp call`, the inspector's Call) and record it as the agent's calls
        are, with approval "manual", in the current session (or none before the first turn). A built-in
        group's tool (`kernel__*`) runs in process through the registry. `on_progress` sees the server's
        progress reports (the inspector's bar)."""
        grouped = self.registry.group_of(qualified_name) is not None
        spec = self.registry.spec(qualified_name) if grouped else self.hub.tool(qualified_name)
        call = ToolCall(uuid.uuid4().hex, qualified_name, dict(arguments))
        started_at, started = utcnow(), time.perf_counter()
        result: ToolResult | None = None
        error: str | None = "cancelled"
        agent = self.sessions.get(self.current)
        if spec.server is not None:
            self._running_calls[spec.server] = (
                agent.session_id if agent is not None and agent.messages else "", call.id, True)
        try:
            if grouped:
                result = await self.registry.call(qualified_name, arguments, on_progress=on_progress)
            else:
                result = await self.hub.call(qualified_name, arguments, on_progress=on_progress)
            error = None
            return result
        except SynapseError as exc:
            error = str(exc)
            raise
        finally:
            agent = self.sessions.get(self.current)
            self.record(ToolCallFinished(
                session_id=agent.session_id if agent is not None and agent.messages else "", call=call,
                server=spec.server, tool=spec.original_name or qualified_name, approval="manual",
                started_at=started_at, duration_ms=(time.perf_counter() - started) * 1000, result=result,
                error=error,
            ))

    # -- models and sessions

    def provider(self, model_id: str | None) -> Provider:
        """The provider for a model id (None: the kernel's model, else SYNAPSE_MODEL, else scripted:demo).

        A key or base URL changed in the environment (`%env`, after a 401) gives a new provider at the
        next call, and the replaced one is closed in the background on the runner's loop (once no
        background run could still be using it). The
        environment's secret values (a key set since the kernel started among them) become secrets of
        the history and the display.
        """
        from ..masking import secret_env_values
        from ..providers.registry import ProviderCache

        if self._providers is None:
            self._providers = ProviderCache()
        tape = self.tape
        try:
            if tape is not None and tape.cassette is not None:  # replaying: no key, no network
                return tape.provider(model_id or self.model or None, None)
            provider = self._providers.get(model_id or self.model or None)
        except SynapseError as exc:
            raise usage_error(exc) from None
        for value in secret_env_values():
            self.add_secret(value)
        # A background run may still stream through a replaced provider: close it once none runs.
        if self._providers.retired and all(run.done() for run in self.background.values()):
            self.runner.spawn(self._providers.aclose_retired(), name="synapse: close replaced providers")
        return provider if tape is None else tape.provider(model_id, provider)

    def agent(self, name: str, provider: Provider) -> Agent:
        """The agent of a session of this kernel, created (not yet recorded) on first use."""
        agent = self.sessions.get(name)
        if agent is None:
            from ..agent.orchestrator import Agent

            agent = Agent(
                provider, self.registry, session_name=name, approval=self.policy,
                notebook=self.port.notebook_path(), kernel_id=self.port.kernel_id,
            )
            self.sessions[name] = agent
        return agent

    def own_session_name(self, name: str) -> str:
        """`name`, or `name-KERNEL` (8 characters of this kernel's id) when another kernel recorded a session
        of that name: a notebook opened twice (or reopened) must not write two conversations as one name.

        Asked when a session of this kernel starts; without a kernel id or a readable history, `name`."""
        kernel = self.port.kernel_id  # qualifies names another kernel (the same notebook opened twice) took
        if kernel is None or name in self.sessions:
            return name
        try:
            history = self.history()
            if history is None:
                return name
            taken = history.sql(
                "SELECT 1 FROM sessions WHERE name = $1 AND kernel_id IS DISTINCT FROM $2 LIMIT 1",
                [name, kernel],
            )
        except SynapseError:
            return name  # the history cannot say: the turn itself reports why
        return name if taken.empty else f"{name}-{kernel[:8]}"

    def new_session_name(self) -> str:
        base = re.sub(r"-\d+$", "", self.current) or "session"
        while True:
            self._session_counter += 1
            name = f"{base}-{self._session_counter}"
            if name not in self.sessions:
                return name

    # -- teardown

    async def aclose(self) -> None:
        """Close MCP servers and providers (background runs are cancelled by the caller first)."""
        if self._hub is not None:
            try:
                await self._hub.aclose()
            except Exception:  # teardown goes on whatever one part does
                logger.exception("closing the MCP hub failed")
        if self._providers is not None:
            await self._providers.aclose()

    def close(self) -> None:
        """Cancel background runs, close servers, providers and the history store (bounded).

        Called from a cell of a running kernel (`%unload_ext`), the loop cannot be waited on without a
        nested run (which would patch asyncio for good: notebook/runner.py), so the teardown is then a
        task that finishes right after the cell; elsewhere it is done when this returns.
        """
        if self.closed:
            return
        self.closed = True
        if self.tape is not None:
            self.tape.close()
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
        if self.lake_publisher is not None:
            self.lake_publisher.close()
            self.lake_publisher = None
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

