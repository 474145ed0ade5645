"""The MCP inspector: every connected server (or one), its state, tools, resources and prompts, in one widget."""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as w

from ...errors import UnknownServerError
from ...events import Event, ServerEvent
from ...types import ToolSpec
from ..output.markup import Html
from ._html import STYLE
from ._snapshot import Snapshot
from ._threads import call_on, kernel_loop
from .facade import HistoryLike, StateLike, listed_tools
from .inspector_snapshot import inspector_snapshot
from .kernel_group import KERNEL, BuiltinInfo, kernel_group
from .server_panel import ServerPanel
from .tool_search_box import ToolSearchBox

__all__ = ["Inspector", "inspector"]

logger = logging.getLogger("synapse_nb.notebook")


def inspector(state: StateLike, server: str | None = None) -> Inspector:
    """The MCP inspector for all connected servers, or only `server` (UnknownServerError if not connected)."""
    if server is not None and not (server == KERNEL and kernel_group(state) is not None):
        names = [s.name for s in state.hub.servers]
        if server not in names:
            known = ", ".join(names) if names else "none"
            raise UnknownServerError(
                f"no MCP server named {server!r} (connected: {known}); "
                f"connect it with %mcp connect {server} -- COMMAND",
                server=server,
            )
    return Inspector(state, server)


class Inspector(Snapshot, w.VBox):  # type: ignore[misc]
    """Servers as tabs (a single server without them); Refresh re-reads the hub, keeping forms as they are.

    The built-in `kernel` tool group is shown as a server "kernel" (after the MCP servers) whenever the
    extension has it, on or off for the model: its forms call the tools in this kernel.

    Open panels follow the hub: every ServerEvent (a restart by a call, a crash) re-reads it. The tab
    shown first is a running server's, never a failed one's. The MIME bundle carries a static snapshot
    (servers, tools, recent calls) beside the widget view, for saved notebooks.
    """

    def __init__(self, state: StateLike, server: str | None = None) -> None:
        self.state = state
        self.only = server
        self.panels: dict[str, ServerPanel] = {}
        self._reader: HistoryLike | None = None
        self._chose_tab = False
        self._unsubscribe: Callable[[], None] | None = None
        self.summary = w.HTML()
        self.refresh_button = w.Button(description="Refresh", icon="refresh", tooltip="Re-read servers and tools")
        self.refresh_button.layout = w.Layout(width="auto")
        # pin the runner's loop now, in the cell (the kernel loop); callbacks may come from subshell threads
        self.loop = kernel_loop(state.runner)
        self.refresh_button.on_click(lambda _b: call_on(self.loop, self.refresh))
        self.tabs = w.Tab()
        self.body = w.VBox(layout=w.Layout(width="100%"))
        title = "MCP inspector" if server is None else f"MCP inspector · {server}"
        header = w.HBox(
            [w.HTML(Html('<div class="snb-title">{}</div>').format(title)), self.summary, self.refresh_button],
            layout=w.Layout(justify_content="space-between", align_items="center", width="100%"),
        )
        search = state.search_tools
        self.search_box = ToolSearchBox(search) if search is not None and server is None else None
        parts = [w.HTML(STYLE), header, *([self.search_box] if self.search_box is not None else []), self.body]
        super().__init__(parts, layout=w.Layout(width="100%"))
        self.add_class("snb-root")
        self.add_class("snb-inspector")
        self.refresh()
        self._follow_server_events()

    def _follow_server_events(self) -> None:
        """Re-read the hub on every ServerEvent (the facade's `on_server_event`; None: on Refresh only)."""
        subscribe = self.state.on_server_event
        if subscribe is None:
            return
        me = weakref.ref(self)  # the listener list must not keep an inspector alive
        unsubscribe: Callable[[], None] | None = None

        def listener(event: Event) -> None:
            inspector = me()
            if inspector is None:  # collected without close(): stop listening
                if unsubscribe is not None:
                    unsubscribe()
                return
            if isinstance(event, ServerEvent) and (inspector.only is None or event.server == inspector.only):
                call_on(inspector.loop, inspector.refresh)

        unsubscribe = subscribe(listener)
        self._unsubscribe = unsubscribe

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        super().close()

    def snapshot(self) -> tuple[Html, str]:
        return inspector_snapshot(self.state, self.only, self.history())

    def history(self) -> HistoryLike | None:
        """One reader for the whole inspector (each reader keeps an in-memory DuckDB; no need for more)."""
        if self._reader is None:
            self._reader = self.state.history()
        return self._reader

    def refresh(self) -> None:
        """Re-read `hub.servers` and `hub.tools`; panels and their forms are kept, only their data changes."""
        try:
            hub = self.state.hub
            infos: list[Any] = [s for s in hub.servers if self.only is None or s.name == self.only]
            tools = listed_tools(hub)
            group = kernel_group(self.state) if self.only in (None, KERNEL) else None
            if group is not None:
                infos.append(group[0])
                tools += group[1]
        except Exception as exc:  # a widget callback: the hub may be closing; say so instead of raising
            logger.exception("reading the MCP hub failed")
            self.summary.value = Html('<span class="snb-err">{}</span>').format(exc)
            return
        seen = {info.name for info in infos}
        panels = dict(self.panels)
        for info in infos:
            panel = panels.get(info.name)
            if panel is None:
                panel = panels[info.name] = ServerPanel(
                    self.state, info.name, on_changed=self.refresh, history=self.history
                )
                panel.update(info, _tools_of(tools, info.name))
                panel.load_catalogue()
            else:
                panel.update(info, _tools_of(tools, info.name))
        for name, panel in panels.items():
            if name not in seen:
                panel.update(None, ())
        self.panels = panels
        total = sum(len(_tools_of(tools, name)) for name in seen)
        self.summary.value = Html('<span class="snb-muted">{} server{} · {} tools</span>').format(
            len(seen), "s" if len(seen) != 1 else "", total)
        self._layout()
        try:
            self.refresh_snapshot()  # a reopened notebook shows the servers as they were last seen
        except Exception:  # a widget callback: the snapshot is a copy, the widget itself is fine
            logger.exception("taking the inspector's snapshot again failed")

    def _layout(self) -> None:
        none_connected = w.HTML(
            '<div class="snb-card snb-muted">No MCP servers are connected. Connect one with '
            "<code>%mcp connect NAME -- COMMAND [ARGS...]</code>, or list them in "
            "<code>.synapse/mcp_servers.json</code> and run <code>%mcp connect</code>.</div>"
        )
        if not self.panels:
            self.body.children = (none_connected,)
        elif len(self.panels) == 1:
            (panel,) = self.panels.values()
            only_builtin = isinstance(panel.info, BuiltinInfo) and self.only is None
            self.body.children = (none_connected, panel) if only_builtin else (panel,)
        else:
            if tuple(self.tabs.children) != tuple(self.panels.values()):
                self.tabs.children = tuple(self.panels.values())
            self.tabs.titles = tuple(_tab_title(p) for p in self.panels.values())
            self.body.children = (self.tabs,)
            if not self._chose_tab:  # open on a running server, never on a failed one
                self._chose_tab = True
                states = [str(getattr(p.info, "state", "")) for p in self.panels.values()]
                self.tabs.selected_index = states.index("connected") if "connected" in states else 0
                if "connected" not in states and "built in" in states:
                    self.tabs.selected_index = states.index("built in")


def _tools_of(tools: Sequence[ToolSpec], server: str) -> list[ToolSpec]:
    return [t for t in tools if t.server == server]


def _tab_title(panel: ServerPanel) -> str:
    """`● demo`; a server that is not running says so in its tab: `✖ web · failed`; `◆ kernel · built in`."""
    info: Any = panel.info
    if isinstance(info, BuiltinInfo):
        return f"◆ {panel.name} · {info.state}" + ("" if info.enabled else " (off)")
    state = "stopped" if info is None else str(getattr(info, "state", ""))
    mark = {"connected": "●", "crashed": "✖", "failed": "✖", "down": "✖"}.get(state, "○")
    return f"{mark} {panel.name}" + ("" if state == "connected" else f" · {state}")
