"""`%synapse` subcommands: status, model, session, history, sql, inspect, reset (one function each)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ...errors import SynapseError
from ...pricing import usd
from ..output.markup import Html
from ..recording.reader import require_reader
from ..settings import Settings
from ..usage import usage_error

if TYPE_CHECKING:
    import pandas as pd

    from ...agent.approval import ApprovalPolicy
    from ...agent.tools import ToolRegistry
    from ...history.store import HistoryStore
    from ...mcp_client.hub import McpHub
    from ..models import Models
    from ..recording.router import EventRouter
    from ..recording.tape import TapeDeck
    from ..recording.tracing import KernelTracing
    from ..sessions import Sessions

__all__ = [
    "Status",
    "history",
    "inspect",
    "model",
    "reset",
    "session_list",
    "session_new",
    "session_show",
    "session_switch",
    "sql",
    "status",
]


@dataclass(frozen=True)
class Status:
    """`%synapse status`: what the extension is doing in this kernel."""

    model: str
    session: str
    session_id: str | None
    turns_messages: int
    servers: tuple[tuple[str, str, int], ...]  # (name, state, tools)
    native_tools: int
    history_path: str
    history_problem: str | None
    background: tuple[tuple[str, str], ...]  # (session, status)
    history_paused: str | None = None  # recorded into the spool, not written to the file (a newer schema)
    tape: str | None = None  # record/replay, when on (notebook/recording/tape.py)
    tracing: str | None = None  # OpenTelemetry, when asked for: where spans go (never header values)
    budget: str | None = None  # SynapseMagics.session_budget, when set
    lake: str | None = None  # SynapseMagics.publish_to, when set

    def _items(self) -> list[tuple[str, str]]:
        servers = ", ".join(f"{n} ({s}, {t} tools)" for n, s, t in self.servers) or "none (%mcp connect ...)"
        history = self.history_path + (f" — not recorded: {self.history_problem}" if self.history_problem else "")
        if self.history_paused:
            history += f" — {self.history_paused}"
        session = self.session + (f" ({self.turns_messages} messages so far)" if self.turns_messages else " (new)")
        items = [("model", self.model), ("session", session), ("MCP servers", servers)]
        if self.tape:
            items.insert(1, ("record/replay", self.tape))
        if self.native_tools:
            items.append(("Python tools", str(self.native_tools)))
        if self.budget:
            items.append(("session budget", self.budget))
        items.append(("history", history))
        if self.lake:
            items.append(("lake", self.lake))
        if self.tracing:
            items.append(("tracing", self.tracing))
        if self.background:
            items.append(("background runs", ", ".join(f"{s}: {st}" for s, st in self.background)))
        return items

    def __repr__(self) -> str:
        width = max(len(k) for k, _ in self._items())
        return "\n".join(f"{k.ljust(width)}  {v}" for k, v in self._items())

    def _repr_markdown_(self) -> str:
        rows = "\n".join(Html("| **{}** | {} |").format(k, v) for k, v in self._items())
        return "| synapse | |\n|---|---|\n" + rows


def status(
    settings: Settings, *, models: Models, sessions: Sessions, hub: McpHub | None, store: HistoryStore | None,
    registry: ToolRegistry, deck: TapeDeck, tracer: KernelTracing, router: EventRouter,
) -> Status:
    """`%synapse status`: what each part says (`hub`, `store`: None while not built)."""
    from ...providers.registry import describe_model

    try:
        model_line = describe_model(models.model or settings.model or None)
    except SynapseError as exc:
        model_line = f"{models.model or settings.model} (unusable: {exc})"
    agent = sessions.get(sessions.current)
    from .servers import state_words

    servers = tuple((s.name, state_words(s), s.tool_count) for s in hub.servers) if hub is not None else ()
    from ...config import history_path

    return Status(
        model=model_line,
        session=sessions.current,
        session_id=agent.session_id if agent is not None else None,
        turns_messages=len(agent.messages) if agent is not None else 0,
        servers=servers,
        native_tools=len(registry.native),
        history_path=str(store.path if store is not None else history_path()),
        history_problem=store.problem if store is not None else None,
        history_paused=store.paused if store is not None else None,
        background=tuple((name, run.status) for name, run in sessions.background.items()),
        tape=f"{tape.mode}: {tape.shown} ({tape.note})" if (tape := deck.tape) is not None else None,
        tracing=_tracing_line(tracer, settings),
        budget=f"{usd(settings.session_budget)} per session (SynapseMagics.session_budget)"
        if settings.session_budget else None,
        lake=_lake_line(router),
    )


def _tracing_line(tracer: KernelTracing, settings: Settings) -> str | None:
    """Whether turns are traced and where to: the endpoint only (URL masked), never the header values."""
    from ... import telemetry
    from ...masking import mask_url

    if not telemetry.wanted(settings.otel):
        return None
    if not telemetry.available():
        return f"asked for, but off: {telemetry.MISSING_EXTRA}"
    line = f"on: OTLP/HTTP to {mask_url(telemetry.endpoint())}"
    if telemetry.content_wanted():
        line += f", with content (masked; {telemetry.CONTENT_ENV})"
    pipeline = tracer.pipeline
    if pipeline is not None and pipeline.export_failed:
        line += " — exports are failing: spans are dropped while the collector cannot be reached"
    return line


def _lake_line(router: EventRouter) -> str | None:
    """Where history is published after each turn (SynapseMagics.publish_to), and the last failure if any."""
    publisher = router.lake_publisher
    if publisher is None:
        return None
    line = f"publishes to {publisher.dest} after each turn"
    return line + (f" — the last publish failed: {publisher.problem}" if publisher.problem else "")


def model(models: Models, settings: Settings, model_id: str | None) -> str:
    """`%synapse model [ID]`: show the model, or make ID this kernel's model (checked now)."""
    from ...providers.registry import describe_model

    if model_id:
        models.provider(model_id)  # UsageError now (unknown provider, missing key), not at the next cell
        models.model = model_id
    try:
        return describe_model(models.model or settings.model or None)
    except SynapseError as exc:
        raise usage_error(exc) from None


# ---------------------------------------------------------------------------------------------- sessions


def session_show(sessions: Sessions) -> str:
    """`%synapse session`: the current session."""
    agent = sessions.get(sessions.current)
    if agent is None or not agent.messages:
        return f"session {sessions.current} (new: nothing asked yet)"
    return f"session {sessions.current} ({len(agent.messages)} messages, id {agent.session_id})"


def session_new(sessions: Sessions, name: str | None = None) -> str:
    """`%synapse session new [NAME]`: a fresh session becomes the current one."""
    name = name or sessions.new_name()
    if name in sessions and sessions[name].messages:
        raise UsageError(f"%synapse session new: {name!r} already exists; pick another name or switch to it")
    sessions.current = name
    return f"new session {name}"


def session_switch(sessions: Sessions, models: Models, name: str) -> str:
    """`%synapse session switch NAME`: continue another session, of this kernel or from the history file
    (by name or id prefix, e.g. one from another kernel or an earlier day); new when found nowhere."""
    agent = sessions.get(name)
    if agent is None or not agent.messages:
        resumed = sessions.resume_recorded(name, lambda: models.provider(None))
        if resumed is not None:
            sessions.current = resumed
            return (f"resumed session {resumed} from the history file "
                    f"({len(sessions[resumed].messages)} messages)")
    sessions.current = name
    if agent is None or not agent.messages:
        return f"switched to session {name} (new)"
    return f"switched to session {name} ({len(agent.messages)} messages so far)"


def session_list(store: HistoryStore, sessions: Sessions, settings: Settings) -> pd.DataFrame:
    """`%synapse session list`: sessions from the history file, newest last, with turns and tool calls."""
    hist = require_reader(store)
    limit = max(settings.history_rows, 1) * 5
    frame = _sql(
        hist,
        "SELECT s.name, s.session_id, s.created_at, s.model, "
        "  (SELECT count(*) FROM turns t WHERE t.session_id = s.session_id) AS turns, "
        "  (SELECT count(*) FROM tool_calls c WHERE c.session_id = s.session_id) AS tool_calls "
        f"FROM sessions s ORDER BY s.created_at DESC LIMIT {limit}",
    )
    frame = frame.iloc[::-1].reset_index(drop=True)
    current = sessions.get(sessions.current)
    frame.insert(0, "current", frame["session_id"] == (current.session_id if current else ""))
    return frame


def reset(sessions: Sessions, policy: ApprovalPolicy) -> str:
    """`%synapse reset`: forget the current session's transcript (and the "always" answers of the kernel's
    approval `policy`); the next cell starts a new session."""
    agent = sessions.get(sessions.current)
    run = sessions.background.get(sessions.current)
    if run is not None and not run.done():
        raise UsageError(f"%synapse reset: session {sessions.current!r} has a background run; cancel it first")
    if agent is not None:
        agent.reset()
    policy.forget()
    return f"session {sessions.current} reset: the next %%synapse starts a new conversation"


# ---------------------------------------------------------------------------------------------- history


def history(store: HistoryStore, settings: Settings, n: int | None = None) -> pd.DataFrame:
    """`%synapse history [-n N]`: the last N turns of the history file (all sessions), oldest first, as people
    read them: start times to the second, durations to 0.1 ms, an unknown cost or no error as a blank cell
    (`%synapse sql` gives the exact values)."""
    from ..output.listing import Listing

    limit = n if n is not None else settings.history_rows
    if limit < 1:
        raise UsageError("%synapse history: -n must be at least 1, e.g. %synapse history -n 5")
    hist = require_reader(store)
    frame = _sql(
        hist,
        "SELECT date_trunc('second', t.started_at) AS started_at, s.name AS session, t.prompt, t.status, "
        "  t.iterations, "
        "  (SELECT count(*) FROM tool_calls c WHERE c.session_id = t.session_id "
        "     AND c.started_at >= t.started_at "
        "     AND c.started_at <= t.started_at + t.duration_ms * INTERVAL 1 MILLISECOND) AS tool_calls, "
        "  t.input_tokens + t.output_tokens AS tokens, t.cost_usd, round(t.duration_ms, 1) AS duration_ms, "
        "  t.error "
        "FROM turns t LEFT JOIN (SELECT DISTINCT session_id, name FROM sessions) s USING (session_id) "
        f"ORDER BY t.started_at DESC LIMIT {int(limit)}",
    )
    return Listing(frame.iloc[::-1].reset_index(drop=True))


def sql(store: HistoryStore, query: str) -> pd.DataFrame:
    """`%synapse sql QUERY` / `%%synapse_sql`: any SQL over the history relations, as a DataFrame whose cells
    show whole up to 2,000 characters (`QueryFrame`)."""
    from ..output.listing import QueryFrame

    if not query.strip():
        raise UsageError("%synapse sql: missing query, e.g. %synapse sql SELECT * FROM tool_calls")
    return QueryFrame(_sql(require_reader(store), query))


def _sql(hist: Any, query: str) -> pd.DataFrame:
    try:
        frame: pd.DataFrame = hist.sql(query)
    except SynapseError as exc:  # a bad query is a HistoryError naming DuckDB's complaint
        raise usage_error(exc) from None
    return frame


def inspect(sessions: Sessions, store: HistoryStore) -> Any:
    """`%synapse inspect`: the trace widget of the current session (messages, tool calls, timings)."""
    agent = sessions.get(sessions.current)
    if agent is None or not agent.messages:
        raise UsageError(f"%synapse inspect: session {sessions.current!r} has no turns yet; ask something first")
    from ..widgets import session_trace

    return session_trace(require_reader(store), agent.session_id)
