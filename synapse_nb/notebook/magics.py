"""The magics `%%synapse`, `%synapse`, `%%synapse_sql` and `%mcp`: they parse and dispatch, nothing else.

Each subcommand is a plain function in `commands/`; settings users choose once are traitlets here
(`%config SynapseMagics.model = "openai:gpt-4.1-mini"`). IPython's own `$var`/`{expr}` expansion is
applied to `%mcp` lines and the `%%synapse` option line (so `{sys.executable}` works), but not to SQL,
not to the JSON of `%mcp call`, and not to prompts, which have their own `{name}` interpolation.

`command` parses once and returns either a value (subcommands that need no event loop) or a `Pending`
coroutine (those that do). An awaited cell (notebook/kernel/awaited.py) awaits it with `run_awaited`; the
magic called as a function (`get_ipython().run_line_magic(...)`, a magic inside a loop) runs it
through the runner's bridge. An interrupted command ends the cell with one line (CellInterrupted).
"""

from __future__ import annotations

import argparse
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_cell_magic, line_magic, magics_class, no_var_expand
from traitlets import Bool, Float, Int, TraitError, Unicode, observe, validate

from .commands import ask as ask_cmd
from .commands import help as help_text
from .commands import lake as lake_cmd
from .commands import mcp as mcp_cmd
from .commands import mcp_auth, mcp_features, mcp_read, mcp_tasks
from .commands import session as session_cmd
from .commands.args import (
    APPROVE_MODES,
    ASK_OPTIONS,
    FORMATS,
    AskOptions,
    ConfigFile,
    expand,
    parse_ask,
    parse_call_target,
    parse_connect,
    split,
)
from .commands.ask import CellInterrupted
from .commands.options import Option, OptionSet
from .state import Settings, SynapseState
from .turns.result import BackgroundRun, SynapseResult

__all__ = ["MCP_SUBCOMMANDS", "SYNAPSE_SUBCOMMANDS", "Pending", "SynapseMagics"]

SYNAPSE_SUBCOMMANDS = (
    "status", "model", "session", "history", "sql", "inspect", "reset", "ask", "help", "record", "replay", "cost",
    "publish", "lake",
)
MCP_SUBCOMMANDS = (
    "connect", "list", "tools", "resources", "call", "tasks", "disconnect", "restart", "inspect", "read", "prompt",
    "logs", "roots",
    "subscribe", "unsubscribe", "auth", "logout", "help",
)


@magics_class
class SynapseMagics(Magics):
    """`%%synapse` asks the agent; `%synapse` and `%mcp` manage sessions, history and MCP servers."""

    model = Unicode(
        "", help="Model for %%synapse cells (provider:model); empty: SYNAPSE_MODEL, else scripted:demo"
    ).tag(config=True)
    approve = Unicode("", help="Approval for every tool call: auto, ask or deny; empty: per-server policy").tag(
        config=True
    )
    max_iterations = Int(10, help="Model calls allowed per turn before it stops").tag(config=True)
    format = Unicode("markdown", help="Default answer format: markdown, text, json or code").tag(config=True)
    system = Unicode("", help="Default system prompt").tag(config=True)
    history = Bool(True, help="Record turns in the history file (SYNAPSE_DB)").tag(config=True)
    stream_interval = Float(0.1, help="Seconds between display updates while an answer streams").tag(config=True)
    max_result_chars = Int(20000, help="Characters of a tool result sent to the model (all are recorded)").tag(
        config=True
    )
    history_rows = Int(10, help="Rows %synapse history shows by default").tag(config=True)
    kernel_tools = Bool(
        False, help="Offer the kernel__* tools (variables, DataFrames, recent cells, run_python) in every cell"
    ).tag(config=True)
    session_budget = Float(
        0.0, help="USD the calls of one session (in this kernel) may cost; a turn stops before a call that could "
        "pass it; 0: no limit"
    ).tag(config=True)

    publish_to = Unicode(
        "", help="A lake to publish the history to in the background after each turn (a folder, s3://bucket/prefix "
        "with SYNAPSE_LAKE_CATALOG, a catalog URI or a lake config .json); empty: off"
    ).tag(config=True)

    otel = Bool(
        None, allow_none=True,
        help="Trace every turn with OpenTelemetry (the otel extra): True or False; None: trace when "
             "OTEL_EXPORTER_OTLP_ENDPOINT is set",
    ).tag(config=True)

    oauth_redirect = Unicode(
        "auto", help="OAuth sign-in: where the browser comes back: auto (paste box on a kernel that looks remote: "
        "JupyterHub, SSH), loopback (127.0.0.1 only) or paste (also offer the input box to paste the final URL)"
    ).tag(config=True)

    def __init__(self, shell: Any, state: SynapseState) -> None:
        super().__init__(shell=shell)
        self.state = state
        if self.publish_to:  # set from the config before the state was here
            lake_cmd.publish_to(state, self.publish_to)

    @validate("publish_to")
    def _valid_publish_to(self, proposal: Mapping[str, Any]) -> str:
        value = str(proposal["value"]).strip()
        if value and Path(value).expanduser().is_file() and not value.endswith(".json"):
            raise TraitError(f"SynapseMagics.publish_to must be a lake (a folder, a URI or a lake config .json), "
                             f"not the file {value!r}")
        if value:
            from ..errors import SynapseError
            from ..history.lake_spec import lake_spec

            try:
                lake_spec(value)
            except SynapseError as exc:
                raise TraitError(f"SynapseMagics.publish_to: {exc}") from None
        return value

    @observe("publish_to")
    def _publish_to_changed(self, change: Mapping[str, Any]) -> None:
        state = getattr(self, "state", None)
        if state is not None:
            lake_cmd.publish_to(state, str(change["new"]))

    @observe("otel")
    def _otel_changed(self, change: Mapping[str, Any]) -> None:
        # opens or closes tracing now, so a missing extra is said at once; a profile's value arrives while
        # Magics.__init__ runs, before there is a state: the first turn opens tracing then
        state: SynapseState | None = getattr(self, "state", None)
        if state is not None:
            state.tracing()

    @validate("approve")
    def _valid_approve(self, proposal: Mapping[str, Any]) -> str:
        value = str(proposal["value"]).strip()
        if value and value not in APPROVE_MODES:
            raise TraitError(f"SynapseMagics.approve must be {', '.join(APPROVE_MODES)} or empty, not {value!r}")
        return value

    @validate("oauth_redirect")
    def _valid_oauth_redirect(self, proposal: Mapping[str, Any]) -> str:
        from .questions.sign_in import REDIRECT_MODES  # loaded with the first sign-in, not with the extension

        value = str(proposal["value"]).strip()
        if value not in REDIRECT_MODES:
            raise TraitError(f"SynapseMagics.oauth_redirect must be one of {', '.join(REDIRECT_MODES)}, not {value!r}")
        return value

    @validate("format")
    def _valid_format(self, proposal: Mapping[str, Any]) -> str:
        value = str(proposal["value"]).strip()
        if value not in FORMATS:
            raise TraitError(f"SynapseMagics.format must be one of {', '.join(FORMATS)}, not {value!r}")
        return value

    @validate("session_budget")
    def _valid_budget(self, proposal: Mapping[str, Any]) -> float:
        value = float(proposal["value"])
        if not value >= 0 or value == float("inf"):
            raise TraitError(f"SynapseMagics.session_budget must be a USD amount >= 0 (0: no limit), not {value}")
        return value

    @validate("max_iterations", "history_rows")
    def _positive(self, proposal: Mapping[str, Any]) -> int:
        value = int(proposal["value"])
        if value < 1:
            raise TraitError(f"{proposal['trait'].name} must be at least 1, not {value}")
        return value

    def settings(self) -> Settings:
        """The current settings, as the commands see them."""
        return Settings(
            model=self.model.strip(), approve=self.approve, max_iterations=self.max_iterations, format=self.format,
            system=self.system, history=self.history, stream_interval=self.stream_interval,
            max_result_chars=self.max_result_chars, history_rows=self.history_rows, kernel_tools=self.kernel_tools,
            session_budget=self.session_budget,
        )

    @property
    def _ns(self) -> dict[str, Any]:
        ns: dict[str, Any] = self.shell.user_ns if self.shell is not None else {}
        return ns

    # ------------------------------------------------------------------------------------- running

    # The magics stay callable from code (`get_ipython().run_line_magic("mcp", "call ...")`): there a
    # command that needs the loop runs through the runner's bridge. A whole-cell magic is rewritten by
    # notebook/kernel/awaited.py into `await` of `run_awaited`, the same parse and the same commands, awaited.

    @no_var_expand
    @line_cell_magic
    def synapse(self, line: str, cell: str | None = None) -> Any:
        """Ask the agent (`%%synapse [options]` + prompt, or `%synapse QUESTION`), or `%synapse SUBCOMMAND`;
        see `%synapse help`."""
        return self._run(self.command("synapse", line, cell))

    @no_var_expand
    @line_magic
    def mcp(self, line: str) -> Any:
        """MCP servers: connect, list, tools, call, disconnect, restart, inspect, auth, logout; see `%mcp help`."""
        return self._run(self.command("mcp", line))

    def _run(self, outcome: Any) -> Any:
        if not isinstance(outcome, Pending):
            return outcome
        try:
            return self.state.runner.run(outcome.coro)
        except KeyboardInterrupt as exc:
            raise outcome.interrupted(exc) from None

    async def run_awaited(self, name: str, line: str, cell: str | None = None) -> Any:
        """What an awaited cell runs: the magic `name` with this line (and cell body), on the running loop."""
        outcome = self.command(name, line, cell)
        if not isinstance(outcome, Pending):
            return outcome
        try:
            return await self.state.runner.run_awaited(outcome.coro)
        except KeyboardInterrupt as exc:
            raise outcome.interrupted(exc) from None

    def command(self, name: str, line: str, cell: str | None = None) -> Any:
        """Parse a magic's line and dispatch it: the value of a command that needs no loop (run now), or the
        Pending coroutine of one that does (the caller runs it, awaited or through the runner)."""
        if name == "mcp":
            return self._mcp(line)
        if cell is None:
            return self._subcommand(line)
        return self._ask(line, cell)

    # ------------------------------------------------------------------------------------- %%synapse

    def _ask(self, line: str, cell: str, options: AskOptions | None = None) -> Pending | None:
        if options is None:
            options = parse_ask(expand(line, self._ns))
        if options.help:
            print(help_text.ASK_HELP)
            return None

        def keep(result: SynapseResult | BackgroundRun) -> None:
            self._ns["_synapse"] = result
            if options.out:
                self._ns[options.out] = result

        # The cell's display shows the answer and _synapse keeps it: no Out[] repeating it.
        if options.background:  # starts a task and returns: nothing to run or await here
            ask_cmd.background(self.state, self.settings(), options, cell, keep=keep)
            return None
        coro = ask_cmd.ask_async(self.state, self.settings(), options, cell, keep=keep)
        return Pending(_nothing(coro), ask_cmd.INTERRUPTED)

    def _subcommand(self, line: str) -> Any:
        sub, _, rest = line.strip().partition(" ")
        rest = rest.strip()
        if sub.startswith(("$", "{")) and expand(sub, self._ns) in ("record", "replay"):
            sub = expand(sub, self._ns)  # `%synapse $MODE PATH` (notebooks/replay_demo.ipynb records and replays)
        state, settings = self.state, self.settings()
        if sub in ("", "status"):
            return session_cmd.status(state, settings)
        if sub == "help":
            print(help_text.SYNAPSE_HELP)
            return None
        if sub in ("--help", "-h"):
            print(help_text.ASK_HELP)
            return None
        if sub == "ask":
            if not rest:
                raise UsageError("%synapse ask: missing question, e.g. %synapse ask What tables are there?")
            return self._ask("", rest, AskOptions())
        if sub == "sql":
            lake, query = lake_cmd.split_lake(rest, "%synapse sql")
            return lake_cmd.sql(lake, query) if lake is not None else session_cmd.sql(state, query)
        if sub not in SYNAPSE_SUBCOMMANDS:
            if sub.startswith("-"):
                raise UsageError(
                    f"%synapse: unknown option {sub}{ASK_OPTIONS.suggest(sub)}; options go on a %%synapse cell's "
                    "first line (%%synapse --help)"
                )
            return self._ask("", line.strip(), AskOptions())  # `%synapse What tables are there?`
        if sub in ("record", "replay"):  # notebook/recording/tape.py; `{path}` / `$path` expand as on other magic lines
            from .recording.tape import command as tape_command

            print(tape_command(state.deck, sub, split(expand(rest, self._ns), f"%synapse {sub}")))
            return None
        words = split(rest, f"%synapse {sub}")
        if sub == "model":
            _at_most(words, 1, "%synapse model [ID]")
            print(session_cmd.model(state, settings, words[0] if words else None))
            return None
        if sub == "session":
            return self._session(words)
        if sub == "history":
            return session_cmd.history(state, settings, _history_rows(words))
        if sub == "cost":
            from .commands.cost import cost

            return cost(state, words)
        if sub == "publish":
            return lake_cmd.publish(state, words)
        if sub == "lake":
            return lake_cmd.lake(state, words)
        if sub == "inspect":
            _at_most(words, 0, "%synapse inspect")
            return session_cmd.inspect(state)
        _at_most(words, 0, "%synapse reset")
        print(session_cmd.reset(state.sessions, state.policy))
        return None

    def _session(self, words: list[str]) -> Any:
        state = self.state
        if not words:
            print(session_cmd.session_show(state.sessions))
            return None
        action, args = words[0], words[1:]
        if action == "new":
            _at_most(args, 1, "%synapse session new [NAME]")
            print(session_cmd.session_new(state.sessions, args[0] if args else None))
            return None
        if action == "list":
            _at_most(args, 0, "%synapse session list")
            return session_cmd.session_list(state, self.settings())
        if action == "switch":
            if len(args) != 1:
                raise UsageError("%synapse session switch: name one session, e.g. %synapse session switch analysis")
            print(session_cmd.session_switch(state, args[0]))
            return None
        raise UsageError(f"%synapse session: unknown action {action!r}; use new [NAME], list or switch NAME")

    @no_var_expand
    @cell_magic
    def synapse_sql(self, line: str, cell: str) -> Any:
        """`%%synapse_sql [--out NAME] [--lake LAKE]` + SQL over the history file (or a lake): a DataFrame."""
        words = split(line, "%%synapse_sql")
        options: dict[str, str] = {}
        while words:
            option, value = words[0], words[1] if len(words) > 1 else ""
            if option not in ("--out", "--lake") or not value or (option == "--out" and not value.isidentifier()):
                raise UsageError("%%synapse_sql: options are --out NAME and --lake LAKE, e.g. %%synapse_sql --out df")
            options[option] = value
            words = words[2:]
        out, lake = options.get("--out"), options.get("--lake")
        frame = lake_cmd.sql(lake, cell) if lake is not None else session_cmd.sql(self.state, cell)
        if out:
            self._ns[out] = frame
        return frame

    # ------------------------------------------------------------------------------------------ %mcp

    def _mcp(self, line: str) -> Any:
        sub, _, rest = line.strip().partition(" ")
        rest = rest.strip()
        state = self.state
        if sub == "call":
            detach = rest.startswith("--detach")
            if detach:
                rest = rest.removeprefix("--detach").strip()
            target_word, _, arguments = rest.partition(" ")
            if not target_word:
                raise UsageError("%mcp call: name the tool, e.g. %mcp call demo.echo text=hi")
            if not arguments.lstrip().startswith("{"):
                arguments = expand(arguments, self._ns)
            target = parse_call_target(target_word)
            # typed by the tool's schema once it is found
            call = mcp_cmd.call_async(state, target, arguments, detach=detach)
            cancelled = f"the call of {target.server}.{target.tool} was cancelled; the server stays connected"
            return Pending(call, cancelled)
        if sub == "read":  # a template's `{variables}` reach the server's URI as written, not as Python names
            words = split(rest, "%mcp read")
            return Pending(mcp_read.run(state, sub, words[:2] + [expand(w, self._ns) for w in words[2:]]),
                           "%mcp read was cancelled; the server stays connected")
        words = split(expand(rest, self._ns), f"%mcp {sub}")
        if sub == "connect":
            spec = parse_connect(words)
            if isinstance(spec, ConfigFile):
                return Pending(_nothing(mcp_cmd.connect_config_async(state, spec.path, name=spec.name)),
                               "connecting was cancelled")
            return Pending(_nothing(mcp_cmd.connect_async(state, spec)), f"connecting {spec.name} was cancelled")
        if sub == "list":
            _at_most(words, 0, "%mcp list")
            return mcp_cmd.list_servers(state)
        if sub == "tools":
            _at_most(words, 1, "%mcp tools [SERVER]")
            return mcp_cmd.tools(state, words[0] if words else None)
        if sub == "disconnect":
            every = "--all" in words
            names = [w for w in words if w != "--all"]
            if len(names) > 1 or (every and names) or (not every and not names):
                raise UsageError("%mcp disconnect: name one server or use --all, e.g. %mcp disconnect demo")
            coro = mcp_cmd.disconnect_async(state, names[0] if names else None, every=every)
            return Pending(_nothing(coro), "disconnecting was cancelled")
        if sub == "restart":
            if len(words) != 1:
                raise UsageError("%mcp restart: name one server, e.g. %mcp restart demo")
            return Pending(_nothing(mcp_cmd.restart_async(state, words[0])), f"restarting {words[0]} was cancelled")
        if sub in ("resources", "prompt"):
            return Pending(mcp_read.run(state, sub, words), f"%mcp {sub} was cancelled; the server stays connected")
        if sub == "tasks":
            action, task_id = mcp_tasks.parse(words)
            if action in ("list", "all"):
                return mcp_tasks.list_tasks(state, every=action == "all")
            if action == "cancel" and task_id is not None:
                return Pending(_printed(mcp_tasks.cancel_async(state, task_id)), "cancelling the task was interrupted")
            assert task_id is not None
            return Pending(mcp_tasks.result_async(state, task_id),
                           f"stopped waiting for task {task_id}; it runs on (the server cancels it only when asked)")
        if sub == "inspect":
            _at_most(words, 1, "%mcp inspect [NAME]")
            return mcp_cmd.inspect(state, words[0] if words else None)
        if sub in ("logs", "roots", "subscribe", "unsubscribe"):
            return _mcp_features(state, sub, words)
        if sub in ("auth", "logout"):
            if len(words) != 1:
                raise UsageError(f"%mcp {sub}: name one server, e.g. %mcp {sub} notes")
            if sub == "auth":
                signing_in = mcp_auth.auth_async(state, words[0])
                return Pending(_nothing(signing_in), f"signing in to {words[0]} was cancelled")
            return Pending(_nothing(mcp_auth.logout_async(state, words[0])), "signing out was cancelled")
        if sub in ("help", ""):
            print(help_text.MCP_HELP)
            return None
        raise UsageError(f"%mcp: unknown subcommand {sub!r}; one of {', '.join(MCP_SUBCOMMANDS)} (%mcp help)")


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


def _mcp_features(state: SynapseState, sub: str, words: list[str]) -> Any:
    """`%mcp logs | roots | subscribe | unsubscribe` (commands/mcp_features.py)."""
    if sub == "logs":
        return mcp_features.logs(state, *mcp_features.parse_logs(words))
    if not words:
        raise UsageError(f"%mcp {sub}: name the server, e.g. %mcp {sub} demo" + (" URI" if sub != "roots" else ""))
    name, rest = words[0], words[1:]
    if sub == "roots":
        return Pending(mcp_features.roots_async(state, name, rest), "changing the roots was cancelled")
    if len(rest) > 1 or (sub == "unsubscribe" and not rest):
        raise UsageError(f"%mcp {sub}: give one server and one resource URI, e.g. %mcp {sub} {name} demo://resource/1")
    if sub == "subscribe":
        uri = rest[0] if rest else None
        return Pending(mcp_features.subscribe_async(state, name, uri), "subscribing was cancelled")
    return Pending(mcp_features.unsubscribe_async(state, name, rest[0]), "unsubscribing was cancelled")


async def _printed(coro: Coroutine[Any, Any, str]) -> None:
    """Await a command that answers in one line, and print it."""
    print(await coro)


async def _nothing(coro: Coroutine[Any, Any, Any]) -> None:
    """Await a command whose display says everything (no Out[] repeating it)."""
    await coro


def _at_most(words: list[str], n: int, usage: str) -> None:
    if len(words) > n:
        raise UsageError(f"{usage}: unexpected {words[n]!r}")


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"needs a whole number, not {text!r}") from None


HISTORY_OPTIONS = OptionSet("%synapse history", "%synapse help", (
    Option("-n", "N", "the last N turns", type=_whole),
))
"""`%synapse history`'s options, declared once (notebook/commands/options.py)."""


def _history_rows(words: list[str]) -> int | None:
    ns, rest = HISTORY_OPTIONS.parse(words)
    if rest:
        raise UsageError(f"%synapse history: unexpected {' '.join(rest)!r}; use %synapse history -n 5")
    return ns.n  # type: ignore[no-any-return]
