"""Tool approval in a blocking cell: the card above the input box, then y / n / a asked through the kernel port."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from ...types import ToolSpec
from ..kernel.port import KernelPort, NobodyCanAnswer
from ..turns.display import TurnDisplay
from ..turns.view import ToolCallView
from .approval_card import answered_card, approval_card, approval_prompt

__all__ = ["StdinApproval"]

_TRIES = 3


class StdinApproval:
    """Asks approval through the kernel's stdin channel (`KernelPort.ask`, which keeps the loop running);
    denies when no one can answer.

    Before the input box, a card (tool, server, arguments, a destructive badge, what y / n / a mean)
    is displayed above it, right above the tool's line (the turn's output is cut there, TurnDisplay.cut);
    the input line itself stays short. Once answered, the card shows the
    decision, so a saved notebook reads as what happened. An interrupt while the box is open cancels
    the turn (the ask is cancelled with the cell's task)."""

    def __init__(self, port: KernelPort, display: TurnDisplay) -> None:
        self.port = port
        self.display = display
        self.no_stdin = False

    async def __call__(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> str:
        if self.no_stdin:
            return "no"
        card_id = uuid.uuid4().hex
        # The card (and below it the input box, then its echo) goes right above the tool's line: the turn's
        # output is cut there, so what came before stays above and the tool's line goes on below the answer.
        self.display.cut(self._line(spec), lambda: self.port.publish(approval_card(spec, arguments), card_id, False))
        answer = await self._ask(spec)
        self.port.publish(answered_card(spec, answer), card_id, True)
        return answer

    def _line(self, spec: ToolSpec) -> int:
        """Where the tool's line is in the turn's view (the end when it has none yet)."""
        parts = self.display.view.parts
        asked = [i for i, p in enumerate(parts) if isinstance(p, ToolCallView) and p.name == spec.name and p.asking]
        named = [i for i, p in enumerate(parts)
                 if isinstance(p, ToolCallView) and p.name == spec.name and p.status == "streaming"]
        return (asked or named or [len(parts)])[0]

    async def _ask(self, spec: ToolSpec) -> str:
        question = approval_prompt(spec)
        for _ in range(_TRIES):
            try:
                reply = await self.port.ask(question)
            except NobodyCanAnswer:
                self.no_stdin = True
                self.display.note(
                    f"{spec.name} needs approval, but this frontend cannot answer prompts (no stdin), so it was "
                    "denied; use --approve auto to allow it, or --background to approve with buttons"
                )
                return "no"
            if reply is None:  # input ended, or the cell stopped waiting
                return "no"
            answer = reply.strip().lower()
            if answer in ("y", "yes"):
                return "yes"
            if answer in ("a", "always"):
                return "always"
            if answer in ("n", "no", ""):
                return "no"
            question = "please answer y (yes), n (no) or a (always): "
        return "no"
