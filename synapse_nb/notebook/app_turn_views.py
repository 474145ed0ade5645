"""AppTurnViews: a `%%synapse` turn's EventSink that shows the View of each UI tool the model called in the
turn's tool block, the answer going on below it (TurnDisplay.cut)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..errors import SynapseError
from ..events import Event, ToolCallFinished
from ..types import ToolSpec
from .app_ui import resource_uri
from .render import TURN_REST

if TYPE_CHECKING:
    from ..agent.approval import ApprovalPolicy
    from .display import TurnDisplay
    from .state import SynapseState

__all__ = ["AppTurnViews"]

logger = logging.getLogger("synapse_nb.notebook")


class AppTurnViews:
    """Opens the View of every UI tool call that finished in the turn; `settle()` (awaited before the turn's
    display finishes) waits for the Views still being opened, so each lands where its call is."""

    def __init__(
        self, state: SynapseState, display: TurnDisplay, *, session: str, policy: ApprovalPolicy, model: str,
    ) -> None:
        """`session`, `policy` and `model` are the turn's: the Views' calls and messages keep to them."""
        self.state = state
        self.model = model
        self.display = display
        self.session = session
        self.policy = policy
        self.opened: list[Any] = []
        self._pending: list[asyncio.Task[None]] = []

    def _spec(self, name: str) -> ToolSpec | None:
        if not self.state.has_hub:
            return None
        try:
            return self.state.hub.tool(name)
        except SynapseError:
            return None

    def __call__(self, event: Event) -> None:
        if not isinstance(event, ToolCallFinished) or event.result is None or event.server is None:
            return
        spec = self._spec(event.call.name)
        if spec is None or resource_uri(spec) is None:
            return
        index = len(self.display.view.parts)  # the call's block is shown by now: the View goes right below
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._pending.append(loop.create_task(self._show(spec, event, index)))

    async def _show(self, spec: ToolSpec, event: ToolCallFinished, index: int) -> None:
        opened = await self.state.apps.open(spec, event.call.arguments, event.result, session=self.session,
                                            policy=self.policy, model=self.model, rest=TURN_REST)
        if opened is None:
            return
        self.opened.append(opened)
        self.display.cut(index, lambda: opened.publish(self.display.output.publisher))

    async def settle(self) -> None:
        """Wait for the Views being opened (each bounded by the hub's request timeout)."""
        pending, self._pending = self._pending, []
        for task in pending:
            try:
                await task
            except Exception:  # a View that fails to open leaves the turn's answer as it is
                logger.exception("showing a tool's view failed")
