"""`%mcp` subcommands: connect, list, tools, disconnect, restart, inspect (one function each; `%mcp call` is
commands/mcp_call.py's)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ...errors import OAuthError, ServerStartError, SynapseError, UnknownServerError
from ...masking import SecretMask, config_secrets
from ...server_config import ServerConfig
from ...types import ToolSpec, ToolUi
from ..output.live import LiveOutput
from ..output.markup import Html
from ..turns.display import ticking
from ..turns.view import GLYPH, duration
from ..usage import command_error, usage_error
from .args import CONNECT_OPTIONS
from .servers import connected_line, find_server, loading, progress, state_words

if TYPE_CHECKING:
    import pandas as pd

    from ...agent.approval import ApprovalPolicy
    from ...agent.tools import ToolRegistry
    from ...mcp_client.hub import McpHub
    from ...mcp_client.info import ServerInfo
    from ..kernel.port import KernelPort
    from ..secrets import SecretRegistry
    from ..settings import Settings
    from ..widgets.facade import WidgetParts
    from ..workspace.tools import KernelTools

__all__ = [
    "ConnectReport",
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
        return f"all done in {duration(self.waited_ms - self.loading_ms)}{loading(self.loading_ms)}"

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
    return f"{GLYPH['ok']} {connected_line(result, already=already)}"


async def _load_client() -> float:
    """Milliseconds spent waiting for the MCP client's one-time import (mcp_client.loaded), 0 when ready."""
    from ...mcp_client import loaded

    return await loaded() * 1000




async def connect_async(
    hub_of: Callable[[], McpHub], port: KernelPort, secrets: SecretRegistry, policy: ApprovalPolicy,
    spec: ServerConfig, *, on_connected: Callable[[str], None] | None = None,
) -> ServerInfo:
    """`%mcp connect NAME -- COMMAND ...` / `NAME URL`: start one server and show its tools count.

    Header values and the secret env values (masking.config_secrets: secret names, key-like values, URL
    passwords) become secrets of the history store first, so they are never recorded or shown. A server
    that does not start raises UsageError with the reason; its stderr tail is shown.
    An HTTP server that asks for OAuth shows "Sign in to NAME" here (notebook/questions/sign_in.py) and connects
    once the user has signed in; a sign-in that does not work is one line (the OAuthError's message).
    `on_connected` is told the server's name once it is connected (commands/mcp_tasks.py follows its open tasks).
    The hub is built (`hub_of`) only once the MCP client's import is done: built earlier, it would wait for that
    import on the loop, before the cell says what it is waiting for.
    """
    started = clock()
    for value in config_secrets(spec.env, spec.headers):
        secrets.add(value)
    shown = spec.display  # the command line or URL, its secrets masked (masking.command_line, mask_url)
    misplaced = _connect_options_after_command(spec.args)
    if misplaced:  # passed to the server as written: say so, as the server may be fine with them or not
        port.publish({"text/plain": (
            f"note: {', '.join(misplaced)} after the command go to the server, not to %mcp connect; connect "
            f"options go before `--`: %mcp connect {spec.name} {misplaced[0]} ... -- COMMAND ...")}, None, False)
    out = LiveOutput(live=port.live, publish=port.publish, withdraw=port.withdraw)
    out.start(progress(f"connecting {spec.name} ({'http' if spec.url else 'stdio'}: {_mask(secrets, shown)}) …"))
    try:
        loading = await _load_client()
        hub = hub_of()
        before = _connected_at(hub, spec.name)
        info = await hub.connect_server(spec)
    except OAuthError as exc:
        out.finish(progress(f"✗ {spec.name}: not signed in"))
        raise command_error(_mask(secrets, f"%mcp connect: {exc}"), type(exc).__name__) from None
    except ServerStartError as exc:
        tail = _tail(secrets, exc.stderr_tail)
        if tail:  # what the server said: more than the one-line error below
            out.finish(_stderr_bundle(spec.name, tail))
        else:  # the error below says it all: once
            out.clear()
        raise command_error(_mask(secrets, f"%mcp connect: {spec.name} failed to start: {exc.reason or exc}"),
                            type(exc).__name__) from None
    except SynapseError as exc:
        out.clear()  # the error says it: once
        raise usage_error(exc) from None
    except asyncio.CancelledError:
        out.finish(progress(f"{GLYPH['cancelled']} connecting {spec.name} was interrupted"))
        raise
    if spec.approve is not None:
        policy.set_server(spec.name, spec.approve)
    waited = (clock() - started) * 1000
    already = before is not None and info.connected_at == before
    line = connected_line(info, waited, already=already, loading_ms=loading)
    out.finish(progress(f"{GLYPH['ok']} {spec.name}: {line}"))
    if on_connected is not None:
        on_connected(spec.name)
    return info


def _connect_options_after_command(args: Sequence[str]) -> list[str]:
    """The words of a server's command line that are `%mcp connect` options (`--env`, `--timeout` ...): the
    user most likely meant them for the connect, but after `--` every word is the server's."""
    ours = set(CONNECT_OPTIONS.flags()) - {"--config"}
    return list(dict.fromkeys(w.split("=", 1)[0] for w in args if w.split("=", 1)[0] in ours))


def _connected_at(hub: McpHub, name: str) -> Any:
    """When the server `name` connected, if it is connected now (a duplicate connect keeps it), else None."""
    try:
        info = hub.server(name)
    except UnknownServerError:
        return None
    return info.connected_at if info.state == "connected" else None


async def connect_config_async(
    hub_of: Callable[[], McpHub], port: KernelPort, secrets: SecretRegistry, policy: ApprovalPolicy,
    path: str | None = None, *, name: str | None = None,
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
            secrets.add(value)
        if config.approve is not None and not config.disabled:
            policy.set_server(config.name, config.approve)
    enabled = [c.name for c in configs.values() if not c.disabled]
    if not enabled:
        return ConnectReport({})
    started = clock()
    out = LiveOutput(live=port.live, publish=port.publish, withdraw=port.withdraw)
    out.start(progress(f"connecting {', '.join(enabled)} …"))
    try:
        loading = await _load_client()
        hub = hub_of()  # built once the client's import is done (connect_async says why)
        before = {name: _connected_at(hub, name) for name in enabled}
        if name is None:
            results = await hub.connect_config(path)
        else:
            results = {name: await _connect_quietly(hub, configs[name])}
    except SynapseError as exc:
        out.finish(progress("✗ connecting the configured servers failed"))
        raise usage_error(exc) from None
    except asyncio.CancelledError:
        out.finish(progress(f"{GLYPH['cancelled']} connecting was interrupted"))
        raise
    already = frozenset(
        name for name, r in results.items()
        if not isinstance(r, ServerStartError) and before.get(name) is not None and r.connected_at == before[name]
    )
    report = ConnectReport(results, already, (clock() - started) * 1000, loading)
    out.finish({"text/plain": _mask(secrets, repr(report)), "text/markdown": _mask(secrets, report._repr_markdown_())})
    for name, result in results.items():
        if isinstance(result, ServerStartError) and result.stderr_tail.strip():
            tail = _tail(secrets, result.stderr_tail)
            port.publish(_stderr_bundle(name, tail), None, False)
    return report


async def _connect_quietly(hub: McpHub, config: ServerConfig) -> ServerInfo | ServerStartError:
    """One server of the config file: its ServerInfo, or the reason it did not start (listed, not raised)."""
    try:
        return await hub.connect_server(config)
    except ServerStartError as exc:
        return exc


def _tail(secrets: SecretRegistry, text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return _mask(secrets, "\n".join(lines[-STDERR_LINES:]))


def _stderr_bundle(name: str, tail: str) -> dict[str, Any]:
    text = f"{name} stderr (last lines):\n{tail}"
    return {
        "text/plain": text,
        "text/markdown": Html("<details open><summary>{} stderr (last lines)</summary><pre>{}</pre></details>").format(
            name, Html.escape(tail).replace("\n", Html("&#10;"))),
    }


def _mask(secrets: SecretRegistry, text: str) -> str:
    """`text` fit to show: the kernel's registered secrets and synapse_nb.masking's rules applied."""
    return SecretMask(secrets.values).mask(text)


# ---------------------------------------------------------------------------------------------- list, tools


def list_servers(hub: McpHub | None, secrets: SecretRegistry) -> pd.DataFrame | None:
    """`%mcp list`: one row per server of `hub` (None: none built yet; None, with a hint printed, when there are
    no servers), shown whole."""
    servers = hub.servers if hub is not None else []
    if not servers:
        print("no MCP servers; connect one with %mcp connect NAME -- COMMAND (or NAME URL), see %mcp help")
        return None
    mask = SecretMask(secrets.values).mask
    rows = [
        {
            "server": s.name, "transport": s.transport, "protocol": s.protocol,
            "state": state_words(s), "tools": s.tool_count, "pid": s.pid,
            "restarts": s.restarts, "endpoint": mask(s.command or s.url or ""), "roots": _roots_cell(hub, s.name),
            "last_error": mask(s.last_error or ""),
        }
        for s in servers
    ]
    from ..output.listing import Listing

    frame = Listing(rows, columns=list(SERVER_COLUMNS))
    frame["pid"] = frame["pid"].astype("Int64")
    return frame


def _roots_cell(hub: McpHub | None, name: str) -> str:
    """The folders offered to the server as roots, or what it sees without them."""
    roots = hub.roots(name) if hub is not None else ()
    return ", ".join(str(p) for p in roots) if roots else "none offered (its own folders)"


def tools(
    hub: McpHub | None, registry: ToolRegistry, kernel: KernelTools, settings: Settings, server: str | None = None,
) -> pd.DataFrame:
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

    kernel.register_notebook_tools(registry)
    grouped = registry.grouped
    if server is not None and not any(s.server == server for s in grouped):
        find_server(hub, server)
    specs = [s for s in _mcp_tools(hub, every=True) if server is None or s.server == server]
    if server is None:
        specs += registry.native
    kernel_on = settings.kernel_tools
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
            row["note"] = "" if not spec.needs_task else TASK_NOTE if _serves_tasks(hub, spec) else NO_TASKS_NOTE
    return Listing(rows, columns=columns)


def _mcp_tools(hub: McpHub | None, *, every: bool = False) -> list[ToolSpec]:
    """The MCP tools offered to the model; `every`: every listed tool (MCP tasks, app-only)."""
    if hub is None:
        return []
    return list(hub.all_tools if every else hub.tools)


def _serves_tasks(hub: McpHub | None, spec: ToolSpec) -> bool:
    return spec.server is not None and hub is not None and hub.serves_tasks(spec.server)


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


# ---------------------------------------------------------------------------------------------- lifecycle


async def disconnect_async(hub: McpHub | None, port: KernelPort, name: str | None, *, every: bool = False) -> list[str]:
    """`%mcp disconnect NAME|--all`: stop servers; returns the names stopped."""
    if every:
        # a stopped server may still be closing (an interrupted connect): --all waits for it, and ends it
        names = [s.name for s in hub.servers if s.state != "stopped" or s.closing] if hub is not None else []
    elif name is None:
        raise UsageError("%mcp disconnect: name a server or use --all, e.g. %mcp disconnect demo")
    else:
        find_server(hub, name)
        names = [name]
    for server in names:
        assert hub is not None  # a server to stop is one of its servers
        try:
            async with _stopping(port, f"stopping {server}"):
                await hub.disconnect(server)
        except SynapseError as exc:
            raise usage_error(exc) from None
        print(f"{server} disconnected")
    if every and not names:
        print("no servers to disconnect")
    return names


async def restart_async(hub: McpHub | None, port: KernelPort, secrets: SecretRegistry, name: str) -> ServerInfo:
    """`%mcp restart NAME`: stop and start a server again (also brings a `down` server back)."""
    find_server(hub, name)
    assert hub is not None  # it has that server
    try:
        async with _stopping(port, f"restarting {name}"):
            info = await hub.restart(name)
    except ServerStartError as exc:
        raise UsageError(_mask(secrets, f"%mcp restart: {name} failed to start: {exc.reason or exc}")) from None
    except SynapseError as exc:
        raise usage_error(exc) from None
    print(f"{name} restarted: {connected_line(info)}")
    return info


def _stopping(port: KernelPort, doing: str) -> Any:
    """A live line (`stopping fs … 1.2 s`) while a server stops: one that ignores the end of its input is
    ended by SIGTERM, then SIGKILL, which takes a moment; the line goes when the command prints its result."""
    out = LiveOutput(live=port.live, publish=port.publish, withdraw=port.withdraw)
    return ticking(out, lambda elapsed: f"{doing} … {elapsed}")


def inspect(parts: WidgetParts, hub: McpHub, name: str | None = None) -> Any:
    """`%mcp inspect [NAME]`: the MCP inspector widget (servers, tools with forms to call them) over `parts`."""
    if name is not None:
        find_server(hub, name)
    from ..widgets import inspector

    return inspector(parts, name)
