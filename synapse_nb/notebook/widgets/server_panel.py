"""ServerPanel: one MCP server in the inspector: card, restart, stderr and logs, tools, resources, prompts, skills."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as w

from ...errors import SynapseError
from ...types import ToolSpec
from ..output.markup import Html, join
from ..questions.sign_in import sign_in_link_html
from ._html import SPINNER, state_badge
from ._threads import call_on, kernel_loop
from .catalogue import PromptBrowser, ResourceBrowser
from .facade import HistoryLike, StateLike
from .kernel_group import OFF_HINT, BuiltinInfo
from .log_view import LogView
from .tool_panel import ToolPanel, ui_mark

__all__ = ["ServerPanel", "card_html", "prompts_html", "resources_html", "skills_html"]

logger = logging.getLogger("synapse_nb.notebook")


def _get(obj: Any, name: str, default: Any = None) -> Any:
    """An attribute of a dataclass/SDK object, or a key of a dict: the hub's listings come as either."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def card_html(name: str, info: Any | None) -> Html:
    """The status line of a server: state (colour-coded), transport, pid, tool count, last error."""
    if info is None:
        return Html('<div class="snb-title">{} {}</div><div class="snb-muted">disconnected: no longer in the hub'
                    "</div>").format(name, state_badge("stopped"))
    if isinstance(info, BuiltinInfo):
        return builtin_card_html(info)
    state = str(_get(info, "state", "unknown"))
    facts = [Html("transport <b>{}</b>").format(_get(info, "transport", "?"))]
    protocol = _get(info, "protocol")
    if protocol:
        facts.append(Html("protocol <b>{}</b>").format(protocol))
    server_name = _get(info, "server_name")
    if server_name:
        facts.insert(0, Html("{} {}").format(server_name, _get(info, "server_version") or "").strip())
    pid = _get(info, "pid")
    if pid is not None:
        facts.append(Html("pid <b>{}</b>").format(pid))
    facts.append(Html("<b>{}</b> tools").format(_get(info, "tool_count", 0)))
    restarts = _get(info, "restarts") or 0
    if restarts:
        facts.append(Html("{} restart{}").format(restarts, "s" if restarts != 1 else ""))
    where = _get(info, "command") or _get(info, "url")
    if where:
        facts.append(Html("<code>{}</code>").format(where))
    out = Html('<div class="snb-title">{} {}</div><div class="snb-muted">{}</div>').format(
        name, state_badge(state), join(facts, " · "))
    last_error = _get(info, "last_error")
    if last_error:
        out += Html('<div class="snb-err">last error: {}</div>').format(last_error)
    hint = retry_hint(name, state, str(_get(info, "transport") or "stdio"))
    if hint:
        out += Html('<div class="snb-retry">{}</div>').format(hint)
    return out


def builtin_card_html(info: BuiltinInfo) -> Html:
    """The card of a built-in group: served in process, whether cells offer it, how to turn it on."""
    offered = (
        Html("offered to the model in every <code>%%synapse</code> cell")
        if info.enabled
        else Html("<b>off</b> for the model — {}").format(OFF_HINT.removeprefix("off: "))
    )
    return Html(
        '<div class="snb-title">{} {}</div>'
        '<div class="snb-muted">transport <b>{}</b> · <b>{}</b> tools · {}</div>'
        '<div class="snb-muted">Call runs a tool in this kernel as your own action (recorded as a manual '
        "call), the way the agent's <code>run_python</code> runs after you approve it.</div>"
    ).format(info.name, state_badge(info.state), info.transport, info.tool_count, offered)


def retry_hint(name: str, state: str, transport: str = "stdio") -> Html:
    """What to do about a server that is not running (HTML), or "" for a usable one; a crashed HTTP server is
    reconnected to by the next call (a client cannot restart a remote server)."""
    command = Html("<code>%mcp restart {}</code>").format(name)
    if state in ("failed", "down"):
        return Html('<b class="snb-err">{}</b> — {} to retry').format(state, command)
    if state == "crashed":
        ours = transport in ("stdio", "memory")
        again, gone = ("restarts it", "crashed") if ours else ("reconnects", "unreachable")  # a remote one went away
        return Html('<b class="snb-err">{}</b> — the next call {}, or {}').format(gone, again, command)
    return Html()


def resources_html(resources: Sequence[Any]) -> Html:
    if not resources:
        return Html('<span class="snb-muted">This server offers no resources.</span>')
    rows = join(
        Html("<tr><td><b>{}</b>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>").format(
            _get(r, "name", ""), Html(' <span class="snb-muted">template</span>') if _get(r, "uri_template") else "",
            _get(r, "uri") or _get(r, "uri_template") or "", _get(r, "mime_type") or _get(r, "mimeType") or "",
            _get(r, "description") or "")
        for r in resources
    )
    return Html('<table class="snb-table"><tr><th>name</th><th>URI</th><th>type</th><th>description</th></tr>{}'
                "</table>").format(rows)


def prompts_html(prompts: Sequence[Any]) -> Html:
    if not prompts:
        return Html('<span class="snb-muted">This server offers no prompts.</span>')
    rows = []
    for p in prompts:
        args = []
        for a in _get(p, "arguments") or ():
            star = Html('<span class="snb-req">*</span>') if _get(a, "required") else ""
            args.append(Html('<span title="{}">{}{}</span>').format(_get(a, "description") or "",
                                                                    _get(a, "name", ""), star))
        rows.append(Html("<tr><td><b>{}</b></td><td>{}</td><td>{}</td></tr>").format(
            _get(p, "name", ""), join(args, ", "), _get(p, "description") or ""))
    head = Html("<tr><th>name</th><th>arguments</th><th>description</th></tr>")
    return Html('<table class="snb-table">{}{}</table>').format(head, join(rows))


def skills_html(skills: Sequence[Any]) -> Html:
    """The server's skills (SEP-2640) as listed when it connected: name, description, files; never their content
    (it is read only when the model loads one)."""
    if not skills:
        return Html('<span class="snb-muted">This server offers no skills.</span>')
    rows = []
    for e in skills:
        files = "dynamic" if e.resources == "dynamic" else f"{len(e.resources)} ({e.total_size:,} bytes)"
        rows.append(Html("<tr><td><b>{}</b></td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>").format(
            e.key, e.description, files, e.uri))
    head = Html("<tr><th>skill</th><th>description</th><th>files</th><th>URI</th></tr>")
    note = Html('<div class="snb-muted">The model is offered each skill\'s name and description, and loads one when '
                "it needs it (<code>skills__load</code>).</div>")
    return Html('{}<table class="snb-table">{}{}</table>').format(note, head, join(rows))


class ServerPanel(w.VBox):  # type: ignore[misc]
    """Everything about one server; `update(info, tools)` re-draws it from a fresh hub snapshot."""

    def __init__(
        self,
        state: StateLike,
        name: str,
        *,
        on_changed: Callable[[], None] | None = None,
        history: Callable[[], HistoryLike | None] | None = None,
    ) -> None:
        self.state = state
        self.get_history = history or state.history
        self.name = name
        self.on_changed = on_changed
        self.info: Any = None
        self.tools: tuple[ToolSpec, ...] = ()
        self.tool_panels: dict[str, ToolPanel] = {}
        self.tasks: list[Any] = []
        self.catalogued = False  # resources and prompts were listed (only ever from a running server)
        self.asked_catalogue = False

        self.card = w.HTML()
        self.restart_button = w.Button(description="Restart", icon="refresh", tooltip=f"Restart {name}")
        self.disconnect_button = w.Button(description="Disconnect", icon="unlink", tooltip=f"Disconnect {name}")
        # callbacks may arrive on a subshell thread: act on the kernel's loop (see _threads)
        self.restart_button.on_click(lambda _b: self._on_loop(self._act, "restart"))
        self.disconnect_button.on_click(lambda _b: self._on_loop(self._act, "disconnect"))
        self.action_status = w.HTML()
        self.stderr_view = w.HTML()
        self.stderr = w.Accordion([self.stderr_view], titles=("stderr",), selected_index=None)
        self.log_view = LogView(name, self._read_logs, self._on_loop)
        self.logs = w.Accordion([self.log_view], titles=("logs",), selected_index=None)
        self.log_view.level.observe(lambda _c: self._on_loop(self._refresh_logs), "value")
        self.tool_list = w.Select(options=[], rows=10, layout=w.Layout(width="210px", min_width="210px"))
        self.tool_list.add_class("snb-tool-list")
        self.tool_list.observe(lambda _c: self._on_loop(self._show_tool), "value")
        self.tool_filter = w.Text(placeholder="filter tools", continuous_update=True,
                                  layout=w.Layout(width="210px", min_width="210px"))
        self.tool_filter.add_class("snb-tool-filter")
        self.tool_filter.observe(lambda _c: self._on_loop(self._filter_tools), "value")
        self.tool_detail = w.VBox(layout=w.Layout(flex="1"))
        self.resource_browser = ResourceBrowser(state.hub, name, self._spawn, self._on_loop)
        self.prompt_browser = PromptBrowser(state.hub, name, self._spawn, self._on_loop)
        self.resources = self.resource_browser.listing
        self.prompts = self.prompt_browser.listing
        self.skills = w.HTML(skills_html(()))
        self.skill_keys: tuple[str, ...] = ()
        self.tabs = w.Tab(
            [
                w.HBox([w.VBox([self.tool_filter, self.tool_list]), self.tool_detail], layout=w.Layout(width="100%")),
                self.resource_browser,
                self.prompt_browser,
                self.skills,
            ],
            titles=("Tools", "Resources", "Prompts", "Skills"),
        )
        buttons = w.HBox(
            [self.restart_button, self.disconnect_button, self.action_status], layout=w.Layout(align_items="center")
        )
        self.asking = w.VBox()  # the server's questions waiting for an answer (ElicitationWidgets, sign-in links)
        self._sign_in_links: dict[Any, Any] = {}
        header = w.VBox([self.card, buttons, self.asking, self.stderr, self.logs])
        header.add_class("snb-card")
        super().__init__([header, self.tabs], layout=w.Layout(width="100%"))
        self.add_class(f"snb-server-{name}")
        self.builtin = False

    def _as_builtin(self) -> None:
        """A group served in process: nothing to restart, disconnect, read stderr of, or list resources of."""
        self.builtin = True
        for hidden in (self.restart_button, self.disconnect_button, self.stderr, self.logs):
            hidden.layout.display = "none"
        for view, kind in ((self.resources, "resources"), (self.prompts, "prompts")):
            view.value = Html('<span class="snb-muted">The built-in {} group offers no {}.</span>').format(
                self.name, kind)

    # --- snapshot -> widgets --------------------------------------------------------------------

    def update(self, info: Any | None, tools: Sequence[ToolSpec]) -> None:
        self.info = info
        if isinstance(info, BuiltinInfo) and not self.builtin:
            self._as_builtin()
        self.card.value = card_html(self.name, info)
        state = None if info is None else str(_get(info, "state", ""))
        if state == "connected" and not self.catalogued and self.asked_catalogue:
            self.load_catalogue()
        self.disconnect_button.disabled = state in (None, "stopped")
        tail = "" if info is None else str(_get(info, "stderr_tail", "") or "")
        lines = tail.count("\n") + 1 if tail.strip() else 0
        self.stderr.titles = (f"stderr ({lines} line{'s' if lines != 1 else ''})",)
        self.stderr_view.value = (
            Html('<div class="snb-pre">{}</div>').format(tail) if lines
            else Html('<span class="snb-muted">(nothing on stderr)</span>')
        )
        if not self.builtin:
            self._refresh_logs()
            self.resource_browser.show_updates(self._resource_updates())
            asking = tuple(self._sign_ins()) + tuple(self._asking())
            if asking != tuple(self.asking.children):
                self.asking.children = asking
        skills = self.state.hub.skills.listed(self.name) if state == "connected" and not self.builtin else []
        keys = tuple(f"{e.key} {e.uri} {e.resources}" for e in skills)
        tools = tuple(tools)
        if keys != self.skill_keys:
            self.skill_keys = keys
            self.skills.value = skills_html(skills)
        tools_title = self.tabs.titles[0] if tools == self.tools else f"Tools ({len(tools)})"
        titles = (tools_title, "Resources", "Prompts", f"Skills ({len(skills)})" if skills else "Skills")
        if tuple(self.tabs.titles) != titles:
            self.tabs.titles = titles
        if tools != self.tools:
            self.tools = tools
            self._filter_tools()

    def _filter_tools(self) -> None:
        """List the tools whose name or description contains the filter text (all when it is empty)."""
        needle = self.tool_filter.value.strip().lower()
        shown = [t for t in self.tools if not needle or needle in t.name.lower() or needle in t.description.lower()]
        current = self.tool_list.value
        self.tool_list.options = [(_tool_label(t), t.name) for t in shown]
        names = [t.name for t in shown]
        self.tool_list.value = current if current in names else (names[0] if names else None)
        self.tool_list.rows = max(4, min(14, len(names)))
        self._show_tool()

    def _show_tool(self) -> None:
        name = self.tool_list.value
        spec = next((t for t in self.tools if t.name == name), None)
        if spec is None:
            message = "This server has no tools." if not self.tools else (
                "No tool matches the filter." if self.tool_filter.value.strip() else "Choose a tool."
            )
            self.tool_detail.children = (w.HTML(Html('<span class="snb-muted">{}</span>').format(message)),)
            return
        panel = self.tool_panels.get(spec.name)
        if panel is None or panel.spec != spec:
            panel = ToolPanel(self.state, spec, on_called=self.on_changed, history=self.get_history)
            if self.builtin:  # `%mcp call` reaches MCP servers only: no line to copy for a built-in tool
                panel.copy_button.layout.display = "none"
            self.tool_panels = {**self.tool_panels, spec.name: panel}
        self.tool_detail.children = (panel,)

    # --- actions (background tasks; the kernel stays free) ----------------------------------------

    def load_catalogue(self) -> None:
        """List resources and prompts in the background, once the server runs.

        Listing goes through the hub, which restarts a crashed server on use: opening the inspector
        must not do that as a side effect, so a server that is not connected is listed when it is."""
        self.asked_catalogue = True
        if self.builtin:
            return
        state = None if self.info is None else str(_get(self.info, "state", ""))
        if state != "connected":
            why = "disconnected" if state is None else state
            note = Html('<span class="snb-muted">{} is {}: its {} are listed once it runs again '
                        "(<code>%mcp restart {}</code>).</span>")
            self.resources.value = note.format(self.name, why, "resources", self.name)
            self.prompts.value = note.format(self.name, why, "prompts", self.name)
            return
        self.catalogued = True
        self._spawn(self._catalogue())

    async def _catalogue(self) -> None:
        hub = self.state.hub
        async def resources(name: str) -> list[Any]:
            return [*await hub.list_resources(name), *await hub.list_resource_templates(name)]

        for kind, view, listing, render in (
            ("resources", self.resources, resources, resources_html),
            ("prompts", self.prompts, hub.list_prompts, prompts_html),
        ):
            try:
                items = await listing(self.name)
            except SynapseError as exc:
                view.value = Html('<span class="snb-muted">No {}: {}</span>').format(kind, exc)
            except Exception as exc:  # a background widget task: show the problem and log it
                logger.exception("listing the %s of %s failed", kind, self.name)
                view.value = Html('<span class="snb-err">Listing {} failed: {}</span>').format(kind, exc)
            else:
                listed = list(items or ())
                view.value = render(listed)
                browser = self.resource_browser if kind == "resources" else self.prompt_browser
                browser.show(listed)

    def _act(self, verb: str) -> None:
        try:
            self.restart_button.disabled = True
            self.disconnect_button.disabled = True
            self.action_status.value = Html('<span class="snb-muted">{} {} …</span>').format(SPINNER, verb)
            self._spawn(self._run_action(verb))
        except Exception as exc:  # a widget callback
            logger.exception("%s of %s failed", verb, self.name)
            self.action_status.value = Html('<span class="snb-err">{}</span>').format(exc)

    async def _run_action(self, verb: str) -> None:
        hub = self.state.hub
        action = hub.restart if verb == "restart" else hub.disconnect
        try:
            await action(self.name)
        except asyncio.CancelledError:
            self.action_status.value = Html('<span class="snb-muted">{} cancelled</span>').format(verb)
            raise
        except SynapseError as exc:
            self.action_status.value = Html('<span class="snb-err">{} failed: {}</span>').format(verb, exc)
        except Exception as exc:  # a background widget task
            logger.exception("%s of %s failed", verb, self.name)
            self.action_status.value = Html('<span class="snb-err">{} failed: {}</span>').format(verb, exc)
        else:
            done = "restarted" if verb == "restart" else "disconnected"
            self.action_status.value = Html('<span class="snb-ok">{}</span>').format(done)
        finally:
            self.restart_button.disabled = False
            if verb == "restart":
                self.catalogued = False  # list again what the restarted server offers
            if self.on_changed is not None:
                self.on_changed()  # re-reads the hub; update() lists the catalogue of a running server
            elif verb == "restart":
                self.load_catalogue()

    def _resource_updates(self) -> list[str]:
        """URIs of this server's `resources/updated` notifications, as the notebook keeps them for
        `%mcp subscribe` (the facade's `answers.updates`: (server, uri) pairs, oldest first)."""
        answers = self.state.answers
        updates = answers.updates if answers is not None else ()
        return [uri for server, uri in updates if server == self.name]

    def _asking(self) -> list[Any]:
        """This server's elicitation widgets waiting for an answer (the facade's `answers.asking`)."""
        answers = self.state.answers
        asking = answers.asking if answers is not None else ()
        return [widget for widget in asking if getattr(widget.request, "server", None) == self.name]

    def _sign_ins(self) -> list[Any]:
        """A "Sign in to NAME" link while a connect of this server waits for the user (the facade's
        `sign_in.open`, notebook/questions/sign_in.py); one widget per open sign-in, kept while it stays open."""
        sign_in = self.state.sign_in
        requests = [r for r in (sign_in.open if sign_in is not None else ()) if r.server == self.name]
        links = {r: self._sign_in_links.get(r) or w.HTML(sign_in_link_html(r)) for r in requests}
        self._sign_in_links = links
        return list(links.values())

    def _refresh_logs(self) -> None:
        """Re-read the log ring; the accordion's title counts what is shown at the chosen level."""
        self.log_view.refresh()
        shown, level = self.log_view.count, self.log_view.level.value
        self.logs.titles = (f"logs ({shown} message{'s' if shown != 1 else ''} at {level} or above)",)

    def _read_logs(self, n: int, level: str) -> Sequence[Any]:
        """The hub's log ring of this server."""
        return list(self.state.hub.logs(self.name, n, level=level))

    def _on_loop(self, fn: Callable[..., None], *args: Any) -> None:
        call_on(kernel_loop(self.state.runner), fn, *args)

    def _spawn(self, coro: Any) -> None:
        task = self.state.runner.spawn(coro)
        self.tasks = [*[t for t in self.tasks if not _done(t)], task]


def _done(task: Any) -> bool:
    done = getattr(task, "done", None)
    return bool(done()) if callable(done) else False


def _tool_label(spec: ToolSpec) -> str:
    mark = " ⚠" if spec.destructive else ""
    ui = ui_mark(spec)
    return f"{spec.original_name or spec.name}{mark}{f' [{ui}]' if ui else ''}"
