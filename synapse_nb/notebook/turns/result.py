"""What a %%synapse cell leaves behind: the result of a turn (`_synapse`), and the handle of a background run."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...events import ToolCallFinished
from ...types import Message, ToolResult, Usage
from ..output.markup import Html

if TYPE_CHECKING:
    import pandas as pd

    from ...agent.result import TurnResult
    from ..kernel.runner import Runner

__all__ = [
    "BackgroundRun", "SynapseResult", "code_blocks", "first_code_block", "parse_json_answer", "python_block",
    "result_frame",
]

TOOL_CALL_COLUMNS = (
    "tool_call_id", "server", "tool", "name", "arguments", "approval", "is_error", "error", "result_text",
    "started_at", "duration_ms", "result",
)
LOCAL_SERVER = "python"
"""The `server` shown for native tools (`@synapse_nb.tool` functions run in the kernel)."""


def result_frame(result: ToolResult) -> pd.DataFrame:
    """A tool's tabular or structured result as a DataFrame (shared by `_synapse.tool_calls.result_df(i)`
    and `%mcp call`'s output); ValueError when the result holds neither."""
    from .frames import result_frame as frame

    return frame(result)


_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+.-]*)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.S | re.M)


def first_code_block(text: str) -> tuple[str, str] | None:
    """The first fenced code block of a Markdown text: (language, code), or None."""
    match = _FENCE.search(text)
    if match is None:
        return None
    return match.group(2), match.group(3).rstrip("\n")


PYTHON_LANGUAGES = frozenset({"python", "python3", "py", "ipython", "ipython3"})


def code_blocks(text: str) -> list[tuple[str, str]]:
    """Every fenced code block of a Markdown text, in order: (language, code)."""
    return [(m.group(2), m.group(3).rstrip("\n")) for m in _FENCE.finditer(text)]


def python_block(text: str) -> str | None:
    """The first Python block of a Markdown text: one labelled Python, or an unlabelled one that parses as
    Python (models often leave the label off); never a block of another language (SQL is not Python)."""
    import ast

    for language, code in code_blocks(text):
        if language.lower() in PYTHON_LANGUAGES:
            return code
        if not language:
            try:
                ast.parse(code)
            except (SyntaxError, ValueError):
                continue
            return code
    return None


def parse_json_answer(text: str) -> tuple[Any, bool]:
    """The JSON value of an answer: the whole text, else its first fenced block. (value, ok)."""
    candidates = [text.strip()]
    block = first_code_block(text)
    if block is not None:
        candidates.append(block[1])
    for candidate in candidates:
        try:
            return json.loads(candidate), True
        except ValueError:
            continue
    return None, False


@dataclass(frozen=True)
class SynapseResult:
    """The outcome of one %%synapse turn: the agent's own result (`turn`, agent/result.py's TurnResult, which
    `Agent.ask` returned) seen from the notebook: the session's name, the answer's `format`, tool calls as a
    DataFrame, the parsed answer (`data`, `code`) and how a cell shows it. Nothing of the turn is computed
    here a second time: every fact below is the TurnResult's.

    `text` is the answer, `messages` this turn's messages (user prompt, assistant replies, tool
    results), `tool_calls` a DataFrame of its tool calls, `status` finished/failed/cancelled/
    budget_exceeded, `usage` its tokens (cached ones apart) and `usage.cost_usd` (None: cost unknown).
    """

    turn: TurnResult
    session: str
    format: str = "markdown"

    @property
    def text(self) -> str:
        return self.turn.text

    @property
    def messages(self) -> tuple[Message, ...]:
        return self.turn.messages

    @property
    def session_id(self) -> str:
        return self.turn.session_id

    @property
    def model(self) -> str:
        """`provider:model` that answered."""
        return self.turn.model

    @property
    def usage(self) -> Usage:
        return self.turn.usage

    @property
    def status(self) -> str:
        return self.turn.status

    @property
    def iterations(self) -> int:
        return self.turn.iterations

    @property
    def duration_ms(self) -> float:
        return self.turn.duration_ms

    @property
    def turn_id(self) -> str:
        return self.turn.turn_id

    @property
    def error(self) -> str | None:
        """Why the turn did not finish, as one line naming the error's type (`MaxIterationsError: ...`)."""
        return f"{self.turn.error_type}: {self.turn.error}" if self.turn.error else None

    @property
    def calls(self) -> tuple[ToolCallFinished, ...]:
        """The turn's tool calls as the agent reported them, in the order the model asked for them."""
        return self.turn.tool_calls

    @property
    def held(self) -> tuple[str, ...]:
        """The names of the results this turn left held by the kernel (DataFrames and values in the namespace;
        `%synapse results` lists every one held)."""
        return self.turn.held

    @property
    def tool_calls(self) -> pd.DataFrame:
        """One row per tool call of this turn: name, arguments, result text, error, approval, duration
        (ms, rounded to 0.1), the full `result`; `.result_df(i)` gives call i's result as a DataFrame.
        Native tools show `server="python"`."""
        from .frames import ToolCallFrame

        rows = [
            {
                "tool_call_id": c.call.id,
                "server": _server_of(c),
                "tool": c.tool,
                "name": c.call.name,
                "arguments": dict(c.call.arguments),
                "approval": c.approval,
                "is_error": c.is_error,
                "error": c.error,
                "result_text": None if c.result is None else c.result.text,
                "started_at": c.started_at,
                "duration_ms": round(c.duration_ms, 1),
                "result": c.result,
            }
            for c in self.calls
        ]
        return ToolCallFrame(rows, columns=list(TOOL_CALL_COLUMNS))

    @property
    def data(self) -> Any:
        """The answer parsed as JSON (for --format json); None when it is not JSON."""
        return parse_json_answer(self.text)[0]

    @property
    def code(self) -> str | None:
        """The answer's first Python code block (see `python_block`: never SQL or another language); without
        one, the code the agent ran (kernel__run_python); else None (`code_languages` says what there is)."""
        block = python_block(self.text)
        if block is not None:
            return block
        ran = self.ran_code
        return "\n\n".join(ran) if ran else None

    @property
    def code_languages(self) -> tuple[str, ...]:
        """The languages of the answer's fenced code blocks, in order, once each ("unlabelled" for none)."""
        return tuple(dict.fromkeys(language or "unlabelled" for language, _ in code_blocks(self.text)))

    @property
    def ran_code(self) -> tuple[str, ...]:
        """The code of each kernel__run_python call of this turn that ran, in order (copy it into a cell)."""
        return tuple(
            str(c.call.arguments.get("code", "")) for c in self.calls
            if c.server == "kernel" and c.tool == "run_python" and c.approval != "denied"
        )

    @property
    def ok(self) -> bool:
        return self.status == "finished"

    def _summary(self) -> str:
        calls = f"{len(self.calls)} tool call" + ("" if len(self.calls) == 1 else "s")
        from .view import money

        tokens = f"{self.usage.total_tokens} tokens"
        if self.usage.cost_usd != 0:  # local models cost nothing: no cost to show
            tokens += f" · {money(self.usage.cost_usd)}"
        return f"{self.status} · {self.model} · {calls} · {tokens} · session {self.session}"

    def _repr_markdown_(self) -> str:
        from .dollars import text_dollars  # a `$` in the answer is money, not math

        body = self.text.strip() or "*(no answer text)*"
        if self.error:
            body += f"\n\n> {self.error}"
        return text_dollars(f"{body}\n\n" + Html("<sub>{}</sub>").format(self._summary()))  # the body is Markdown

    def __repr__(self) -> str:
        preview = " ".join(self.text.split())
        if len(preview) > 80:
            preview = preview[:79] + "…"
        return f"<SynapseResult {self._summary()}: {preview!r}>"

    def __str__(self) -> str:
        return self.text


def _server_of(call: ToolCallFinished) -> str | None:
    """The MCP server, "python" for a native tool, None for a tool that does not exist."""
    if call.server is not None:
        return call.server
    unknown = call.result is None and (call.error or "").startswith("UnknownToolError")
    return None if unknown else LOCAL_SERVER


class BackgroundRun:
    """The handle of a `%%synapse --background` run: awaitable, `.result()`, `.cancel()`, `.status`."""

    def __init__(
        self, task: asyncio.Task[SynapseResult], runner: Runner, *, session: str, prompt: str, controls: Any = None
    ) -> None:
        self._task = task
        self._runner = runner
        self.session = session
        self.prompt = prompt
        self.controls = controls  # the RunControls widget (Stop, approvals) shown under the cell

    @property
    def task(self) -> asyncio.Task[SynapseResult]:
        return self._task

    @property
    def status(self) -> str:
        """running, finished, failed or cancelled."""
        if not self._task.done():
            return "running"
        if self._task.cancelled():
            return "cancelled"
        if self._task.exception() is not None:
            return "failed"
        return self._task.result().status

    def done(self) -> bool:
        return self._task.done()

    def cancel(self) -> bool:
        """Ask the run to stop (like Stop): the turn is recorded as cancelled. False if it already ended."""
        return self._task.cancel()

    def result(self, timeout: float | None = None) -> SynapseResult:
        """Wait for the run (blocking this cell) and return its result. Interrupting the wait leaves the run going."""
        if self._task.done():
            return self._task.result()
        return self._runner.run(_wait(self._task), timeout=timeout)

    def __await__(self) -> Generator[Any, None, SynapseResult]:
        return asyncio.shield(self._task).__await__()

    def __repr__(self) -> str:
        prompt = " ".join(self.prompt.split())
        if len(prompt) > 60:
            prompt = prompt[:59] + "…"
        return f"<BackgroundRun {self.status} · session {self.session} · {prompt!r}>"

    def _repr_markdown_(self) -> str:
        hint = "`await` it or call `.result()` for the answer" if self.status == "running" else "`.result()`"
        return f"**background run** · {self.status} · session {self.session} · {hint}"


async def _wait(task: asyncio.Task[SynapseResult]) -> SynapseResult:
    return await asyncio.shield(task)
