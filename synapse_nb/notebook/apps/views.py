"""AppViews: the MCP Apps Views of one kernel: built for a UI tool's call, shown in the cell, closed on unload.

`open` reads the tool's `ui://` resource through the hub (`hub.read_ui`: MIME-checked and cached there),
builds the AppView widget with the call's input and result, its KernelAppHost, and the AppCompanion shown
under it (approval buttons, the turns its messages start). Where a UI tool's result appears (`%mcp call`,
the tool block of a `%%synapse` turn, the inspector's Call, a background run) the caller shows the pair.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ...errors import SynapseError
from ...types import ToolResult, ToolSpec
from ..output.live import Publisher
from ..output.markup import Html
from ..turns.render import Rest
from .context import ModelContexts
from .kernel_host import KernelAppHost
from .saved_copy import SnapshotRefresh, saved_copy
from .ui import resource_uri, tool_wire, wire_result
from .view_tools import ViewCalls, ViewTools

if TYPE_CHECKING:
    from ...agent.approval import ApprovalPolicy
    from ...mcp_client.hub import McpHub
    from ...protocols import ApprovalCallback
    from ..kernel.runner import Runner
    from ..recording.manual import ManualCalls
    from ..recording.router import EventRouter
    from ..sessions import Sessions
    from .companion import AppCompanion
    from .view import AppView

__all__ = ["AppViews", "OpenedView", "ViewTurn"]


class ViewTurn(Protocol):
    """Starts a turn for a View's `ui/message` (the command layer's `commands/ask.py: view_turn`): the agent in
    `session` answers `text` with `model` (None: the kernel's), shown through `publish`, approvals asked by `ask`.
    Raises UsageError when it cannot start (a busy session)."""

    def __call__(self, session: str, text: str, *, model: str | None, publish: Publisher,
                 ask: ApprovalCallback) -> asyncio.Task[Any]: ...

logger = logging.getLogger("synapse_nb.notebook")


class OpenedView:
    """A View and what shows under it (its companion holds it), as the one output a cell shows (`publish`)."""

    def __init__(self, view: AppView, companion: AppCompanion) -> None:
        self.view = view
        self.companion = companion
        self._shown: tuple[Publisher, str] | None = None  # where its snapshot was shown last, and its display id
        self._refresh: SnapshotRefresh | None = None

    def bundles(self) -> list[dict[str, Any]]:
        """Two outputs: the View's saved copy with its text fallback as a snapshot (what a notebook opened again
        later shows in JupyterLab and Notebook 7, apps/saved_copy.py; GitHub or nbviewer show the text), then the
        companion widget holding the View (widgets/_snapshot.py swaps them while the widget lives)."""
        from ..widgets._snapshot import snapshot_outputs  # the widgets package imports ipywidgets: not at %load_ext

        found = dict(self.companion._repr_mimebundle_() or {})
        text = str(found.get("text/plain", ""))
        fallback = Html('<pre class="snb-pre snb-view-fallback">{}</pre>').format(text)
        return snapshot_outputs(found, saved_copy(self.view, fallback), text)

    def publish(self, publish: Publisher, display_id: str | None = None, *, update: bool = False) -> None:
        """Show it as new outputs through `publish` (the kernel port's, or a turn's); with `display_id`,
        `update` shows it again in those outputs (its text fallback once the result came): the snapshot's
        is `snapshot_id(display_id)`. The snapshot is taken again in place while the user works in the View."""
        import uuid

        from ..widgets._snapshot import snapshot_id

        bundles = self.bundles()
        snapshot = snapshot_id(display_id if display_id is not None else uuid.uuid4().hex)
        for n, bundle in enumerate(bundles):
            last = n == len(bundles) - 1
            publish(bundle, display_id if last else snapshot, update)
        if len(bundles) > 1:
            self._shown = (publish, snapshot)
            if self._refresh is None:
                self._refresh = SnapshotRefresh(self.view, self._snapshot_again)

    def _snapshot_again(self) -> None:
        if self._shown is not None:
            publish, snapshot = self._shown
            publish(self.bundles()[0], snapshot, True)


class AppViews:
    """The kernel's Views (weakly held: a View whose output is gone may be collected) and the View context
    each session's next turn gets (`contexts`)."""

    def __init__(
        self, *, hub: Callable[[], McpHub], manual: ManualCalls, router: EventRouter, runner: Runner,
        sessions: Sessions, policy: Callable[[], ApprovalPolicy],
    ) -> None:
        """The parts a View uses: the hub (its `ui://` resource, resources, logs; built on first use), the
        manual calls (its tool calls, recorded), the router (its requests, recorded), the runner, the sessions
        (the current one) and the kernel's approval policy. `start_turn`, the command layer's, starts the turns
        its messages ask for (None: a message is refused)."""
        self._hub = hub
        self._manual = manual
        self._router = router
        self._runner = runner
        self._sessions = sessions
        self._policy = policy
        self.start_turn: ViewTurn | None = None
        self.contexts = ModelContexts()
        self._views: list[weakref.ref[AppView]] = []  # in the order they opened
        self.calls = ViewCalls(router, self._session_id)  # Python's calls of the Views' own tools
        self.tools = ViewTools(lambda: self.views)  # the Views' own tools, offered to each turn's model
        self.last: OpenedView | None = None  # the View opened last (for the cell that asked, and tests)
        self._turns: set[asyncio.Task[Any]] = set()

    @staticmethod
    def has_view(spec: ToolSpec) -> bool:
        return resource_uri(spec) is not None

    async def open(
        self, spec: ToolSpec, arguments: Mapping[str, Any], result: ToolResult | None, *,
        session: str | None = None, policy: ApprovalPolicy | None = None, model: str | None = None,
        rest: Rest | None = None,
    ) -> OpenedView | None:
        """The View of `spec`'s call (None when the tool has no View, or its resource cannot be read: then
        a warning is logged and the call's text result stands alone). Its messages start turns in `session`
        with `model` (None: the kernel's model), approved under `policy` (None: the kernel's); `rest` says
        where the whole result is when the text fallback is capped (None: the `%mcp call` cell's value)."""
        uri = resource_uri(spec)
        if uri is None or spec.server is None:
            return None
        from .companion import AppCompanion
        from .downloads import Downloads
        from .policy import CspError
        from .view import AppView

        try:
            hub = self._hub()
            resource = await hub.read_ui(spec.server, uri)
            companion = AppCompanion()
            session = session or self._sessions.current
            host = KernelAppHost(
                hub, self._manual, self._router, self.contexts, server=spec.server, resource_uri=uri,
                session=session, policy=policy if policy is not None else self._policy(), ask=companion.ask,
                on_message=lambda text: self._message_turn(companion, session, model, text),
                downloads=Downloads(Path.cwd(), companion.ask_file, companion.say),
                tool=spec.original_name or spec.name,
            )
            view = AppView(
                host, server=spec.server, tool=tool_wire(spec), resource_uri=uri, html=resource.html,
                resource_meta=_resource_meta(resource), tool_input=dict(arguments),
                tool_result=wire_result(result) if result is not None else None, runner=self._runner,
                rest=rest,
            )
            view.calls = self.calls
            companion.hold(view)
        except (SynapseError, CspError) as exc:  # the call's result still shows; the View is what failed
            logger.warning("the view %s of %s could not be opened: %s", uri, spec.name, exc)
            return None
        self._views = [*(r for r in self._views if r() is not None), weakref.ref(view)]
        self.last = OpenedView(view, companion)
        return self.last

    async def _message_turn(self, companion: AppCompanion, session: str, model: str | None, text: str) -> bool:
        """`ui/message`: a turn of the agent in `session` with the View's text as the prompt, shown under it."""
        from IPython.core.error import UsageError

        if self.start_turn is None:
            return False
        companion.publish({"text/plain": f"message from the view: {text}",
                           "text/markdown": Html("> *message from the view:* {}").format(_quote(text))}, None, False)
        try:
            task = self.start_turn(session, text, model=model, publish=companion.publish, ask=companion.ask)
        except UsageError as exc:
            companion.publish({"text/plain": f"the message did not start a turn: {exc}"}, None, False)
            return False
        self._turns.add(task)
        task.add_done_callback(self._turns.discard)
        return True

    @property
    def views(self) -> list[AppView]:
        """The Views still alive (not collected, not closed), in the order they opened."""
        alive = (r() for r in self._views)
        return [v for v in alive if v is not None and v.comm is not None]

    def _session_id(self) -> str:
        """The current session's id once it has a turn, else "" (as ManualCalls records a hand call)."""
        agent = self._sessions.get(self._sessions.current)
        return agent.session_id if agent is not None and agent.messages else ""

    def close_all(self) -> None:
        """Close every View (unload): the browser removes them, which tears each one down."""
        for view in self.views:
            try:
                view.close()
            except Exception:  # unload goes on whatever one widget does
                logger.exception("closing an app view failed")


def _resource_meta(resource: Any) -> dict[str, Any]:
    """The UiResource as the `_meta.ui` mapping AppView reads (csp, permissions, prefersBorder)."""
    meta: dict[str, Any] = {}
    for key, attr in (("csp", "csp"), ("permissions", "permissions")):
        value: Any = getattr(resource, attr, None)
        if value is not None and hasattr(value, "model_dump"):
            value = value.model_dump(by_alias=True, exclude_none=True)
        if isinstance(value, Mapping):
            meta[key] = dict(value)
    if getattr(resource, "prefers_border", None) is not None:
        meta["prefersBorder"] = bool(resource.prefers_border)
    return meta


def _quote(text: str) -> Html:
    return Html.escape(" ".join(text.split()))
