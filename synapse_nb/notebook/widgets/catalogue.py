"""A server's resources and prompts in the inspector: listed, read or fetched with one click, resources watched."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from ...errors import SynapseError
from ...mcp_client import uri_template
from ..output.markup import Html, join
from ._html import SPINNER, pre

if TYPE_CHECKING:
    from .facade import HubLike

__all__ = ["PromptBrowser", "ResourceBrowser", "blocks_html", "prompt_html"]

logger = logging.getLogger("synapse_nb.notebook")


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def blocks_html(blocks: Sequence[Any]) -> Html:
    """What a resource read returned: text as text, other content named by its kind and type."""
    if not blocks:
        return Html('<span class="snb-muted">(empty)</span>')
    parts = []
    for block in blocks:
        text = _get(block, "text")
        if text is not None:
            parts.append(pre(str(text)))
        else:
            kind, mime = _get(block, "kind", "content"), _get(block, "mime_type") or ""
            size = len(_get(block, "data") or "")
            length = f", {size:,} base64 characters" if size else ""
            parts.append(Html('<div class="snb-muted">[{} {}{}]</div>').format(kind, mime, length))
    return join(parts)


def prompt_html(result: Any) -> Html:
    """A rendered prompt: its description, then each message with its role."""
    out = []
    description = _get(result, "description")
    if description:
        out.append(Html('<div class="snb-muted">{}</div>').format(description))
    for message in _get(result, "messages") or ():
        role = _get(message, "role", "?")
        out.append(Html('<div class="snb-muted"><b>{}</b></div>{}').format(role,
                                                                          pre(str(_get(message, "content") or ""))))
    return join(out) or Html('<span class="snb-muted">(no messages)</span>')


class _Browser(w.VBox):  # type: ignore[misc]
    """A listing (HTML), a chooser, an action button and the action's output."""

    def __init__(self, label: str, icon: str, spawn: Callable[[Any], Any], on_loop: Callable[..., None]) -> None:
        self.spawn = spawn
        self.listing = w.HTML('<span class="snb-muted">loading …</span>')
        self.choice = w.Dropdown(options=[], layout=w.Layout(width="320px"))
        self.button = w.Button(description=label, icon=icon, layout=w.Layout(width="auto"))
        self.button.on_click(lambda _b: on_loop(self._clicked))
        self.output = w.HTML()
        self.controls = w.HBox([self.choice, self.button], layout=w.Layout(display="none", align_items="center"))
        super().__init__([self.listing, self.controls, self.output], layout=w.Layout(width="100%"))

    def offer(self, options: list[tuple[str, str]]) -> None:
        self.choice.options = options
        self.choice.value = options[0][1] if options else None
        self.controls.layout.display = None if options else "none"

    def _clicked(self) -> None:
        raise NotImplementedError

    async def _show(self, what: str, action: Callable[[], Any], render: Callable[[Any], Html]) -> None:
        self.output.value = Html('<span class="snb-muted">{} {} …</span>').format(SPINNER, what)
        try:
            result = await action()
        except SynapseError as exc:
            self.output.value = Html('<span class="snb-err">{}</span>').format(exc)
        except Exception as exc:  # a background widget task: show and log
            logger.exception("%s failed", what)
            self.output.value = Html('<span class="snb-err">{}: {}</span>').format(type(exc).__name__, exc)
        else:
            self.output.value = render(result)


class ResourceBrowser(_Browser):
    """Resources and resource templates of one server; Read shows the chosen one's contents
    (`hub.read_resource`; a template is filled first from a text box per variable); Subscribe asks the
    server for a resource's updates (`hub.subscribe`), which `show_updates` lists as they arrive."""

    def __init__(self, hub: HubLike, server: str, spawn: Callable[[Any], Any], on_loop: Callable[..., None]) -> None:
        self.hub, self.server = hub, server
        self.subscribed: set[str] = set()
        super().__init__("Read", "book", spawn, on_loop)
        self.subscribe_button = w.Button(description="Subscribe", icon="bell", layout=w.Layout(width="auto"),
                                         tooltip="Show updates the server sends for this resource")
        self.subscribe_button.on_click(lambda _b: on_loop(self._subscribe_clicked))
        self.choice.observe(lambda _c: on_loop(self._label_subscribe), "value")
        self.choice.observe(lambda _c: on_loop(self._chosen), "value")
        self.controls.children = (*self.controls.children, self.subscribe_button)
        self.updates = w.HTML()
        self.variables: dict[str, w.Text] = {}
        self.variable_box = w.VBox()
        self.children = (self.listing, self.controls, self.variable_box, self.updates, self.output)

    def show(self, resources: Sequence[Any]) -> None:
        """Offer the resources, then the templates (`uri_template`: a text box per variable to fill)."""
        options = []
        for r in resources:
            template = _get(r, "uri_template")
            uri = str(template or _get(r, "uri"))
            options.append((str(_get(r, "name") or uri) + (" (template)" if template else ""), uri))
        self.offer(options)
        self._chosen()

    def _chosen(self) -> None:
        """A template's variables as text boxes (none for a plain resource)."""
        uri = str(self.choice.value or "")
        names = self._variables(uri)
        self.variables = {n: w.Text(placeholder=n, layout=w.Layout(width="320px")) for n in names}
        self.variable_box.children = tuple(
            w.HBox([w.HTML(Html("<b>{}</b>").format(n), layout=w.Layout(width="150px")), box])
            for n, box in self.variables.items()
        )
        self.subscribe_button.disabled = bool(names)  # a template is no resource to watch until filled

    @staticmethod
    def _variables(uri: str) -> list[str]:
        if not uri or not uri_template.is_template(uri):
            return []
        try:
            return uri_template.variables(uri)
        except SynapseError:
            return []

    def show_updates(self, uris: Sequence[str]) -> None:
        """The `resources/updated` notifications received from this server, newest last (the last 20)."""
        if not uris and not self.subscribed:
            self.updates.value = ""
            return
        watching = join((Html("<code>{}</code>").format(u) for u in sorted(self.subscribed)), ", ") or "nothing"
        lines = join(Html("<div>⟳ <code>{}</code> updated</div>").format(u) for u in uris[-20:])
        self.updates.value = Html('<div class="snb-muted">subscribed to {} · {} update{}</div>{}').format(
            watching, len(uris), "s" if len(uris) != 1 else "", lines)

    def _clicked(self) -> None:
        uri = str(self.choice.value or "")
        if not uri:
            return
        if self.variables:
            values = {n: box.value for n, box in self.variables.items() if box.value}
            try:
                uri = uri_template.expand(uri, values)
            except SynapseError as exc:  # a variable left empty: say which, send nothing
                self.output.value = Html('<span class="snb-err">{}</span>').format(exc)
                return
        self.spawn(self._show(f"reading {uri}", lambda: self.hub.read_resource(self.server, uri), blocks_html))

    def _label_subscribe(self) -> None:
        on = self.choice.value in self.subscribed
        self.subscribe_button.description = "Unsubscribe" if on else "Subscribe"
        self.subscribe_button.icon = "bell-slash" if on else "bell"

    def _subscribe_clicked(self) -> None:
        uri = self.choice.value
        if uri:
            self.subscribe_button.disabled = True
            self.spawn(self._toggle_subscription(str(uri)))

    async def _toggle_subscription(self, uri: str) -> None:
        on = uri not in self.subscribed
        verb = "subscribing to" if on else "unsubscribing from"
        self.output.value = Html('<span class="snb-muted">{} {} {} …</span>').format(SPINNER, verb, uri)
        try:
            await (self.hub.subscribe if on else self.hub.unsubscribe)(self.server, uri)
        except SynapseError as exc:
            self.output.value = Html('<span class="snb-err">{}</span>').format(exc)
        except Exception as exc:  # a background widget task: show and log
            logger.exception("%s %s failed", verb, uri)
            self.output.value = Html('<span class="snb-err">{}: {}</span>').format(type(exc).__name__, exc)
        else:
            if on:
                self.subscribed.add(uri)
                done = Html("✓ subscribed to <code>{}</code>; its updates show above").format(uri)
            else:
                self.subscribed.discard(uri)
                done = Html("✓ unsubscribed from <code>{}</code>").format(uri)
            self.output.value = Html('<span class="snb-ok">{}</span>').format(done)
        finally:
            self.subscribe_button.disabled = False
            self._label_subscribe()


class PromptBrowser(_Browser):
    """Prompts of one server; a text box per argument; Get shows the rendered prompt (`hub.get_prompt`)."""

    def __init__(self, hub: HubLike, server: str, spawn: Callable[[Any], Any], on_loop: Callable[..., None]) -> None:
        self.hub, self.server = hub, server
        self.prompts: dict[str, Any] = {}
        self.arguments: dict[str, w.Text] = {}
        self.argument_box = w.VBox()
        super().__init__("Get", "comment", spawn, on_loop)
        self.children = (self.listing, self.controls, self.argument_box, self.output)
        self.choice.observe(lambda _c: on_loop(self._chosen), "value")

    def show(self, prompts: Sequence[Any]) -> None:
        self.prompts = {str(_get(p, "name")): p for p in prompts}
        self.offer([(name, name) for name in self.prompts])
        self._chosen()

    def _chosen(self) -> None:
        prompt = self.prompts.get(str(self.choice.value))
        self.arguments = {}
        rows = []
        for arg in (_get(prompt, "arguments") or ()) if prompt is not None else ():
            name = str(_get(arg, "name"))
            box = w.Text(placeholder=str(_get(arg, "description") or ""), layout=w.Layout(width="320px"))
            self.arguments[name] = box
            star = Html(' <span class="snb-req">*</span>') if _get(arg, "required") else ""
            label = Html("<b>{}</b>{}").format(name, star)
            rows.append(w.HBox([w.HTML(label, layout=w.Layout(width="150px")), box]))
        self.argument_box.children = tuple(rows)

    def _clicked(self) -> None:
        name = self.choice.value
        if not name:
            return
        prompt = self.prompts.get(str(name))
        required = {str(_get(a, "name")) for a in (_get(prompt, "arguments") or ()) if _get(a, "required")}
        missing = [n for n in sorted(required) if not self.arguments.get(n, w.Text()).value]
        if missing:
            self.output.value = Html('<span class="snb-err">required: {}</span>').format(", ".join(missing))
            return
        args = {k: box.value for k, box in self.arguments.items() if box.value}
        self.spawn(self._show(f"fetching {name}", lambda: self.hub.get_prompt(self.server, name, args), prompt_html))
