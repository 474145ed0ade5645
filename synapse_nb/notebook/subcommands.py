"""The magics' subcommands: each one a function from its words to a command's call, and the tables of them.

`SYNAPSE_TABLE` and `MCP_TABLE` list every subcommand of `%synapse` and `%mcp` once (name, function, one-line
help, options: commands/table.py); `%synapse help` and `%mcp help` are made from them. Each function gets the
magics (their settings, the kernel's parts, the user namespace) and the rest of the line; the work is the
command's, in notebook/commands/. `Pending` is a command that needs the event loop.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from .commands import help as help_text
from .commands import lake as lake_cmd
from .commands import mcp as mcp_cmd
from .commands import mcp_auth, mcp_call, mcp_features, mcp_read, mcp_skills, mcp_tasks
from .commands import session as session_cmd
from .commands.args import (
    CONNECT_OPTIONS,
    AskOptions,
    ConfigFile,
    expand,
    parse_call_arguments,
    parse_call_target,
    parse_connect,
)
from .commands.ask import CellInterrupted
from .commands.cost import COST_OPTIONS
from .commands.options import Option, OptionSet
from .commands.table import Subcommand, SubcommandTable
from .turns.holding import hold_policy

if TYPE_CHECKING:
    from ..history.reader import History
    from .commands.turn_parts import TurnParts
    from .magics import SynapseMagics
    from .state import SynapseState
    from .widgets.facade import WidgetParts

__all__ = [
    "HISTORY_OPTIONS",
    "MCP_HELP",
    "MCP_SUBCOMMANDS",
    "MCP_TABLE",
    "SQL_OPTIONS",
    "SYNAPSE_HELP",
    "SYNAPSE_SUBCOMMANDS",
    "SYNAPSE_TABLE",
    "Pending",
    "nothing",
    "turn_parts",
    "widget_parts",
]


@dataclass(frozen=True)
class Pending:
    """A command that needs the event loop: its coroutine, and the one line to end with when interrupted.

    Commands end cancelled when interrupted (a KeyboardInterrupt raised out of a task would stop the
    event loop); the runner turns that into KeyboardInterrupt in the caller, and this into one line.
    """

    coro: Coroutine[Any, Any, Any]
    cancelled: str

    def interrupted(self, exc: KeyboardInterrupt) -> CellInterrupted:
        if isinstance(exc, CellInterrupted):
            return exc
        return CellInterrupted(self.cancelled)


async def nothing(coro: Coroutine[Any, Any, Any]) -> None:
    """Await a command whose display says everything (no Out[] repeating it)."""
    await coro


def at_most(words: list[str], n: int, usage: str) -> None:
    if len(words) > n:
        raise UsageError(f"{usage}: unexpected {words[n]!r}")


def _identifier(text: str) -> str:
    if not text.isidentifier():
        raise argparse.ArgumentTypeError(f"needs a Python name, not {text!r}")
    return text


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"needs a whole number, not {text!r}") from None


HISTORY_OPTIONS = OptionSet("%synapse history", "%synapse help", (
    Option("-n", "N", "the last N turns", type=_whole),
))
"""`%synapse history`'s options, declared once (notebook/commands/options.py)."""



SQL_OPTIONS = OptionSet("%%synapse_sql", "%synapse help", (
    Option("--out", "NAME", "store the DataFrame in the variable NAME too", type=_identifier),
    Option("--lake", "LAKE", "query the team's Iceberg lake (SynapseMagics.publish_to publishes to one) instead of "
           "the history file"),
))
"""`%%synapse_sql`'s options, declared once (notebook/commands/options.py)."""


# ------------------------------------------------------------------------------- %synapse subcommands
# One function per subcommand: the words of the line into the command's call (notebook/commands/).


def _status(m: SynapseMagics, rest: str) -> Any:
    at_most(m.words("%synapse status", rest), 0, "%synapse status")
    state = m.state
    return session_cmd.status(
        m.settings(), models=state.models, sessions=state.sessions, hub=m.hub,
        store=state.store if state.has_store else None, registry=state.registry, deck=state.deck,
        tracer=state.tracer, router=state.router,
    )


def _model(m: SynapseMagics, rest: str) -> None:
    words = m.words("%synapse model", rest)
    at_most(words, 1, "%synapse model [ID]")
    print(session_cmd.model(m.state.models, m.settings(), words[0] if words else None))


def _session(m: SynapseMagics, rest: str) -> Any:
    words, state = m.words("%synapse session", rest), m.state
    if not words:
        print(session_cmd.session_show(state.sessions))
        return None
    action, args = words[0], words[1:]
    if action == "new":
        at_most(args, 1, "%synapse session new [NAME]")
        print(session_cmd.session_new(state.sessions, args[0] if args else None))
        return None
    if action == "list":
        at_most(args, 0, "%synapse session list")
        return session_cmd.session_list(state.store, state.sessions, m.settings())
    if action == "switch":
        if len(args) != 1:
            raise UsageError("%synapse session switch: name one session, e.g. %synapse session switch analysis")
        print(session_cmd.session_switch(state.sessions, state.models, args[0]))
        return None
    raise UsageError(f"%synapse session: unknown action {action!r}; use new [NAME], list or switch NAME")


def _history(m: SynapseMagics, rest: str) -> Any:
    ns, extra = HISTORY_OPTIONS.parse(m.words("%synapse history", rest))
    if extra:
        raise UsageError(f"%synapse history: unexpected {' '.join(extra)!r}; use %synapse history -n 5")
    return session_cmd.history(m.state.store, m.settings(), ns.n)


def _cost(m: SynapseMagics, rest: str) -> Any:
    from .commands.cost import cost

    return cost(m.state.store, m.words("%synapse cost", rest))


def _sql(m: SynapseMagics, rest: str) -> Any:
    lake, query = lake_cmd.split_lake(rest, "%synapse sql")
    return lake_cmd.sql(lake, query) if lake is not None else session_cmd.sql(m.state.store, query)


def _inspect_session(m: SynapseMagics, rest: str) -> Any:
    at_most(m.words("%synapse inspect", rest), 0, "%synapse inspect")
    return session_cmd.inspect(m.state.sessions, m.state.store)


def _reset(m: SynapseMagics, rest: str) -> None:
    at_most(m.words("%synapse reset", rest), 0, "%synapse reset")
    print(session_cmd.reset(m.state.sessions, m.state.policy))


def _tape(sub: str) -> Callable[[SynapseMagics, str], None]:
    """`%synapse record | replay`: notebook/recording/tape.py; `{path}` / `$path` expand as on other magic lines."""

    def run(m: SynapseMagics, rest: str) -> None:
        from .recording.tape import command as tape_command

        print(tape_command(m.state.deck, sub, m.words(f"%synapse {sub}", rest, expanded=True)))

    return run


def _publish(m: SynapseMagics, rest: str) -> Any:
    return lake_cmd.publish(m.state.router, m.state.store, m.words("%synapse publish", rest, expanded=True))


def _lake(m: SynapseMagics, rest: str) -> Any:
    return lake_cmd.lake(m.state.router, m.words("%synapse lake", rest, expanded=True))


def _results(m: SynapseMagics, rest: str) -> Any:
    from .commands import results as results_cmd

    return results_cmd.command(m.state.held, m.words("%synapse results", rest, expanded=True))


def _ask_line(m: SynapseMagics, rest: str) -> Pending | None:
    if not rest:
        raise UsageError("%synapse ask: missing question, e.g. %synapse ask What tables are there?")
    return m.ask("", rest, AskOptions())


def _synapse_help(m: SynapseMagics, rest: str) -> None:
    print(SYNAPSE_HELP)


SYNAPSE_TABLE: SubcommandTable[SynapseMagics] = SubcommandTable("%synapse", (
    Subcommand("ask", _ask_line, "a question to the agent that starts with a subcommand's name", "PROMPT"),
    Subcommand("status", _status, "model, session, servers, history file"),
    Subcommand("model", _model, "show the model, or use ID (provider:model) in this kernel", "[ID]"),
    Subcommand("session", _session, "the current session", forms=(
        ("new [NAME]", "start a fresh session"),
        ("list", "sessions in the history file"),
        ("switch NAME", "continue session NAME (resumed from the history file if recorded)"))),
    Subcommand("history", _history, "the last N turns (DataFrame)", "[-n N]", options=HISTORY_OPTIONS),
    Subcommand("cost", _cost, "what model calls cost (DataFrame); --by server: which server's tool results cost the "
               "most (their tokens in every later prompt)", "[--by B] [--since WHEN]", options=COST_OPTIONS),
    Subcommand("sql", _sql, "SQL over the history (DataFrame); multi-line: %%synapse_sql", "QUERY", forms=(
        ("--lake LAKE QUERY", "the same over the team's Iceberg lake (LAKE: a folder, s3://bucket/prefix with "
         "SYNAPSE_LAKE_CATALOG, a catalog URI or a lake config .json)"),)),
    Subcommand("publish", _publish, "publish this kernel's history into LAKE now, exactly once (default: the "
               "SynapseMagics.publish_to lake, else SYNAPSE_LAKE; publish_to does it after each turn)", "[LAKE]"),
    Subcommand("lake", _lake, "rewrite each day's small files as one file", "compact [LAKE]", forms=(
        ("expire [LAKE] [--older-than 7d]", "drop older snapshots and the data files only they used"),
        ("migrate OLD_DIR NEW_LAKE", "move a Parquet lake of the retired format into an Iceberg lake"))),
    Subcommand("results", _results, "the tool results the kernel holds by name (DataFrame): tables of over 20 rows "
               "and results over SynapseMagics.hold_over tokens (--hold-over on a cell or a connect); the model sees "
               "a summary and queries them with results__sql", forms=(
                   ("drop NAME|--all", "forget held results (and their variables)"),)),
    Subcommand("inspect", _inspect_session, "trace widget of the current session"),
    Subcommand("reset", _reset, "forget the current conversation (the next cell starts a new session)"),
    Subcommand("record", _tape("record"), "write every model exchange and tool result to a cassette (JSON lines)",
               "PATH | off"),
    Subcommand("replay", _tape("replay"), "answer every model request (and tool call, unless --live-tools) from a "
               "cassette: no network, no key; a request it does not hold fails the cell (SYNAPSE_RECORD / "
               "SYNAPSE_REPLAY do the same from %load_ext on)", "PATH [--live-tools] | off"),
    Subcommand("help", _synapse_help, "this help"),
))
"""`%synapse`'s subcommands, in the order `%synapse help` lists them; the help is made from this table."""

SYNAPSE_HELP = help_text.SYNAPSE_HELP.replace("{subcommands}", SYNAPSE_TABLE.help()).replace(
    "{sql_options}", SQL_OPTIONS.help())
SYNAPSE_SUBCOMMANDS = SYNAPSE_TABLE.names


# ------------------------------------------------------------------------------------ %mcp subcommands


def _call(m: SynapseMagics, rest: str) -> Pending:
    detach = rest.startswith("--detach")
    if detach:
        rest = rest.removeprefix("--detach").strip()
    target_word, _, arguments = rest.partition(" ")
    if not target_word:
        raise UsageError("%mcp call: name the tool, e.g. %mcp call demo.echo text=hi")
    if not arguments.lstrip().startswith("{"):  # the JSON of a call is not expanded
        arguments = expand(arguments, m.ns)
    target, state = parse_call_target(target_word), m.state
    spec = mcp_call.find_tool(m.hub, state.registry, state.kernel, state.secret_registry, target)
    call = mcp_call.call_async(
        spec, parse_call_arguments(arguments, spec.input_schema), manual=state.manual, port=state.port,
        apps=state.apps, hub=m.hub, hold=hold_policy(m.hub, m.settings().hold_over), held=state.held, detach=detach,
        cell=state.port.cell_label())
    return Pending(call, f"the call of {target.server}.{target.tool} was cancelled; the server stays connected")


def _connect(m: SynapseMagics, rest: str) -> Pending:
    spec, state = parse_connect(m.words("%mcp connect", rest, expanded=True)), m.state
    parts = (lambda: state.hub, state.port, state.secret_registry, state.policy)
    if isinstance(spec, ConfigFile):
        return Pending(nothing(mcp_cmd.connect_config_async(*parts, spec.path, name=spec.name)),
                       "connecting was cancelled")
    connecting = mcp_cmd.connect_async(
        *parts, spec, on_connected=lambda name: mcp_tasks.follow_open_tasks(_task_parts(state), name))
    return Pending(nothing(connecting), f"connecting {spec.name} was cancelled")


def _list(m: SynapseMagics, rest: str) -> Any:
    at_most(m.words("%mcp list", rest, expanded=True), 0, "%mcp list")
    return mcp_cmd.list_servers(m.hub, m.state.secret_registry)


def _tools(m: SynapseMagics, rest: str) -> Any:
    words = m.words("%mcp tools", rest, expanded=True)
    at_most(words, 1, "%mcp tools [SERVER]")
    state = m.state
    return mcp_cmd.tools(m.hub, state.registry, state.kernel, m.settings(), words[0] if words else None)


def _skills(m: SynapseMagics, rest: str) -> Any:
    server, refresh = mcp_skills.parse(m.words("%mcp skills", rest, expanded=True))
    if refresh:
        return Pending(mcp_skills.refresh_async(m.hub, server), "listing the skills again was cancelled")
    return mcp_skills.skills(m.hub, server)


def _search(m: SynapseMagics, rest: str) -> Any:
    from .commands import mcp_search

    text, rows = mcp_search.parse_search(rest)
    return search_tools(m.state, text, rows, say_why=True)


def search_tools(state: SynapseState, text: str, rows: int = 10, *, say_why: bool = False) -> Any:
    """`%mcp search` and the inspector's search box: the tools a cell could be offered, ranked for `text` (with
    `say_why`, a line printed when there are none says why)."""
    from .commands import mcp_search
    from .turns.tool_search import tool_search

    settings = state.settings()
    state.kernel.register_notebook_tools(state.registry)
    hub = state.hub if state.has_hub else None
    searcher = tool_search(hub, state.store if settings.history else None, settings.tool_budget,
                           meaning=settings.search_by_meaning)
    return mcp_search.search(state.registry, searcher, text, rows, kernel_tools=settings.kernel_tools,
                             say_why=say_why)


def _disconnect(m: SynapseMagics, rest: str) -> Pending:
    words = m.words("%mcp disconnect", rest, expanded=True)
    every = "--all" in words
    names = [w for w in words if w != "--all"]
    if len(names) > 1 or (every and names) or (not every and not names):
        raise UsageError("%mcp disconnect: name one server or use --all, e.g. %mcp disconnect demo")
    coro = mcp_cmd.disconnect_async(m.hub, m.state.port, names[0] if names else None, every=every)
    return Pending(nothing(coro), "disconnecting was cancelled")


def _restart(m: SynapseMagics, rest: str) -> Pending:
    words = m.words("%mcp restart", rest, expanded=True)
    if len(words) != 1:
        raise UsageError("%mcp restart: name one server, e.g. %mcp restart demo")
    restarting = mcp_cmd.restart_async(m.hub, m.state.port, m.state.secret_registry, words[0])
    return Pending(nothing(restarting), f"restarting {words[0]} was cancelled")


def _inspect_servers(m: SynapseMagics, rest: str) -> Any:
    words = m.words("%mcp inspect", rest, expanded=True)
    at_most(words, 1, "%mcp inspect [NAME]")
    return mcp_cmd.inspect(widget_parts(m.state), m.state.hub, words[0] if words else None)


def _read(sub: str) -> Callable[[SynapseMagics, str], Pending]:
    """`%mcp resources | read | prompt` (commands/mcp_read.py)."""

    def run(m: SynapseMagics, rest: str) -> Pending:
        if sub == "read":  # a template's `{variables}` reach the server's URI as written, not as Python names
            words = m.words("%mcp read", rest)
            words = words[:2] + [expand(w, m.ns) for w in words[2:]]
        else:
            words = m.words(f"%mcp {sub}", rest, expanded=True)
        return Pending(mcp_read.run(m.hub, sub, words), f"%mcp {sub} was cancelled; the server stays connected")

    return run


def _logs(m: SynapseMagics, rest: str) -> Any:
    found = mcp_features.parse_logs(m.words("%mcp logs", rest, expanded=True))
    return mcp_features.logs(m.state.hub, m.state.secret_registry, *found)


def _server_and(sub: str, rest: str, m: SynapseMagics) -> tuple[str, list[str]]:
    words = m.words(f"%mcp {sub}", rest, expanded=True)
    if not words:
        raise UsageError(f"%mcp {sub}: name the server, e.g. %mcp {sub} demo" + (" URI" if sub != "roots" else ""))
    return words[0], words[1:]


def _roots(m: SynapseMagics, rest: str) -> Pending:
    name, paths = _server_and("roots", rest, m)
    return Pending(mcp_features.roots_async(m.state.hub, name, paths), "changing the roots was cancelled")


def _subscription(sub: str) -> Callable[[SynapseMagics, str], Pending]:
    """`%mcp subscribe | unsubscribe` (commands/mcp_features.py)."""

    def run(m: SynapseMagics, rest: str) -> Pending:
        name, uris = _server_and(sub, rest, m)
        if len(uris) > 1 or (sub == "unsubscribe" and not uris):
            raise UsageError(f"%mcp {sub}: give one server and one resource URI, e.g. %mcp {sub} {name} "
                             "demo://resource/1")
        if sub == "subscribe":
            uri = uris[0] if uris else None
            hub = m.state.hub  # built first: it builds the answers, which keep the updates
            subscribing = mcp_features.subscribe_async(hub, m.state.answers, name, uri)
            return Pending(subscribing, "subscribing was cancelled")
        return Pending(mcp_features.unsubscribe_async(m.state.hub, name, uris[0]), "unsubscribing was cancelled")

    return run


def _account(sub: str) -> Callable[[SynapseMagics, str], Pending]:
    """`%mcp auth | logout` (commands/mcp_auth.py)."""

    def run(m: SynapseMagics, rest: str) -> Pending:
        words = m.words(f"%mcp {sub}", rest, expanded=True)
        if len(words) != 1:
            raise UsageError(f"%mcp {sub}: name one server, e.g. %mcp {sub} notes")
        if sub == "auth":
            signing_in = mcp_auth.auth_async(m.hub, m.state.port, words[0])
            return Pending(nothing(signing_in), f"signing in to {words[0]} was cancelled")
        return Pending(nothing(mcp_auth.logout_async(m.hub, words[0])), "signing out was cancelled")

    return run


def _tasks(m: SynapseMagics, rest: str) -> Any:
    state = m.state
    action, task_id = mcp_tasks.parse(m.words("%mcp tasks", rest, expanded=True))
    if action in ("list", "all"):
        return mcp_tasks.list_tasks(_history_of(state), state.port, every=action == "all")
    if action == "cancel" and task_id is not None:
        return Pending(_printed(mcp_tasks.cancel_async(state.hub, _history_of(state), task_id)),
                       "cancelling the task was interrupted")
    assert task_id is not None
    if action == "resume":
        session_id = mcp_tasks.task_row(_history_of(state), task_id).get("session_id")
        if not session_id or session_id != session_id:  # empty, or NaN from the frame
            raise UsageError(f"%mcp tasks resume: task {task_id} was started by hand (%mcp call), not by a turn; "
                             f"%mcp tasks result {task_id} shows its result")
        return m.ask("", "", AskOptions(resume=True, session=str(session_id)))
    return Pending(mcp_tasks.result_async(_task_parts(state), task_id),
                   f"stopped waiting for task {task_id}; it runs on (the server cancels it only when asked)")


async def _printed(coro: Coroutine[Any, Any, str]) -> None:
    """Await a command that answers in one line, and print it."""
    print(await coro)


def _mcp_help(m: SynapseMagics, rest: str) -> None:
    print(MCP_HELP)


MCP_TABLE: SubcommandTable[SynapseMagics] = SubcommandTable("%mcp", (
    Subcommand("connect", _connect, "start a stdio server; connect options go BEFORE `--` (every word after it is "
               "the server's)", "NAME [--env K=V] [--cwd DIR] -- COMMAND [ARGS...]", forms=(
                   ("demo -- {sys.executable} -m synapse_nb.mcp_client.demo_server", "for example the bundled demo "
                    "server"),
                   ("NAME URL [--header K=V]", "a streamable-HTTP server (--transport sse for SSE)"),
                   ("", "every enabled server of the config file"),
                   ("--config PATH", "every enabled server of PATH"),
                   ("NAME [--config PATH]", "only the config file's entry NAME (even if disabled); a config "
                    "file's entry takes the same keys as these options (timeout, approve, tools, log_level ...)"),
               ), options=CONNECT_OPTIONS),
    Subcommand("list", _list, "servers: transport, state, tools, pid"),
    Subcommand("tools", _tools, "tools as offered to the model (DataFrame)", "[SERVER]"),
    Subcommand("skills", _skills, "skills the servers offer (SEP-2640; DataFrame): the model loads one when it "
               "needs it", "[SERVER] [--refresh]"),
    Subcommand("search", _search, "tools ranked for a request in plain words, as the model's tools__search ranks "
               "them (DataFrame)", "[-n N] TEXT"),
    Subcommand("call", _call, "call a tool by hand (a JSON object,", 'SERVER.TOOL {"key": "value"}', forms=(
        ("SERVER.TOOL key=value ...", "or key=value words, typed by the tool's schema: a string parameter gets the "
         "word as written; never asks for approval)"),
        ("--detach SERVER.TOOL ...", "a call run as an MCP task: leave it running on the server"))),
    Subcommand("tasks", _tasks, "this notebook's MCP tasks (--all: every notebook's): status, age, cell", "[--all]",
               forms=(("result ID | cancel ID", "wait for a task's result | cancel it on its server"),
                      ("resume ID", "continue the turn a restart left waiting on the task (%%synapse --resume)"))),
    Subcommand("disconnect", _disconnect, "stop servers", "NAME | --all"),
    Subcommand("restart", _restart, "restart a server (also one that crashed too often)", "NAME"),
    Subcommand("inspect", _inspect_servers, "inspector widget: servers, tools, forms to call them", "[NAME]"),
    Subcommand("resources", _read("resources"), "resources and resource templates (DataFrame)", "[SERVER]"),
    Subcommand("read", _read("read"), "read a resource, e.g. %mcp read demo demo://schema", "SERVER URI", forms=(
        ("SERVER TEMPLATE k=v ...", "fill a template's {variables} and read it (the URI as written: no {expr} "
         "expansion), e.g. %mcp read ev demo://item/{id} id=3"),)),
    Subcommand("prompt", _read("prompt"), "render a prompt template, e.g. %mcp prompt demo explore_table "
               "table=orders", "SERVER NAME [k=v ...]"),
    Subcommand("logs", _logs, "the server's last log messages (DataFrame), or what its process wrote to stderr",
               "NAME [-n N] [--level LEVEL | --stderr]", options=mcp_features.LOGS_OPTIONS),
    Subcommand("roots", _roots, "the folders the server may see; with PATHs, replace them", "NAME [PATH...]"),
    Subcommand("subscribe", _subscription("subscribe"), "watch a resource: updates show in the running cell and "
               "are recorded", "NAME URI", forms=(("NAME", "the updates received so far"),)),
    Subcommand("unsubscribe", _subscription("unsubscribe"), "stop watching it", "NAME URI"),
    Subcommand("auth", _account("auth"), "sign in to an OAuth-protected HTTP server again", "NAME"),
    Subcommand("logout", _account("logout"), "forget its tokens (keyring or token file) and disconnect it", "NAME"),
    Subcommand("help", _mcp_help, "this help"),
))
"""`%mcp`'s subcommands, in the order `%mcp help` lists them; the help is made from this table."""

MCP_HELP = help_text.MCP_HELP.replace("{subcommands}", MCP_TABLE.help(column=40))
MCP_SUBCOMMANDS = MCP_TABLE.names


def _history_of(state: SynapseState) -> Callable[[], History | None]:
    """The history reader of the moment, for commands that read the history (the store opens on first use)."""
    from .recording.reader import reader

    return lambda: reader(state.store)


def _task_parts(state: SynapseState) -> mcp_tasks.TaskParts:
    """What following an MCP task uses (commands/mcp_tasks.py); the hub is built now."""
    return mcp_tasks.TaskParts(state.hub, _history_of(state), state.port, state.router, state.runner)


def turn_parts(state: SynapseState) -> TurnParts:
    """What a `%%synapse` turn is given: the kernel's parts it uses (commands/turn_parts.py); those built on first
    use stay unbuilt until the turn asks for them."""
    from .commands.turn_parts import TurnParts

    return TurnParts(
        port=state.port, runner=state.runner, sessions=state.sessions, models=state.models, deck=state.deck,
        router=state.router, tracer=state.tracer, apps=state.apps, kernel=state.kernel, notice=state.notice,
        settings=lambda: state.settings(), registry=lambda: state.registry, policy=lambda: state.policy,
        held=lambda: state.held, store=lambda: state.store, hub=lambda: state.hub if state.has_hub else None,
        answers=lambda: state.answers,
    )


def widget_parts(state: SynapseState) -> WidgetParts:
    """What the inspector is given: the kernel's parts it reads (widgets/facade.py); the hub is built now (with no
    servers, an empty one)."""
    from .widgets.facade import WidgetParts

    return WidgetParts(
        hub=state.hub, runner=state.runner, history=_history_of(state), call_tool=state.manual.call,
        on_server_event=state.router.on_server_event, answers=state.answers, sign_in=state.sign_in, apps=state.apps,
        kernel=state.kernel, registry=state.registry, kernel_tools=lambda: state.settings().kernel_tools,
        search_tools=lambda text: search_tools(state, text).to_dict("records"),
    )
