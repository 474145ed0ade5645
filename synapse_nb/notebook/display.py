"""How a turn looks in the cell: a view built from agent events, rendered to Markdown and plain text.

`TurnView` folds events into answer text and tool-call blocks in the order they happened; `render`
gives a MIME bundle (Markdown with one-line `<details>` blocks per tool call, and a plain-text
rendering for non-HTML frontends); `TurnDisplay` publishes it through a `LiveOutput`, throttled while
text streams so that thousands of tokens do not flood the frontend.
"""

from __future__ import annotations

import asyncio
import html
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..events import (
    Event,
    LlmCallFinished,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnCancelled,
    TurnFailed,
    TurnFinished,
    TurnStarted,
)
from ..types import ContentBlock, Usage
from .output import Bundle, LiveOutput
from .result import parse_json_answer

__all__ = ["Format", "ToolCallView", "TurnDisplay", "TurnView", "render"]

Format = Literal["markdown", "text", "json", "code"]
Status = Literal["running", "finished", "failed", "cancelled"]

ARGS_PREVIEW = 80
RESULT_PREVIEW = 3000
IMAGE_PREVIEW_BYTES = 400_000
_GLYPH = {"running": "⏳", "ok": "✓", "error": "✗", "denied": "⊘", "finished": "✓", "failed": "✗", "cancelled": "⏹"}


@dataclass
class ToolCallView:
    """One tool call as shown: arguments, then status, result or error, and duration."""

    call_id: str
    name: str
    arguments: Mapping[str, Any]
    approval: str = "auto"
    status: Literal["running", "ok", "error", "denied"] = "running"
    result_text: str = ""
    error: str | None = None
    duration_ms: float | None = None
    images: tuple[ContentBlock, ...] = ()

    @property
    def call_line(self) -> str:
        """`name(arg=value, ...)`, cut to a short preview."""
        args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in self.arguments.items())
        if len(args) > ARGS_PREVIEW:
            args = args[: ARGS_PREVIEW - 1] + "…"
        return f"{self.name}({args})"

    @property
    def outcome(self) -> str:
        """`✓ 12 ms`, `✗ 3 ms`, `⊘ denied`, `⏳ running`."""
        if self.status == "running":
            return f"{_GLYPH['running']} running"
        if self.status == "denied":
            return f"{_GLYPH['denied']} denied"
        asked = f" · {self.approval}" if self.approval in ("approved", "always") else ""
        return f"{_GLYPH[self.status]} {_duration(self.duration_ms or 0.0)}{asked}"


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
    _started: float = field(default_factory=time.monotonic)

    def apply(self, event: Event) -> None:
        """Fold one event into the view."""
        if isinstance(event, TurnStarted):
            self._started = time.monotonic()
        elif isinstance(event, TextDelta):
            if self.parts and isinstance(self.parts[-1], str):
                self.parts[-1] += event.text
            else:
                self.parts.append(event.text)
        elif isinstance(event, LlmCallFinished):
            self.iterations += 1
            self.usage = self.usage + event.usage
        elif isinstance(event, ToolCallStarted):
            self.parts.append(ToolCallView(event.call.id, event.call.name, event.call.arguments, event.approval))
        elif isinstance(event, ToolCallFinished):
            self._finish_call(event)
        elif isinstance(event, TurnFinished):
            self._end("finished", event.iterations, event.usage, event.duration_ms)
            if not self.text and event.text:
                self.parts.append(event.text)
        elif isinstance(event, TurnFailed):
            self._end("failed", event.iterations, event.usage, event.duration_ms)
            self.error = f"{event.error_type}: {event.error}"
        elif isinstance(event, TurnCancelled):
            self._end("cancelled", event.iterations, event.usage, event.duration_ms)

    def _finish_call(self, event: ToolCallFinished) -> None:
        view = next((p for p in self.parts if isinstance(p, ToolCallView) and p.call_id == event.call.id), None)
        if view is None:
            view = ToolCallView(event.call.id, event.call.name, event.call.arguments, event.approval)
            self.parts.append(view)
        view.duration_ms = event.duration_ms
        if event.approval == "denied":
            view.status = "denied"
        else:
            view.status = "error" if event.is_error else "ok"
        if event.result is not None:
            view.result_text = event.result.text
            view.images = event.result.images
        view.error = event.error

    def _end(self, status: Status, iterations: int, usage: Usage, duration_ms: float) -> None:
        self.status = status
        self.iterations = max(self.iterations, iterations)
        self.usage = usage if usage.total_tokens else self.usage
        self.duration_ms = duration_ms

    @property
    def text(self) -> str:
        """The answer text so far (all text segments)."""
        return "".join(p for p in self.parts if isinstance(p, str))

    @property
    def elapsed_ms(self) -> float:
        return self.duration_ms if self.duration_ms is not None else (time.monotonic() - self._started) * 1000

    @property
    def footer(self) -> str:
        """Status, model, iterations, tokens, time, session: one line."""
        head = _GLYPH[self.status] + (" " + self.status if self.status != "finished" else "")
        if self.status == "running" and self.background:
            head += " in the background"
        model = f"{self.model} ({self.model_note})" if self.model_note else self.model
        items = [f"{head} {model}", _plural(self.iterations, "iteration")]
        if self.usage.total_tokens:
            items.append(
                f"{self.usage.total_tokens} tokens ({self.usage.input_tokens} in, {self.usage.output_tokens} out)"
            )
        if self.status != "running":
            items.append(_duration(self.elapsed_ms))
        if self.session:
            items.append(f"session {self.session}")
        return " · ".join(items)


def render(view: TurnView) -> Bundle:
    """The MIME bundle of the view: Markdown (unless --format text) and plain text."""
    bundle: Bundle = {"text/plain": _plain(view)}
    if view.format != "text":
        bundle["text/markdown"] = _markdown(view)
    return bundle


def _markdown(view: TurnView) -> str:
    blocks: list[str] = []
    for part in view.parts:
        if isinstance(part, ToolCallView):
            blocks.append(_tool_html(part))
        elif part.strip():
            blocks.append(_close_fence(part.strip("\n")) if view.status == "running" else part.strip("\n"))
    if view.format == "json" and view.status == "finished":
        blocks = [b for b in blocks if b.startswith("<details")] + [_json_block(view.text)]
    if view.status == "running" and not any(isinstance(p, str) and p.strip() for p in view.parts):
        blocks.append("*thinking…*")
    blocks.extend(f"> {html.escape(note)}" for note in view.notes)
    if view.error:
        blocks.append(f"<pre style=\"color: #b00\">{_one_line_pre(view.error)}</pre>")
    blocks.append(f"<sub>{html.escape(view.footer)}</sub>")
    return "\n\n".join(blocks)


def _plain(view: TurnView) -> str:
    lines: list[str] = []
    for part in view.parts:
        if isinstance(part, ToolCallView):
            lines.append(f"[tool] {part.call_line} {part.outcome}")
            detail = part.error or part.result_text
            if detail:
                first = detail.strip().splitlines()[0] if detail.strip() else ""
                lines.append("       → " + (first[:100] + "…" if len(first) > 100 else first))
        elif part.strip():
            lines.append(part.strip("\n"))
    lines.extend(f"note: {note}" for note in view.notes)
    if view.error:
        lines.append(f"error: {view.error}")
    lines.append(f"-- {view.footer}")
    return "\n".join(lines)


def _tool_html(call: ToolCallView) -> str:
    """One tool call as a single-line `<details>` block (one line, so Markdown keeps it one HTML block)."""
    summary = f"🔧 <code>{html.escape(call.call_line)}</code> {html.escape(call.outcome)}"
    body = [f"<b>arguments</b><pre>{_one_line_pre(_arguments_text(call.arguments) or '(none)')}</pre>"]
    if call.error:
        body.append(f"<b>error</b><pre style=\"color: #b00\">{_one_line_pre(call.error)}</pre>")
    elif call.status != "running":
        text = call.result_text
        if len(text) > RESULT_PREVIEW:
            text = text[:RESULT_PREVIEW] + f"\n… {len(text) - RESULT_PREVIEW} more characters in _synapse.tool_calls"
        label = "result (error)" if call.status == "error" else "result"
        body.append(f"<b>{label}</b><pre>{_one_line_pre(text)}</pre>")
        for image in call.images:
            if image.data and len(image.data) <= IMAGE_PREVIEW_BYTES:
                body.append(f'<img src="data:{image.mime_type or "image/png"};base64,{image.data}"/>')
    return f"<details><summary>{summary}</summary>{''.join(body)}</details>"


def _arguments_text(arguments: Mapping[str, Any]) -> str:
    """`name: value` lines; strings as written (a SQL query keeps its lines), other values as JSON."""
    lines: list[str] = []
    for name, value in arguments.items():
        if isinstance(value, str):
            text = value
        else:
            indent = 2 if isinstance(value, dict | list) else None
            text = json.dumps(value, ensure_ascii=False, default=str, indent=indent)
        pad = "\n" + " " * (len(name) + 2)
        lines.append(f"{name}: {pad.join(text.splitlines()) if text else repr(text)}")
    return "\n".join(lines)


def _json_block(text: str) -> str:
    value, ok = parse_json_answer(text)
    if not ok:
        return text + "\n\n> the answer is not valid JSON"
    return "```json\n" + json.dumps(value, indent=2, ensure_ascii=False) + "\n```"


def _one_line_pre(text: str) -> str:
    return html.escape(text).replace("\n", "&#10;")


def _close_fence(text: str) -> str:
    """A streamed answer cut inside a code block: close it, so the rest of the view renders normally."""
    fences = sum(1 for line in text.splitlines() if line.lstrip().startswith("```"))
    return text + "\n```" if fences % 2 else text


def _duration(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


class TurnDisplay:
    """Publishes a TurnView as events arrive; an EventSink (quick, never raises on render).

    Text is throttled to one update per `interval`, except that the first piece of each answer
    segment shows at once (time to first token is what a user feels), and a held update is flushed
    by a timer on the running loop, so a pause in the stream never hides text that has arrived.
    """

    def __init__(
        self, view: TurnView, output: LiveOutput, *, interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.view = view
        self.output = output
        self.interval = interval
        self._clock = clock
        self._last = float("-inf")
        self._dirty = False
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self.output.start(render(self.view))
        self._last = self._clock()

    def __call__(self, event: Event) -> None:
        continues_text = isinstance(event, TextDelta) and bool(self.view.parts) and isinstance(
            self.view.parts[-1], str
        )
        self.view.apply(event)
        if continues_text:
            wait = self.interval - (self._clock() - self._last)
            if wait > 0:
                self._dirty = True
                self._flush_later(wait)
                return
        self.refresh()

    def _flush_later(self, wait: float) -> None:
        if self._timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (a synchronous caller): the next event or the end shows it
        self._timer = loop.call_later(wait, self._flush)

    def _flush(self) -> None:
        self._timer = None
        if self._dirty:
            self.refresh()

    def refresh(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._dirty = False
        self._last = self._clock()
        self.output.update(render(self.view))

    def note(self, text: str) -> None:
        """Add a line to the view (approval denied for lack of stdin, history unavailable, ...)."""
        self.view.notes.append(text)
        self.refresh()

    def finish(self) -> None:
        """Show the final state (the view's status is set by the last event)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.output.finish(render(self.view))
