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

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_cell_magic, line_magic, magics_class, no_var_expand
from traitlets import Bool, Float, Int, TraitError, Unicode, observe, validate

from .commands import ask as ask_cmd
from .commands import help as help_text
from .commands import lake as lake_cmd
from .commands import session as session_cmd
from .commands.args import APPROVE_MODES, ASK_OPTIONS, FORMATS, AskOptions, expand, parse_ask, split
from .state import Settings, SynapseState
from .subcommands import (
    MCP_HELP,
    MCP_SUBCOMMANDS,
    MCP_TABLE,
    SQL_OPTIONS,
    SYNAPSE_HELP,
    SYNAPSE_SUBCOMMANDS,
    SYNAPSE_TABLE,
    Pending,
    nothing,
    turn_parts,
)
from .turns.result import BackgroundRun, SynapseResult

if TYPE_CHECKING:
    from ..mcp_client.hub import McpHub

__all__ = [  # the subcommands' tables and helps re-exported: they are the magics' (subcommands.py)
    "MCP_HELP",
    "MCP_SUBCOMMANDS",
    "MCP_TABLE",
    "SYNAPSE_HELP",
    "SYNAPSE_SUBCOMMANDS",
    "SYNAPSE_TABLE",
    "Pending",
    "SynapseMagics",
]

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
    hold_over = Int(
        4000, help="Tokens: a tool result bigger than this (or a table of over 20 rows) is held in the kernel by "
        "name and the model gets a summary and results__sql; 0: results go to the model as text"
    ).tag(config=True)
    tool_budget = Int(
        40, help="Tools offered to the model up front: with more connected, it is offered tools__search and the "
        "tools it loaded instead (0: every tool, always)"
    ).tag(config=True)
    search_by_meaning = Bool(
        True, help="Rank tools for tools__search and %mcp search by meaning as well as by words, with the small "
        "embedding model of the search extra (pip install 'synapse_nb[search]') where it is installed"
    ).tag(config=True)
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
            lake_cmd.publish_to(state.router, lambda: state.store, self.publish_to)

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
            lake_cmd.publish_to(state.router, lambda: state.store, str(change["new"]))

    @observe("otel")
    def _otel_changed(self, change: Mapping[str, Any]) -> None:
        # opens or closes tracing now, so a missing extra is said at once; a profile's value arrives while
        # Magics.__init__ runs, before there is a state: the first turn opens tracing then
        state: SynapseState | None = getattr(self, "state", None)
        if state is not None:
            state.tracer.sink()

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

    @validate("hold_over")
    def _valid_hold_over(self, proposal: Mapping[str, Any]) -> int:
        value = int(proposal["value"])
        if value < 0:
            raise TraitError(f"SynapseMagics.hold_over must be a number of tokens >= 0 (0: hold nothing), not {value}")
        return value

    @validate("tool_budget")
    def _valid_tool_budget(self, proposal: Mapping[str, Any]) -> int:
        value = int(proposal["value"])
        if value < 0:
            raise TraitError(f"SynapseMagics.tool_budget must be a number of tools >= 0 (0: every tool), not {value}")
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
            session_budget=self.session_budget, hold_over=self.hold_over, tool_budget=self.tool_budget,
            search_by_meaning=self.search_by_meaning, publish_to=self.publish_to, otel=self.otel,
            oauth_redirect=self.oauth_redirect or "auto",
        )

    @property
    def hub(self) -> McpHub | None:
        """The kernel's MCP hub, or None while none was built (a command that lists or finds needs none)."""
        return self.state.hub if self.state.has_hub else None

    @property
    def ns(self) -> dict[str, Any]:
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
        finally:
            self.state.port.tidy()  # the command's true end: no question can follow in it

    async def run_awaited(self, name: str, line: str, cell: str | None = None) -> Any:
        """What an awaited cell runs: the magic `name` with this line (and cell body), on the running loop."""
        outcome = self.command(name, line, cell)
        if not isinstance(outcome, Pending):
            return outcome
        try:
            return await self.state.runner.run_awaited(outcome.coro)
        except KeyboardInterrupt as exc:
            raise outcome.interrupted(exc) from None
        finally:
            self.state.port.tidy()  # the command's true end: no question can follow in it

    def command(self, name: str, line: str, cell: str | None = None) -> Any:
        """Parse a magic's line and dispatch it: the value of a command that needs no loop (run now), or the
        Pending coroutine of one that does (the caller runs it, awaited or through the runner)."""
        if name == "mcp":
            return self._mcp(line)
        if cell is None:
            return self._subcommand(line)
        return self.ask(line, cell)

    # ------------------------------------------------------------------------------------- %%synapse

    def ask(self, line: str, cell: str, options: AskOptions | None = None) -> Pending | None:
        if options is None:
            options = parse_ask(expand(line, self.ns))
        if options.help:
            print(help_text.ASK_HELP)
            return None

        def keep(result: SynapseResult | BackgroundRun) -> None:
            self.ns["_synapse"] = result
            if options.out:
                self.ns[options.out] = result

        # The cell's display shows the answer and _synapse keeps it: no Out[] repeating it.
        if options.background:  # starts a task and returns: nothing to run or await here
            ask_cmd.background(turn_parts(self.state), self.settings(), options, cell, keep=keep)
            return None
        coro = ask_cmd.ask_async(turn_parts(self.state), self.settings(), options, cell, keep=keep)
        return Pending(nothing(coro), ask_cmd.INTERRUPTED)

    def _subcommand(self, line: str) -> Any:
        sub, _, rest = line.strip().partition(" ")
        if sub.startswith(("$", "{")) and expand(sub, self.ns) in ("record", "replay"):
            sub = expand(sub, self.ns)  # `%synapse $MODE PATH` (notebooks/replay_demo.ipynb records and replays)
        if sub in ("--help", "-h"):
            print(help_text.ASK_HELP)
            return None
        entry = SYNAPSE_TABLE.find(sub or "status")
        if entry is not None:
            return entry.run(self, rest.strip())
        if sub.startswith("-") and "--resume" in line.split():  # `%synapse --resume [options]`: no prompt to take
            return self.ask(line.strip(), "")
        if sub.startswith("-"):
            raise UsageError(
                f"%synapse: unknown option {sub}{ASK_OPTIONS.suggest(sub)}; options go on a %%synapse cell's "
                "first line (%%synapse --help)"
            )
        return self.ask("", line.strip(), AskOptions())  # `%synapse What tables are there?`

    def words(self, sub: str, rest: str, *, expanded: bool = False) -> list[str]:
        """A subcommand's words (`$var` / `{expr}` expanded first when `expanded`)."""
        return split(expand(rest, self.ns) if expanded else rest, sub)

    @no_var_expand
    @cell_magic
    def synapse_sql(self, line: str, cell: str) -> Any:
        """`%%synapse_sql [--out NAME] [--lake LAKE]` + SQL over the history file (or a lake): a DataFrame."""
        ns, rest = SQL_OPTIONS.parse(split(line, "%%synapse_sql"))
        if rest:
            raise UsageError(f"%%synapse_sql: unexpected {rest[0]!r}; options are --out NAME and --lake LAKE, "
                             "e.g. %%synapse_sql --out df")
        frame = lake_cmd.sql(ns.lake, cell) if ns.lake is not None else session_cmd.sql(self.state.store, cell)
        if ns.out:
            self.ns[ns.out] = frame
        return frame

    # ------------------------------------------------------------------------------------------ %mcp

    def _mcp(self, line: str) -> Any:
        sub, _, rest = line.strip().partition(" ")
        entry = MCP_TABLE.find(sub or "help")
        if entry is None:
            raise UsageError(f"%mcp: unknown subcommand {sub!r}; one of {', '.join(MCP_TABLE.names)} (%mcp help)")
        return entry.run(self, rest.strip())
