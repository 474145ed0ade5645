"""Tool approval right above the tool's line: in a blocking cell a card above the input box, then y / n / a asked
through the kernel port; in a background run the same card with the run controls' buttons in it."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from ...types import ToolSpec
from ..kernel.port import KernelPort, NobodyCanAnswer
from ..turns.display import TurnDisplay
from ..turns.view import ToolCallView
from .approval_card import answered_card, approval_card, approval_prompt

__all__ = ["ButtonsApproval", "StdinApproval"]

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
        self.display.cut(_line(self.display, spec),
                         lambda: self.port.publish(approval_card(spec, arguments), card_id, False))
        answer = await self._ask(spec)
        self.port.publish(answered_card(spec, answer), card_id, True)
        return answer

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


class ButtonsApproval:
    """Asks approval in a background run: StdinApproval's card, right above the tool's line, with buttons in
    it (`controls.card`); the run's controls keep the queue, the status line and Stop. A server's form in a
    background run goes right above the tool's line too (NotebookAnswers._place): one place for what a run
    asks. Once answered (or the run stopped) the card shows the decision, as a plain output: a saved notebook
    reads as what happened."""

    def __init__(self, controls: Any, display: TurnDisplay) -> None:
        """`controls`: the run's RunControls (its `ask` and `card`)."""
        self.controls = controls
        self.display = display

    async def __call__(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> str:
        card_id = uuid.uuid4().hex
        asked = approval_card(spec, arguments, buttons=True)
        widget = self.controls.card(asked["text/html"])
        bundle = {**(widget._repr_mimebundle_() or {}), **asked}  # the widget's view, the card where none draws
        publish = self.display.output.publisher
        self.display.cut(_line(self.display, spec), lambda: publish(bundle, card_id, False))
        answer = "no"
        try:
            answer = str(await self.controls.ask(spec, arguments))
            return answer
        finally:
            publish(answered_card(spec, answer), card_id, True)
            widget.close()


def _line(display: TurnDisplay, spec: ToolSpec) -> int:
    """Where the tool's line is in the turn's view (the end when it has none yet)."""
    parts = display.view.parts
    asked = [i for i, p in enumerate(parts) if isinstance(p, ToolCallView) and p.name == spec.name and p.asking]
    named = [i for i, p in enumerate(parts)
             if isinstance(p, ToolCallView) and p.name == spec.name and p.status == "streaming"]
    return (asked or named or [len(parts)])[0]
