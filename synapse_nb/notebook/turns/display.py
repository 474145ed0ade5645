"""How a turn reaches the cell: `TurnDisplay` publishes a TurnView through a LiveOutput as events arrive.

Text is throttled so that thousands of tokens do not flood the frontend; everything else (a tool
call starting, its progress, the end of a model reply) shows at once. While the turn waits for a
tool or the model, a timer re-renders the view so the elapsed time ticks. The view itself lives in
view.py, its rendering in render.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable

from ...events import (
    Event,
    LlmCallFinished,
    MessageAdded,
    TextDelta,
    ToolCallArgumentsDelta,
    TurnCancelled,
    TurnFailed,
    TurnFinished,
)
from ..output.live import Bundle, LiveOutput
from ..output.markup import Html
from .render import render
from .view import Format, ToolCallView, TurnView, duration

__all__ = ["Format", "ToolCallView", "TurnDisplay", "TurnView", "render", "ticking"]

TICK = 0.25
"""Seconds between re-renders while the turn waits (the elapsed time of a running tool ticks)."""

SHOW_AFTER = 0.1
"""Seconds a command waits before `ticking` shows its live line: a call that ends sooner shows only its result
(no line flashing by, and no updates to send and empty again)."""


class TurnDisplay:
    """Publishes a TurnView as events arrive; an EventSink (quick, never raises on render).

    Text (and streamed tool arguments) is throttled to one update per `interval`, except that the
    first piece of each answer segment shows at once (time to first token is what a user feels); a
    held update is flushed by a timer on the running loop, so a pause in the stream never hides text,
    and at once when the model's reply ends, so the cell never waits on the throttle at the end.
    """

    def __init__(
        self, view: TurnView, output: LiveOutput, *, interval: float = 0.1, tick: float = TICK,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.view = view
        self.output = output
        self.interval = interval
        self.tick = tick
        self._clock = clock
        self._last = float("-inf")
        self._dirty = False
        self._timer: asyncio.Handle | None = None
        self._ticker: asyncio.TimerHandle | None = None
        # outputs above a cut whose parts still change, with what shows again below each at the end
        self._held: list[tuple[LiveOutput, TurnView, Callable[[bool], None]]] = []

    def start(self) -> None:
        self.output.start(render(self.view))
        self._last = self._clock()
        self._schedule_tick()

    def __call__(self, event: Event) -> None:
        continues = (
            isinstance(event, TextDelta) and bool(self.view.parts) and isinstance(self.view.parts[-1], str)
        ) or (isinstance(event, ToolCallArgumentsDelta) and self._streaming(event.index))
        self.view.apply(event)
        if isinstance(event, TurnFinished | TurnFailed | TurnCancelled | MessageAdded):
            return  # finish() shows the end at once; a message added changes nothing the view shows
        if isinstance(event, LlmCallFinished):
            self._dirty = True
            self._flush_soon()  # tool calls follow (each shows at once) or the turn ends (finish() shows it)
            return
        if continues:
            wait = self.interval - (self._clock() - self._last)
            if wait > 0:
                self._dirty = True
                self._flush_later(wait)
                return
        self.refresh()

    def _streaming(self, index: int) -> bool:
        """A block for the arguments of call `index` shows already (its first piece was not throttled)."""
        return any(
            isinstance(p, ToolCallView) and p.status == "streaming" and p.index == index for p in self.view.parts
        )

    def _loop(self) -> asyncio.AbstractEventLoop | None:
        try:
            return asyncio.get_running_loop()
        except RuntimeError:
            return None  # no loop (a synchronous caller): the next event or the end shows it

    def _flush_later(self, wait: float) -> None:
        if self._timer is not None:
            return
        loop = self._loop()
        if loop is not None:
            self._timer = loop.call_later(wait, self._flush)

    def _flush_soon(self) -> None:
        """Show what is held at the loop's next turn (at once without a loop), unless finish() comes first."""
        loop = self._loop()
        if loop is None:
            self.refresh()
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._timer = None
        if self._dirty:
            self.refresh()

    def _schedule_tick(self) -> None:
        """Re-render after `tick` while the view shows something waiting (a running tool, the model)."""
        if self._ticker is not None or self.output.finished or self.view.status != "running" or self.tick <= 0:
            return
        loop = self._loop()
        if loop is not None:
            self._ticker = loop.call_later(self.tick, self._on_tick)

    def _on_tick(self) -> None:
        self._ticker = None
        if self.output.finished or self.view.status != "running":
            return
        if self.view.activity is not None:
            self.refresh()
        else:
            self._schedule_tick()

    def refresh(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._dirty = False
        self._last = self._clock()
        for output, head, _reshow in self._held:
            output.update(render(head))
        self.output.update(render(self.view))
        self._schedule_tick()

    def cut(self, index: int, show: Callable[[], None], *, reshow: Callable[[bool], None] | None = None) -> None:
        """Make the parts before `index` (or before the first call among them still running) final in the
        current output, call `show` (it displays something, e.g. a tool's View, below them), and go on in a
        new output below it: the answer continues there. With `reshow`, the parts before `index` are still
        changing (a tool block whose arguments stream): their output keeps following them until the display
        finishes, which shows them as final outputs then, each followed by `reshow(in_place)` (it shows again
        what `show` showed live), so that a frontend that ignores display updates (nbval, a terminal) gets
        them in order; `in_place` when the outputs keep their final form where they are (a background run's),
        and so must what `show` showed."""
        view = self.view
        if self.output.finished or not view.first <= index <= len(view.parts):
            show()
            return
        if reshow is None:
            # a call still running above the cut (a sibling of the same reply) would stay frozen in its running
            # state in the final output above: cut above it instead, so it goes on below `show`'s output
            index = next((i for i in range(view.first, index) if _unsettled(view.parts[i])), index)
        head = TurnView(model=view.model, format=view.format, parts=list(view.parts[view.first:index]),
                        status="finished", segment=True)
        for handle in (self._timer, self._ticker):
            if handle is not None:
                handle.cancel()
        self._timer = self._ticker = None
        if reshow is not None:
            self.output.update(render(head))
            self._held.append((self.output, head, reshow))
        elif head.parts:
            self.output.finish(render(head))
        else:  # nothing above the cut: the output ends empty, what follows starts below `show`'s output
            self.output.clear()
        show()
        self.output = self.output.successor()
        view.first = index
        self.start()

    def note(self, text: str) -> None:
        """Add a line to the view (approval denied for lack of stdin, history unavailable, ...)."""
        self.view.notes.append(text)
        self.refresh()

    def finish(self) -> None:
        """Show the final state (the view's status is set by the last event)."""
        for handle in (self._timer, self._ticker):
            if handle is not None:
                handle.cancel()
        self._timer = self._ticker = None
        held, self._held = self._held, []
        for output, head, reshow in held:
            output.finish(render(head))
            reshow(output.keep)
        self.output.finish(render(self.view))


@contextlib.asynccontextmanager
async def ticking(
    output: LiveOutput, line: Callable[[str], str | Bundle], *, tick: float = TICK,
    clock: Callable[[], float] = time.monotonic, asked: Callable[[], float | None] | None = None,
    show_after: float | None = None, open_at_once: bool = False,
) -> AsyncIterator[Callable[[], None]]:
    """Show `line(elapsed)` in `output` (`calling demo.sleep … 3.2 s`, or a whole bundle) once the body has run
    `show_after` seconds (None: SHOW_AFTER), re-rendered every `tick` while it runs, for the commands that wait
    without a TurnView (`%mcp call`); the body gets a `refresh()` that shows it at once (a progress report).
    The output opens when the line first shows and is emptied at the end, whatever the end, as the command shows
    its own result: a body that ends before the line showed sends nothing at all (a quick `%mcp call` cell is
    then two messages lighter), and one that showed it leaves nothing either once the command's end clears it
    away (kernel/cell_outputs.py). Where that clearing cannot happen (a cell that shows a widget: an MCP Apps
    View), `open_at_once` opens it empty at the start, so the cell's outputs are the same however long it took.
    While `asked()` gives a time (a
    question in the input box, e.g. the server's form), the line says it waits for the user's answer, and
    since when."""
    started = clock()

    def bundle() -> Bundle:
        shown = line(duration((clock() - started) * 1000))
        since = asked() if asked is not None else None
        if since is None and isinstance(shown, dict):
            return shown
        text = shown.get("text/plain", "") if isinstance(shown, dict) else shown
        if since is not None:
            text = f"{text} · waiting for your answer · {duration((clock() - since) * 1000)}"
        return {"text/plain": text, "text/markdown": Html("*{}*").format(text)}

    def refresh() -> None:
        if not output.finished:
            output.start(bundle())  # opens it the first time, updates it after

    loop = asyncio.get_running_loop()
    timer: asyncio.TimerHandle | None = None

    def tick_now() -> None:  # a timer, not a task: nothing left to wait for at the end, however quick the body
        nonlocal timer
        refresh()
        timer = loop.call_later(tick, tick_now)

    if open_at_once:
        output.start()  # empty for now: a cell run again shows the same outputs however long it waited
    timer = loop.call_later(min(SHOW_AFTER if show_after is None else show_after, tick), tick_now)
    try:
        yield refresh
    finally:
        timer.cancel()
        output.clear()


def _unsettled(part: object) -> bool:
    """A tool call whose line still changes (its arguments stream or it runs)."""
    return isinstance(part, ToolCallView) and part.status in ("streaming", "running")
