"""What a %%synapse cell knows about its turn: answer text and tool-call blocks, folded from agent events."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from ...events import (
    Event,
    LlmCallFinished,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    TurnCancelled,
    TurnFailed,
    TurnFinished,
    TurnStarted,
)
from ...pricing import usd as format_usd
from ...tables import Table, table_of
from ...types import ToolResult, Usage

__all__ = ["FORMATS", "CallStatus", "Format", "Status", "ToolCallView", "TurnView", "duration", "money",
           "progress_fraction", "size_text"]

Format = Literal["markdown", "text", "json", "code"]
FORMATS: tuple[Format, ...] = get_args(Format)
"""How a turn's answer is shown; `--format`, `SynapseMagics.format` and their help take the choices from here."""
Status = Literal["running", "finished", "failed", "cancelled", "budget_exceeded"]
CallStatus = Literal["streaming", "running", "ok", "error", "denied", "cancelled"]

ARGS_PREVIEW = 80

GLYPH: Mapping[str, str] = {
    # Glyphs DejaVu Sans has (no emoji font needed): Docker images and JupyterHub often lack one.
    "ok": "✓", "finished": "✓", "error": "✗", "failed": "✗", "denied": "⊘", "cancelled": "■",
    "running": "…", "streaming": "…", "budget_exceeded": "⊘",
}


def duration(ms: float) -> str:
    """`12 ms`, `3.2 s`: what the cell shows (rounded; the exact value is in `_synapse.tool_calls`)."""
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def size_text(n: int) -> str:
    """`812 B`, `4.2 KB`, `4.3 MB`: a size in bytes as the cell shows it (1024-based)."""
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def progress_fraction(progress: float | None, total: float | None) -> float | None:
    """Progress as 0..1 when the server gave a total, else None."""
    if progress is None or not total:
        return None
    return max(0.0, min(1.0, progress / total))


@dataclass
class ToolCallView:
    """One tool call as shown: arguments (streamed first), status, progress, result or error, duration."""

    call_id: str
    name: str
    arguments: Mapping[str, Any]
    approval: str = "auto"
    status: CallStatus = "running"
    result: ToolResult | None = None
    error: str | None = None
    duration_ms: float | None = None
    server: str | None = None
    streamed: str = ""  # the arguments' JSON as it arrives, while `status` is "streaming"
    index: int | None = None  # position in the model's reply while streaming
    received: bool = False  # the model's reply ended: the arguments are whole, the call waits (e.g. approval)
    started: float | None = None  # monotonic time the call started running
    progress: float | None = None
    total: float | None = None
    progress_message: str | None = None
    asking: bool = False  # the user is asked to approve this call now
    held: str | None = None  # the variable the kernel holds the whole result in (the model got a summary)
    _derived: tuple[ToolResult | None, dict[str, Any]] = (None, {})  # what was read from `result`, by name

    def derived(self, name: str, make: Callable[[ToolResult], Any]) -> Any:
        """`make(result)`, made once per result: the display refreshes many times while a turn runs, and reading
        a 50,000-row result (its table, its JSON indented) takes a second each time."""
        assert self.result is not None
        if self._derived[0] is not self.result:
            self._derived = (self.result, {})
        made = self._derived[1]
        if name not in made:
            made[name] = make(self.result)
        return made[name]

    @property
    def table(self) -> Table | None:
        """The table the result holds (tables.py), read once per result."""
        return None if self.result is None else self.derived("table", table_of)

    @property
    def result_text(self) -> str:
        return self.result.text if self.result is not None else ""

    @property
    def call_line(self) -> str:
        """`name(arg=value, ...)`, cut to a short preview; while the arguments arrive, the JSON so far as
        `name({"steps": 4…` (no closing parenthesis: a part must not read as the whole call)."""
        arguments = self.arguments
        if self.status == "streaming":
            whole = _json_object(self.streamed or ("{}" if self.received else ""))
            if whole is None:
                return f"{self.name}({self.streamed[: ARGS_PREVIEW - 1]}…"
            arguments = whole
        args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in arguments.items())
        if len(args) > ARGS_PREVIEW:
            args = args[: ARGS_PREVIEW - 1] + "…"
        return f"{self.name}({args})"

    def outcome(self, now: float) -> str:
        """`✓ 12 ms`, `✗ 3 ms`, `⊘ denied`, `■ cancelled`, `running 3.2 s`, `receiving arguments`."""
        if self.status == "streaming" and self.asking:
            return "waiting for your approval"
        if self.status == "streaming":
            return "waiting to run" if self.received else "receiving arguments"
        if self.status == "running":
            return "running" + (f" {duration((now - self.started) * 1000)}" if self.started is not None else "")
        if self.status == "denied":
            return f"{GLYPH['denied']} denied"
        if self.status == "cancelled":
            return f"{GLYPH['cancelled']} cancelled after {duration(self.duration_ms or 0.0)}"
        asked = f" · {self.approval}" if self.approval in ("approved", "always") else ""
        return f"{GLYPH[self.status]} {duration(self.duration_ms or 0.0)}{asked}"

    @property
    def fraction(self) -> float | None:
        """Progress as 0..1 when the server gave a total, else None."""
        return progress_fraction(self.progress, self.total)


def _json_object(text: str) -> dict[str, Any] | None:
    """The streamed arguments once they are a whole JSON object, else None (cut short, or not an object)."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


@dataclass
class TurnView:
    """Everything the cell shows about one turn, updated event by event."""

    model: str
    model_note: str | None = None
    session: str | None = None
    format: Format = "markdown"
    parts: list[str | ToolCallView] = field(default_factory=list)
    status: Status = "running"
    iterations: int = 0
    usage: Usage = field(default_factory=Usage)
    duration_ms: float | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    background: bool = False
    footer_elsewhere: bool = False  # a background run's controls carry the footer (one status line, not two)
    first: int = 0  # the parts before it were shown above a View (the turn's output was cut there)
    segment: bool = False  # a cut-off head: only its parts render (no activity, notes or footer)
    error_raised: bool = False  # a blocking cell ends with the turn's error itself: the view does not repeat it
    clock: Callable[[], float] = time.monotonic
    asking: str | None = None  # the tool the user is asked to approve now (StdinApproval, the run's buttons)
    user_wait: Callable[[], float | None] | None = None  # when the open stdin question was asked (KernelPort)
    _started: float = field(default=0.0)
    _waiting_since: float = field(default=0.0)
    _asked_at: float = field(default=0.0)

    def __post_init__(self) -> None:
        self._started = self._waiting_since = self.clock()

    def apply(self, event: Event) -> None:
        """Fold one event into the view."""
        if isinstance(event, TurnStarted):
            self._started = self._waiting_since = self.clock()
        elif isinstance(event, TextDelta):
            if self.parts and isinstance(self.parts[-1], str):
                self.parts[-1] += event.text
            else:
                self.parts.append(event.text)
        elif isinstance(event, ToolCallArgumentsDelta):
            self._stream_arguments(event)
        elif isinstance(event, LlmCallFinished):
            for part in self.parts:
                if isinstance(part, ToolCallView) and part.status == "streaming":
                    part.received = True
            self.iterations += 1
            self.usage = self.usage + event.usage
            self._waiting_since = self.clock()
        elif isinstance(event, ToolCallStarted):
            view = self._claim(event.call.id, event.call.name)
            view.call_id, view.name, view.arguments = event.call.id, event.call.name, event.call.arguments
            view.approval, view.server, view.status, view.started = (
                event.approval, event.server, "running", self.clock(),
            )
        elif isinstance(event, ToolCallProgress):
            running = self.call(event.call_id)
            if running is not None:
                running.progress, running.total = event.progress, event.total
                running.progress_message = event.message or running.progress_message
        elif isinstance(event, ToolCallFinished):
            self._finish_call(event)
        elif isinstance(event, TurnFinished):
            self._end("finished", event.iterations, event.usage, event.duration_ms)
            if not self.text and event.text:
                self.parts.append(event.text)
        elif isinstance(event, TurnFailed) and event.error_type == "BudgetExceededError":
            self._end("budget_exceeded", event.iterations, event.usage, event.duration_ms)
            self.error = event.error  # one line that says which budget and what was spent
        elif isinstance(event, TurnFailed):
            self._end("failed", event.iterations, event.usage, event.duration_ms)
            self.error = f"{event.error_type}: {event.error}"
        elif isinstance(event, TurnCancelled):
            self._end("cancelled", event.iterations, event.usage, event.duration_ms)

    def ask_approval(self, name: str) -> None:
        """The user is asked to approve a call of `name`: its line and the activity say so until answered."""
        self.asking, self._asked_at = name, self.clock()
        waiting = [p for p in self.parts if isinstance(p, ToolCallView) and p.status == "streaming" and p.name == name]
        if waiting and not any(p.asking for p in waiting):
            waiting[0].asking = True

    def approval_answered(self) -> None:
        """The approval question was answered (or given up): the turn goes on."""
        self.asking = None
        self._waiting_since = self.clock()
        for part in self.parts:
            if isinstance(part, ToolCallView):
                part.asking = False

    def call(self, call_id: str) -> ToolCallView | None:
        return next((p for p in self.parts if isinstance(p, ToolCallView) and p.call_id == call_id), None)

    def _stream_arguments(self, event: ToolCallArgumentsDelta) -> None:
        view = next(
            (p for p in self.parts
             if isinstance(p, ToolCallView) and p.status == "streaming" and not p.received and p.index == event.index),
            None,
        )
        if view is None:
            view = ToolCallView(event.call_id or "", event.name or "tool", {}, status="streaming", index=event.index)
            self.parts.append(view)
        if event.call_id and not view.call_id:
            view.call_id = event.call_id
        if event.name and view.name == "tool":
            view.name = event.name
        view.streamed += event.arguments_delta

    def _claim(self, call_id: str, name: str) -> ToolCallView:
        """The block a started call goes into: its streamed block (by id, else the first of that name), or a new one."""
        streaming = [p for p in self.parts if isinstance(p, ToolCallView) and p.status == "streaming"]
        view = next((p for p in streaming if p.call_id == call_id), None) or next(
            (p for p in streaming if p.name == name), None
        )
        if view is None:
            view = ToolCallView(call_id, name, {})
            self.parts.append(view)
        view.index = None
        return view

    def _finish_call(self, event: ToolCallFinished) -> None:
        view = self.call(event.call.id)
        if view is None:
            view = self._claim(event.call.id, event.call.name)
            view.call_id, view.arguments, view.server = event.call.id, event.call.arguments, event.server
        view.approval = event.approval
        view.duration_ms = event.duration_ms
        if event.approval == "denied":
            view.status = "denied"
        elif event.error == "cancelled" and event.result is None:
            view.status = "cancelled"
        else:
            view.status = "error" if event.is_error else "ok"
        view.result = event.result
        view.error = event.error
        view.held = event.held
        self._waiting_since = self.clock()

    def _end(self, status: Status, iterations: int, usage: Usage, duration_ms: float) -> None:
        self.status = status
        self.iterations = max(self.iterations, iterations)
        self.usage = usage if usage.total_tokens else self.usage
        self.duration_ms = duration_ms
        # arguments that never became a call (the stream broke off): nothing ran, so nothing to show
        self.parts = [p for p in self.parts if not (isinstance(p, ToolCallView) and p.status == "streaming")]
        for part in self.parts:
            if isinstance(part, ToolCallView) and part.status == "running":
                part.status = "cancelled" if status == "cancelled" else "error"

    @property
    def shown_error(self) -> str | None:
        """The error line the view shows: none for a failed blocking turn, whose cell ends with that error
        (shown once, as what it is), else the error (or the budget line) if any."""
        if self.status == "failed" and self.error_raised:
            return None
        return self.error

    @property
    def text(self) -> str:
        """The answer text so far (all text segments)."""
        return "".join(p for p in self.parts if isinstance(p, str))

    @property
    def elapsed_ms(self) -> float:
        return self.duration_ms if self.duration_ms is not None else (self.clock() - self._started) * 1000

    @property
    def running_calls(self) -> list[ToolCallView]:
        return [p for p in self.parts if isinstance(p, ToolCallView) and p.status == "running"]

    @property
    def failed_calls(self) -> list[ToolCallView]:
        """The tool calls that ended in an error (not the denied or cancelled ones: the user's own doing)."""
        return [p for p in self.parts if isinstance(p, ToolCallView) and p.status == "error"]

    @property
    def tone(self) -> str:
        """The footer's colour key: the status, or `tool_failed` for a finished turn with a failed tool call."""
        return "tool_failed" if self.status == "finished" and self.failed_calls else self.status

    @property
    def activity(self) -> str | None:
        """What the turn waits for now, with a ticking time (`running demo__sleep · 3.2 s`), or None while
        the answer streams or after the end."""
        if self.status != "running":
            return None
        now = self.clock()
        if self.asking is not None:
            return f"waiting for your approval of {self.asking} · {duration((now - self._asked_at) * 1000)}"
        asked = self.user_wait() if self.user_wait is not None else None
        if asked is not None:  # a server's form or link, asked in the input box while a tool runs
            return f"waiting for your answer · {duration((now - asked) * 1000)}"
        running = self.running_calls
        if running:
            since = min(c.started or now for c in running)
            names = ", ".join(c.name for c in running[:3])
            if len(running) > 3:
                names += f" and {len(running) - 3} more"
            return f"running {names} · {duration((now - since) * 1000)}"
        streaming = [p for p in self.parts if isinstance(p, ToolCallView) and p.status == "streaming"]
        if streaming and not streaming[-1].received:
            return f"the model is writing the arguments of {streaming[-1].name}"
        if streaming:
            return f"about to run {', '.join(p.name for p in streaming)}"
        if self.parts and isinstance(self.parts[-1], str) and self.parts[-1].strip():
            return None  # the answer is streaming: the text itself shows progress
        return f"waiting for the model · {duration((now - self._waiting_since) * 1000)}"

    @property
    def footer(self) -> str:
        """Status, model, iterations, tokens, cost, time, session: one line."""
        head = GLYPH[self.status] + (" " + self.status.replace("_", " ") if self.status != "finished" else "")
        if self.status == "running":
            head = "running in the background" if self.background else "running"
        model = f"{self.model} ({self.model_note})" if self.model_note else self.model
        items = [f"{head} {model}".rstrip()]  # a placeholder shown before the model is known names none
        if self.iterations or self.status != "running":  # "running · 0 iterations" told nothing
            items.append(_plural(self.iterations, "iteration"))
        failed, calls = self.failed_calls, [p for p in self.parts if isinstance(p, ToolCallView)]
        if self.status == "finished" and failed:  # not a plain ✓: the answer was written around a failure
            items[0] = f"{GLYPH['error']} finished, {len(failed)} of {_plural(len(calls), 'tool call')} failed {model}"
        elif failed:
            items.insert(1, f"{len(failed)} of {_plural(len(calls), 'tool call')} failed")
        if self.usage.total_tokens:
            cached = f", {self.usage.cached_input_tokens} cached" if self.usage.cached_input_tokens else ""
            items.append(
                f"{self.usage.total_tokens} tokens ({self.usage.input_tokens} in{cached}, "
                f"{self.usage.output_tokens} out)"
            )
            if self.usage.cost_usd != 0:  # local models cost nothing: no cost to show
                items.append(money(self.usage.cost_usd))
        if self.status != "running":
            items.append(duration(self.elapsed_ms))
        if self.session:
            items.append(f"session {self.session}")
        return " · ".join(items)


def money(usd: float | None) -> str:
    """A cost as shown: `$0.0123`, `$0.000012` (pricing.usd: never rounded to zero), `$0`, or `cost unknown`
    without a price (the footer leaves out a cost of 0)."""
    return "cost unknown" if usd is None else format_usd(usd)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")
