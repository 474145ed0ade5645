"""`%mcp` subcommands: connect, list, tools, call, disconnect, restart, inspect (one function each)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ...errors import OAuthError, ServerStartError, SynapseError, TaskDetachedError, UnknownServerError
from ...masking import SecretMask, config_secrets
from ...mcp_client.task_watch import TaskWatch
from ...server_config import ServerConfig
from ...task_state import TaskState
from ...types import ToolResult, ToolSpec, ToolUi
from ..output.calls import CallProgress, call_bundle, call_text
from ..output.live import LiveOutput
from ..output.markup import Html
from ..turns.display import ticking
from ..turns.view import GLYPH, duration
from ..usage import command_error, usage_error
from .args import CONNECT_OPTIONS, CallTarget, parse_call_arguments

if TYPE_CHECKING:
    import pandas as pd

    from ...mcp_client.info import ServerInfo
    from ..state import SynapseState
    from .mcp_tasks import DetachedTask

__all__ = [
    "CallOutput",
    "ConnectReport",
    "call_async",
    "connect_async",
    "connect_config_async",
    "disconnect_async",
    "inspect",
    "list_servers",
    "restart_async",
    "state_words",
    "tools",
]

SERVER_COLUMNS = ("server", "transport", "protocol", "state", "tools", "pid", "restarts", "endpoint", "roots",
                  "last_error")
TOOL_COLUMNS = ("name", "server", "tool", "description", "parameters", "read_only", "destructive", "ui")
TASK_NOTE = "runs as an MCP task"
"""The `note` of a tool that only runs as an MCP task (`execution.taskSupport: required`)."""
NO_TASKS_NOTE = "needs MCP tasks, which its server does not serve: not offered to the model"
STDERR_LINES = 15
clock: Callable[[], float] = time.perf_counter
"""The wall clock `%mcp connect` reports the wait with (a test sets a fake one)."""


# ---------------------------------------------------------------------------------------------- connect


@dataclass(frozen=True)
class ConnectReport:
    """What `%mcp connect` did: per server, its ServerInfo or the reason it failed; `already` the servers
    that were connected with the same config before; `waited_ms` the command's wall time (the servers
    start at once, so the user waits for the slowest)."""

    results: Mapping[str, ServerInfo | ServerStartError]
    already: frozenset[str] = frozenset()
    waited_ms: float | None = None
    loading_ms: float = 0.0

    def _rows(self) -> list[tuple[str, str]]:
        return [(name, _outcome(r, name in self.already)) for name, r in self.results.items()]

    def _waited(self) -> str:
        if self.waited_ms is None:
            return ""
        return f"all done in {duration(self.waited_ms - self.loading_ms)}{_loading(self.loading_ms)}"

    def __repr__(self) -> str:
        if not self.results:
            return "no MCP servers configured"
        lines = [f"{name}: {text}" for name, text in self._rows()]
        return "\n".join([*lines, self._waited()] if self.waited_ms is not None else lines)

    def _repr_markdown_(self) -> str:
        if not self.results:
            return repr(self)
        lines = ["| server | result |", "|---|---|"]
        lines += [Html("| {} | {} |").format(name, text) for name, text in self._rows()]
        if self.waited_ms is not None:
            lines += ["", Html("<sub>{}</sub>").format(self._waited())]
        return "\n".join(lines)


def _outcome(result: ServerInfo | ServerStartError, already: bool = False) -> str:
    if isinstance(result, ServerStartError):
        return f"{GLYPH['failed']} failed: {result.reason or result}"
    return f"{GLYPH['ok']} {_connected_line(result, already=already)}"


def _connected_line(
    info: ServerInfo, waited_ms: float | None = None, *, already: bool = False, loading_ms: float = 0.0,
) -> str:
    """`connected, 9 tools (stdio, pid 123) in 0.4 s (+1.2 s loading the MCP client, first time only)`: the
    time is what the user waited (`waited_ms`, the command's wall time, which includes the process start
    before the hub's own `connect_ms` starts counting) less `loading_ms`, the one-time import of the MCP
    client, said apart so that the server is not blamed for it; `already` says the hub kept the running
    server of the same config."""
    where = f"{info.transport}" + (f", pid {info.pid}" if info.pid else "")
    tools = f"{info.tool_count} tool" + ("" if info.tool_count == 1 else "s")
    if already:
        return f"already connected, {tools} ({where}){_loading(loading_ms)}"
    ms = waited_ms - loading_ms if waited_ms is not None else info.connect_ms
    took = f" in {duration(ms)}" if ms is not None else ""
    return f"connected, {tools} ({where}){took}{_loading(loading_ms)}"


LOADING_SHOWN_MS = 50.0
"""A one-time load shorter than this is not worth a word."""


def _loading(loading_ms: float) -> str:
    if loading_ms < LOADING_SHOWN_MS:
        return ""
    return f" (+{duration(loading_ms)} loading the MCP client, first time only)"


async def _load_client() -> float:
    """Milliseconds spent waiting for the MCP client's one-time import (mcp_client.loaded), 0 when ready."""
    from ...mcp_client import loaded

    return await loaded() * 1000


def _progress(text: str) -> dict[str, Any]:
    return {"text/plain": text, "text/markdown": Html("*{}*").format(text)}


async def connect_async(state: SynapseState, spec: ServerConfig) -> ServerInfo:
    """`%mcp connect NAME -- COMMAND ...` / `NAME URL`: start one server and show its tools count.

    Header values and the secret env values (masking.config_secrets: secret names, key-like values, URL
    passwords) become secrets of the history store first, so they are never recorded or shown. A server
    that does not start raises UsageError with the reason; its stderr tail is shown.
    An HTTP server that asks for OAuth shows "Sign in to NAME" here (notebook/questions/sign_in.py) and connects
    once the user has signed in; a sign-in that does not work is one line (the OAuthError's message).
    """
    started = clock()
    before = _connected_at(state, spec.name)
    for value in config_secrets(spec.env, spec.headers):
        state.add_secret(value)
    shown = spec.display  # the command line or URL, its secrets masked (masking.command_line, mask_url)
    misplaced = _connect_options_after_command(spec.args)
    if misplaced:  # passed to the server as written: say so, as the server may be fine with them or not
        state.port.publish({"text/plain": (
            f"note: {', '.join(misplaced)} after the command go to the server, not to %mcp connect; connect "
            f"options go before `--`: %mcp connect {spec.name} {misplaced[0]} ... -- COMMAND ...")}, None, False)
    out = LiveOutput(live=state.port.live, publish=state.port.publish)
    out.start(_progress(f"connecting {spec.name} ({'http' if spec.url else 'stdio'}: {_mask(state, shown)}) …"))
    try:
        loading = await _load_client()
        info = await state.hub.connect_server(spec)
    except OAuthError as exc:
        out.finish(_progress(f"✗ {spec.name}: not signed in"))
        raise command_error(_mask(state, f"%mcp connect: {exc}"), type(exc).__name__) from None
    except ServerStartError as exc:
        tail = _tail(state, exc.stderr_tail)
        if tail:  # what the server said: more than the one-line error below
            out.finish(_stderr_bundle(spec.name, tail))
        else:  # the error below says it all: once
            out.clear()
        raise command_error(_mask(state, f"%mcp connect: {spec.name} failed to start: {exc.reason or exc}"),
                            type(exc).__name__) from None
    except SynapseError as exc:
        out.clear()  # the error says it: once
        raise usage_error(exc) from None
    except asyncio.CancelledError:
        out.finish(_progress(f"{GLYPH['cancelled']} connecting {spec.name} was interrupted"))
        raise
    if spec.approve is not None:
        state.policy.set_server(spec.name, spec.approve)
    waited = (clock() - started) * 1000
    already = before is not None and info.connected_at == before
    line = _connected_line(info, waited, already=already, loading_ms=loading)
    out.finish(_progress(f"{GLYPH['ok']} {spec.name}: {line}"))
    _follow_open_tasks(state, spec.name)
    return info


def _follow_open_tasks(state: SynapseState, name: str) -> None:
    """Tasks of `name` the history holds as open (started before a kernel restart) are followed again, in the
    background: their results land in the history when they finish."""
    from .mcp_tasks import resume_open

    if not state.hub.serves_tasks(name):
        return
    ids = resume_open(state, name)
    if ids:
        state.port.publish({"text/plain": (
            f"{name}: following {len(ids)} MCP task{'s' if len(ids) > 1 else ''} still open from before "
            f"({', '.join(ids)}); their results land in the history; %mcp tasks shows them")}, None, False)


def _connect_options_after_command(args: Sequence[str]) -> list[str]:
    """The words of a server's command line that are `%mcp connect` options (`--env`, `--timeout` ...): the
    user most likely meant them for the connect, but after `--` every word is the server's."""
    ours = set(CONNECT_OPTIONS.flags()) - {"--config"}
    return list(dict.fromkeys(w.split("=", 1)[0] for w in args if w.split("=", 1)[0] in ours))


def _connected_at(state: SynapseState, name: str) -> Any:
    """When the server `name` connected, if it is connected now (a duplicate connect keeps it), else None."""
    if not state.has_hub:
        return None
    try:
        info = state.hub.server(name)
    except UnknownServerError:
        return None
    return info.connected_at if info.state == "connected" else None


async def connect_config_async(state: SynapseState, path: str | None = None, *, name: str | None = None,
                               ) -> ConnectReport:
    """`%mcp connect [--config PATH]`: every enabled server of the config file; failures are listed, not raised.

    `%mcp connect NAME` (`name`): only that entry of the file (even a disabled one: it was asked for by name);
    a name the file does not have is a UsageError that lists the servers it has."""
    from ...config import load_mcp_config, mcp_config_path

    try:
        configs = load_mcp_config(path)
    except SynapseError as exc:
        raise usage_error(exc) from None
    if name is not None:
        if name not in configs:
            where = path or mcp_config_path() or "no config file (SYNAPSE_MCP_CONFIG, ./.synapse/mcp_servers.json)"
            known = ", ".join(configs) or "none"
            raise UsageError(
                f"%mcp connect {name}: no server {name!r} in {where} (its servers: {known}); to connect another, "
                "say how to reach it: '-- COMMAND [ARGS...]' (stdio) or a URL (HTTP)"
            )
        configs = {name: configs[name].model_copy(update={"disabled": False})}
    for config in configs.values():
        for value in config_secrets(config.env, config.headers):
            state.add_secret(value)
        if config.approve is not None and not config.disabled:
            state.policy.set_server(config.name, config.approve)
    enabled = [c.name for c in configs.values() if not c.disabled]
    if not enabled:
        return ConnectReport({})
    started = clock()
    before = {name: _connected_at(state, name) for name in enabled}
    out = LiveOutput(live=state.port.live, publish=state.port.publish)
    out.start(_progress(f"connecting {', '.join(enabled)} …"))
    try:
        loading = await _load_client()
        if name is None:
            results = await state.hub.connect_config(path)
        else:
            results = {name: await _connect_quietly(state, configs[name])}
    except SynapseError as exc:
        out.finish(_progress("✗ connecting the configured servers failed"))
        raise usage_error(exc) from None
    except asyncio.CancelledError:
        out.finish(_progress(f"{GLYPH['cancelled']} connecting was interrupted"))
        raise
    already = frozenset(
        name for name, r in results.items()
        if not isinstance(r, ServerStartError) and before.get(name) is not None and r.connected_at == before[name]
    )
    report = ConnectReport(results, already, (clock() - started) * 1000, loading)
    out.finish({"text/plain": _mask(state, repr(report)), "text/markdown": _mask(state, report._repr_markdown_())})
    for name, result in results.items():
        if isinstance(result, ServerStartError) and result.stderr_tail.strip():
            tail = _tail(state, result.stderr_tail)
            state.port.publish(_stderr_bundle(name, tail), None, False)
    return report


async def _connect_quietly(state: SynapseState, config: ServerConfig) -> ServerInfo | ServerStartError:
    """One server of the config file: its ServerInfo, or the reason it did not start (listed, not raised)."""
    try:
        return await state.hub.connect_server(config)
    except ServerStartError as exc:
        return exc


def _tail(state: SynapseState, text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return _mask(state, "\n".join(lines[-STDERR_LINES:]))


def _stderr_bundle(name: str, tail: str) -> dict[str, Any]:
    text = f"{name} stderr (last lines):\n{tail}"
    return {
        "text/plain": text,
        "text/markdown": Html("<details open><summary>{} stderr (last lines)</summary><pre>{}</pre></details>").format(
            name, Html.escape(tail).replace("\n", Html("&#10;"))),
    }


def _mask(state: SynapseState, text: str) -> str:
    """`text` fit to show: the kernel's registered secrets and synapse_nb.masking's rules applied."""
    return SecretMask(state.secrets).mask(text)


# ---------------------------------------------------------------------------------------------- list, tools


def list_servers(state: SynapseState) -> pd.DataFrame | None:
    """`%mcp list`: one row per server (None, with a hint printed, when there are none), shown whole."""

    servers = state.hub.servers if state.has_hub else []
    if not servers:
        print("no MCP servers; connect one with %mcp connect NAME -- COMMAND (or NAME URL), see %mcp help")
        return None
    mask = SecretMask(state.secrets).mask
    rows = [
        {
            "server": s.name, "transport": s.transport, "protocol": s.protocol,
            "state": state_words(s), "tools": s.tool_count, "pid": s.pid,
            "restarts": s.restarts, "endpoint": mask(s.command or s.url or ""), "roots": _roots_cell(state, s.name),
            "last_error": mask(s.last_error or ""),
        }
        for s in servers
    ]
    from ..output.listing import Listing

    frame = Listing(rows, columns=list(SERVER_COLUMNS))
    frame["pid"] = frame["pid"].astype("Int64")
    return frame


def _roots_cell(state: SynapseState, name: str) -> str:
    """The folders offered to the server as roots, or what it sees without them."""
    roots = state.hub.roots(name)
    return ", ".join(str(p) for p in roots) if roots else "none offered (its own folders)"


def state_words(info: ServerInfo) -> str:
    """`connected`, or what a server that is not running is and the command that gets it going
    (`failed — %mcp restart bad to retry`): a listing never leaves a dead server looking usable."""
    return info.state if info.usable else info.status.replace("`", "")


def tools(state: SynapseState, server: str | None = None) -> pd.DataFrame:
    """`%mcp tools [SERVER]`: every listed tool (qualified names) with its parameters, every row and the
    whole description shown. `destructive` is True or False as the tool says, `unknown` for an MCP tool that
    says nothing (possibly destructive: it asks under the default policy).
    `ui` says which have an MCP Apps View and who may call them (`ui_label`):
    app-only tools are listed, though never offered to the model. Tools that only run as MCP tasks are
    listed too, with a `note` column (there only when some listed tool has a note) saying why they are
    not offered to the model. The built-in `kernel__*` group is listed when it is on
    (`SynapseMagics.kernel_tools`) or asked for (`%mcp tools kernel`)."""
    from ..output.listing import Listing
    from ..turns.result import LOCAL_SERVER

    state.register_notebook_tools()
    grouped = state.registry.grouped
    if server is not None and not any(s.server == server for s in grouped):
        _server(state, server)
    specs = [s for s in _mcp_tools(state, every=True) if server is None or s.server == server]
    if server is None:
        specs += state.registry.native
    kernel_on = bool(getattr(state.magics, "kernel_tools", False))
    specs += [s for s in grouped if s.server == server or (server is None and kernel_on)]
    rows = [
        {
            "name": s.name, "server": s.server or LOCAL_SERVER, "tool": s.original_name or s.name,
            "description": _first_paragraph(s.description), "parameters": _parameters(s),
            "read_only": bool(s.annotations.get("readOnlyHint", False)),
            "destructive": "unknown" if s.destructive_hint is None else s.destructive_hint,
            "ui": ui_label(s.ui),
        }
        for s in specs
    ]
    columns = list(TOOL_COLUMNS)
    if any(s.needs_task for s in specs):
        columns.append("note")
        for row, spec in zip(rows, specs, strict=True):
            row["note"] = "" if not spec.needs_task else TASK_NOTE if _serves_tasks(state, spec) else NO_TASKS_NOTE
    return Listing(rows, columns=columns)


def _mcp_tools(state: SynapseState, *, every: bool = False) -> list[ToolSpec]:
    """The MCP tools offered to the model; `every`: every listed tool (MCP tasks, app-only)."""
    if not state.has_hub:
        return []
    return list(state.hub.all_tools if every else state.hub.tools)


def _serves_tasks(state: SynapseState, spec: ToolSpec) -> bool:
    return spec.server is not None and state.has_hub and state.hub.serves_tasks(spec.server)


def _task_refusal(server: str, tool: str) -> UsageError:
    """Why a tool that requires MCP tasks cannot be called, in one line."""
    return UsageError(
        f"%mcp call: {server}.{tool} needs MCP tasks (its execution.taskSupport is 'required'), and server "
        f"{server!r} serves no tasks; it is listed but not offered to the model"
    )


def ui_label(ui: ToolUi | None) -> str:
    """A tool's MCP Apps side in words: "" (none), "model + app", "app only" (never offered to the model),
    "model only" (its View may not call it)."""
    if ui is None:
        return ""
    return {(True, True): "model + app", (False, True): "app only", (True, False): "model only",
            (False, False): "neither"}[(ui.for_model, ui.for_app)]


def _first_paragraph(text: str) -> str:
    """A description's first paragraph, whole (its details, e.g. an Args: section, follow a blank line)."""
    paragraph = text.strip().split("\n\n", 1)[0]
    return " ".join(paragraph.split())


def _parameters(spec: ToolSpec) -> str:
    props = spec.input_schema.get("properties") or {}
    required = set(spec.input_schema.get("required") or ())
    return ", ".join(f"{name}{'' if name in required else '?'}" for name in props)


def _server(state: SynapseState, name: str) -> ServerInfo:
    if not state.has_hub:
        raise UsageError(f"%mcp: unknown server {name!r}; no servers are connected (%mcp connect {name} -- COMMAND)")
    try:
        return state.hub.server(name)
    except UnknownServerError:
        known = ", ".join(s.name for s in state.hub.servers) or "none"
        raise UsageError(f"%mcp: unknown server {name!r}; connected servers: {known} (see %mcp list)") from None


# ---------------------------------------------------------------------------------------------- call


@dataclass(frozen=True)
class CallOutput:
    """What `%mcp call` returns and shows: the tool's result as the %%synapse tool block shows one (see
    notebook/output/calls.py: a table with raw, capped text, images); `.text` and `.df` hold all of it."""

    name: str
    arguments: Mapping[str, Any]
    result: ToolResult

    @property
    def text(self) -> str:
        return self.result.text

    @property
    def df(self) -> pd.DataFrame:
        """The tool's tabular or structured result as a DataFrame (the fields found beside a table, such as
        a `warning` or `truncated`, in its `.attrs`); ValueError when it holds neither."""
        from ..turns.frames import result_frame

        return result_frame(self.result)

    def df_of(self, name: str | int) -> pd.DataFrame:
        """One of several tables in the result, by its path (`customers`, `data.rows`) or position."""
        from ..turns.frames import result_frame

        return result_frame(self.result, name)

    @property
    def meta(self) -> dict[str, Any]:
        """The fields the server sent beside its table (`warning`, `truncated`, `nextCursor` ...); {} when the
        result is no single table or the table was all of it."""
        from ..output.tabular import table_of

        table = None if self.result.is_error else table_of(self.result)
        return dict(table.meta) if table is not None else {}

    def __repr__(self) -> str:
        return call_text(self.name, self.result)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return call_bundle(self.name, self.arguments, self.result)


def find_tool(state: SynapseState, target: CallTarget) -> ToolSpec:
    """The tool `SERVER.TOOL` names (by the server's own tool name, or the qualified one); `python.NAME` is an
    `@synapse_nb.tool` function of the notebook (listed under server `python` by %mcp tools)."""
    from ..turns.result import LOCAL_SERVER

    offered = [s for s in _mcp_tools(state, every=True) if s.server == target.server]
    group: list[ToolSpec] = []
    if not offered:  # a built-in group (kernel), or the @synapse_nb.tool functions (`python`), as %mcp tools lists
        state.register_notebook_tools()
        group = [s for s in state.registry.grouped if s.server == target.server]
        if target.server == LOCAL_SERVER:
            group = state.registry.native
    for spec in offered or group:
        if target.tool in (spec.original_name, spec.name) or spec.name == f"{target.server}__{target.tool}":
            return spec
    if not offered and target.server == LOCAL_SERVER:
        names = ", ".join(s.name for s in group) or "none"
        raise UsageError(f"%mcp call: no @synapse_nb.tool function {target.tool!r} in the notebook; its functions: "
                         f"{names} (see %mcp tools)")
    offered = offered or group
    if not group:
        info = _server(state, target.server)  # an unknown server gets its own message (last: it costs a snapshot)
        if not offered and not info.usable:  # its tools are unknown because it is not running: say that
            why = f"{info.state}: {info.last_error}" if info.last_error else info.state
            raise UsageError(_mask(state, f"%mcp call: server {target.server!r} is not running ({why}); start it "
                                          f"again with %mcp restart {target.server}"))
    names = ", ".join(s.original_name or s.name for s in offered) or "none"
    raise UsageError(
        f"%mcp call: server {target.server!r} has no tool {target.tool!r}; its tools: {names} "
        f"(see %mcp tools {target.server})"
    )


async def call_async(
    state: SynapseState, target: CallTarget, arguments: Mapping[str, Any] | str, *, detach: bool = False,
) -> CallOutput | DetachedTask:
    """`%mcp call [--detach] SERVER.TOOL ARGS`: run one tool by hand (no model, no approval) and show the result.

    `arguments` is the arguments, or the text of the cell after the tool (a JSON object or `key=value`
    words, typed by the tool's input schema: args.parse_call_arguments).

    While it runs, the cell shows the time waited and the server's progress reports; a call the server runs as
    an MCP task shows the task (its id, status and message, and its question while it asks one). Cancelling it
    (an interrupt) cancels the call: the server gets an MCP cancellation (`tasks/cancel` for a task), the call is
    recorded as cancelled. `detach`: once the server has made the call a task, leave it running and say how to
    come back to it (`%mcp tasks result ID`); a call that is no task just runs."""
    from .mcp_tasks import DetachedTask, cell_label

    spec = find_tool(state, target)
    if spec.needs_task and not _serves_tasks(state, spec):
        raise _task_refusal(target.server, spec.original_name or target.tool)
    if isinstance(arguments, str):
        arguments = parse_call_arguments(arguments, spec.input_schema)
    name = f"{target.server}.{spec.original_name or target.tool}"
    started = time.perf_counter()
    out = LiveOutput(live=state.port.live, publish=state.port.publish)
    progress = CallProgress(name)
    try:
        async with ticking(out, progress.bundle, asked=lambda: state.port.asking_since) as refresh:

            def report(done: float, total: float | None, message: str | None) -> None:
                progress.report(done, total, message)
                refresh()

            def seen(task: TaskState) -> None:
                progress.task = task
                refresh()
                if detach:
                    watch.detach()

            watch = TaskWatch(seen, cell=cell_label(state))
            result = await state.call_tool(spec.name, dict(arguments), on_progress=report, task=watch)
    except TaskDetachedError as exc:
        return DetachedTask(target.server, spec.original_name or target.tool, exc.task_id)
    except SynapseError as exc:
        raise usage_error(exc) from None
    if not result.duration_ms:
        import dataclasses

        result = dataclasses.replace(result, duration_ms=(time.perf_counter() - started) * 1000)
    await _show_view(state, spec, arguments, result)
    return CallOutput(name, dict(arguments), result)


async def _show_view(state: SynapseState, spec: ToolSpec, arguments: Mapping[str, Any], result: ToolResult) -> None:
    """A UI tool's View (MCP Apps), displayed above the call's result, which stays the text for frontends
    without widgets."""
    opened = await state.apps.open(spec, arguments, result)
    if opened is not None:
        opened.publish(state.port.publish)


# ---------------------------------------------------------------------------------------------- lifecycle


async def disconnect_async(state: SynapseState, name: str | None, *, every: bool = False) -> list[str]:
    """`%mcp disconnect NAME|--all`: stop servers; returns the names stopped."""
    if every:
        # a stopped server may still be closing (an interrupted connect): --all waits for it, and ends it
        names = [s.name for s in state.hub.servers if s.state != "stopped" or s.closing] if state.has_hub else []
    elif name is None:
        raise UsageError("%mcp disconnect: name a server or use --all, e.g. %mcp disconnect demo")
    else:
        _server(state, name)
        names = [name]
    for server in names:
        try:
            async with _stopping(state, f"stopping {server}"):
                await state.hub.disconnect(server)
        except SynapseError as exc:
            raise usage_error(exc) from None
        print(f"{server} disconnected")
    if every and not names:
        print("no servers to disconnect")
    return names


async def restart_async(state: SynapseState, name: str) -> ServerInfo:
    """`%mcp restart NAME`: stop and start a server again (also brings a `down` server back)."""
    _server(state, name)
    try:
        async with _stopping(state, f"restarting {name}"):
            info = await state.hub.restart(name)
    except ServerStartError as exc:
        raise UsageError(_mask(state, f"%mcp restart: {name} failed to start: {exc.reason or exc}")) from None
    except SynapseError as exc:
        raise usage_error(exc) from None
    print(f"{name} restarted: {_connected_line(info)}")
    return info


def _stopping(state: SynapseState, doing: str) -> Any:
    """A live line (`stopping fs … 1.2 s`) while a server stops: one that ignores the end of its input is
    ended by SIGTERM, then SIGKILL, which takes a moment; the line goes when the command prints its result."""
    out = LiveOutput(live=state.port.live, publish=state.port.publish)
    return ticking(out, lambda elapsed: f"{doing} … {elapsed}")


def inspect(state: SynapseState, name: str | None = None) -> Any:
    """`%mcp inspect [NAME]`: the MCP inspector widget (servers, tools with forms to call them)."""
    if name is not None:
        _server(state, name)
    from ..widgets import inspector

    state.hub  # noqa: B018 - created now so that the widget sees a hub (with no servers, an empty one)
    return inspector(state, name)
