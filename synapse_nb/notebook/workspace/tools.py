"""The built-in `kernel` tool group: the agent looks at the notebook's variables, DataFrames and cells, and runs code.

Served in process (server "kernel", offered as `kernel__NAME`), opt-in per cell (`%%synapse --kernel`)
or per kernel (`%config SynapseMagics.kernel_tools = True`). The tools run on the loop's thread, where
the user's code runs, never in a worker thread. What they return never holds the value of a variable
whose name looks secret (`*key*`, `*token*`, `*secret*`, `*password*`) or of the environment, and
every text passes the history's secret masking (`synapse_nb.history.redact.Redactor.redact_text`,
with the kernel's registered secrets and the string values of secret-named variables added).
`run_python` is marked destructive, so the approval policy asks before it runs (and denies where
nobody can answer).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import SynapseError
from ...types import ContentBlock, ToolResult
from ..turns.interpolate import MISSING, resolve
from .values import (
    bounded,
    bounded_repr,
    describe_frame,
    is_frame,
    is_secret_name,
    list_rows,
    refusal,
    secret_values,
)

if TYPE_CHECKING:
    from ...agent.tools import NativeTool, ToolRegistry

__all__ = ["SERVER", "CellLog", "CellRecord", "KernelTools"]

SERVER = "kernel"
DEFAULT_RUN_TIMEOUT = 120.0
"""Seconds `run_python` may run before it is stopped."""
MAX_CELLS = 20
"""Most cells `recent_cells` returns."""
MAX_CELL_CHARS = 2000
"""Longest input or output of one cell in `recent_cells`."""
_PATH = re.compile(r"^\s*(?:\.|\[)")


@dataclass(frozen=True, slots=True)
class CellRecord:
    """One finished cell: its number, source, output (the value it showed, as a bounded repr) and error."""

    count: int | None
    source: str
    output: str | None
    error: str | None


class CellLog:
    """Remembers the last cells the user ran (IPython's `post_run_cell` event), errors included."""

    def __init__(self, maxlen: int = 50) -> None:
        self.records: deque[CellRecord] = deque(maxlen=maxlen)

    def __call__(self, result: Any) -> None:
        info = getattr(result, "info", None)
        source = str(getattr(info, "raw_cell", "") or "")
        if not source.strip():
            return
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        value = getattr(result, "result", None)
        try:
            output = None if value is None else bounded_repr(value, MAX_CELL_CHARS)
            error_text = None if error is None else _error_line(error)
        except Exception:  # an event callback must never disturb the user's cell
            output, error_text = None, None
        self.records.append(CellRecord(getattr(result, "execution_count", None), source, output, error_text))


def _error_line(exc: BaseException) -> str:
    """`Type: message`, the line of the cell it came from, and the frame that raised it when that is elsewhere."""
    import os
    import traceback

    text = " ".join(str(exc).split())
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    ipython_dir = os.path.dirname(os.path.dirname(_ipython_file()))
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(ipython_dir)]
    if not frames:
        return line
    cell_file = frames[0].filename
    in_cell = [f for f in frames if f.filename == cell_file][-1]
    line += f"\n  at line {in_cell.lineno} of the cell" + (f": {in_cell.line.strip()}" if in_cell.line else "")
    last = frames[-1]
    if last is not in_cell:
        line += f'\n  raised in File "{last.filename}", line {last.lineno}, in {last.name}'
    return line


def _ipython_file() -> str:
    import IPython.core.interactiveshell as shell_module

    return str(shell_module.__file__)


class KernelTools:
    """The five kernel tools over one shell's user namespace."""

    def __init__(
        self, shell: Any, *, secrets: Callable[[], Sequence[str]] = tuple, run_timeout: float = DEFAULT_RUN_TIMEOUT,
    ) -> None:
        self.shell = shell
        self.secrets = secrets
        self.run_timeout = run_timeout
        self.cells = CellLog()
        self._watching = False
        self._installed: set[int] = set()

    # -- lifecycle

    def watch(self) -> None:
        """Start recording finished cells (for `recent_cells`)."""
        events = getattr(self.shell, "events", None)
        if events is not None and not self._watching:
            events.register("post_run_cell", self.cells)
            self._watching = True

    def unwatch(self) -> None:
        events = getattr(self.shell, "events", None)
        if events is not None and self._watching:
            events.unregister("post_run_cell", self.cells)
            self._watching = False

    def register_notebook_tools(self, registry: ToolRegistry) -> list[str]:
        """Offer the notebook's `@synapse_nb.tool` functions (found in the user namespace) to the model, and
        register this opt-in `kernel__*` group (offered only when a cell turns it on); returns their names."""
        from ..usage import usage_error

        namespace: Mapping[str, Any] = getattr(self.shell, "user_ns", None) or {}
        self.install(registry)
        try:
            return registry.register_namespace(namespace)
        except SynapseError as exc:
            raise usage_error(exc) from None

    def install(self, registry: ToolRegistry) -> None:
        """Register the group in a registry (once per registry; opt-in there, see ToolRegistry)."""
        if id(registry) not in self._installed:
            registry.register_group(SERVER, self.natives())
            self._installed.add(id(registry))

    def natives(self) -> list[NativeTool]:
        """The tools as NativeTools with server "kernel" and names `kernel__NAME`."""
        from ...agent.tools import native_tool

        read_only = {"readOnlyHint": True}
        tools: list[tuple[Callable[..., Any], dict[str, bool]]] = [
            (self.list_variables, read_only), (self.describe_dataframe, read_only), (self.get_value, read_only),
            (self.run_python, {"destructiveHint": True}), (self.recent_cells, read_only),
        ]
        natives: list[NativeTool] = []
        for fn, hints in tools:
            own = fn.__name__
            native = native_tool(self._masked_errors(fn), name=f"{SERVER}__{own}", annotations=hints)
            spec = dataclasses.replace(native.spec, server=SERVER, original_name=own)
            natives.append(dataclasses.replace(native, spec=spec))
        return natives

    def _masked_errors(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The tool, with what it raises turned into an error result that passes the masking too."""

        @functools.wraps(fn)
        async def guarded(*args: Any, **kwargs: Any) -> ToolResult:
            try:
                result: ToolResult = await fn(*args, **kwargs)
            except Exception as exc:  # the model gets the one-line reason, masked like any result
                text = " ".join(str(exc).split())
                return self._result(f"{type(exc).__name__}: {text}" if text else type(exc).__name__, is_error=True)
            return result

        return guarded

    # -- helpers

    @property
    def namespace(self) -> dict[str, Any]:
        ns: dict[str, Any] = getattr(self.shell, "user_ns", None) or {}
        return ns

    def mask(self, text: str) -> str:
        """The text with secrets masked: registered ones, secret-looking env values, secret-named variables' values."""
        from ...history.redact import Redactor

        values = [*self.secrets(), *secret_values(self.namespace)]
        return Redactor(values).redact_text(text)

    def _result(self, text: str, images: Sequence[str] = (), *, is_error: bool = False) -> ToolResult:
        blocks = [ContentBlock("text", text=self.mask(text))]
        blocks += [ContentBlock("image", data=data, mime_type="image/png") for data in images]
        return ToolResult(content=tuple(blocks), is_error=is_error)

    def _lookup(self, name: str, path: str | None = None) -> Any:
        """The value of `name` + `path` by the `{name}` interpolation rules; ValueError saying why not."""
        name = name.strip()
        if not name.isidentifier() or name.startswith("_"):
            raise ValueError(f"{name!r} is not a variable name the kernel tools may read (no leading '_')")
        ns = self.namespace
        if name not in ns:
            raise ValueError(f"there is no variable named {name!r}; kernel__list_variables lists them")
        why = refusal(name, ns[name])
        if why:
            raise ValueError(why)
        expr = name
        if path and path.strip():
            step = path.strip()
            expr += step if _PATH.match(step) else f".{step}"
            for word in re.findall(r"[A-Za-z_]\w*", re.sub(r"'[^']*'|\"[^\"]*\"", _quoted_word, step)):
                if is_secret_name(word):
                    raise ValueError(f"{word!r} looks like a secret (key, token, secret, password); not shown")
        value = resolve(expr, ns)
        if value is MISSING:
            raise ValueError(
                f"cannot look up {expr!r}: only .attribute and [index] / ['key'] steps are allowed (no calls, "
                "no private attributes), and each must exist"
            )
        why = refusal(expr, value)
        if why:
            raise ValueError(why)
        return value

    # -- the tools (async: they run on the loop's thread, where the user's objects live)

    async def list_variables(self, pattern: str | None = None) -> ToolResult:
        """List the notebook's variables: name, type, shape or length and memory size (tables, arrays, collections).

        Modules, functions, classes and names starting with '_' are left out. Values are not shown.

        Args:
            pattern: a glob over variable names, e.g. "df*"; all variables when omitted.
        """
        hidden = getattr(self.shell, "user_ns_hidden", None)
        rows = list_rows(self.namespace, hidden, pattern)
        if not rows["variables"]:
            return self._result("no variables" + (f" match {pattern!r}" if pattern else " yet"))
        return self._result(json.dumps(rows, ensure_ascii=False, default=str, indent=1))

    async def describe_dataframe(self, name: str, rows: int = 5) -> ToolResult:
        """Describe a DataFrame or Series: dtypes, null counts, statistics of numeric and text columns, first rows.

        Args:
            name: the variable's name.
            rows: how many first rows to show (0 to 50).
        """
        value = self._lookup(name)
        if not is_frame(value):
            raise ValueError(f"{name} is a {type(value).__name__}, not a DataFrame or Series; try kernel__get_value")
        return self._result(describe_frame(value, name, rows))

    async def get_value(self, name: str, path: str | None = None) -> ToolResult:
        """Show a variable's value (a bounded repr), or of an attribute/item inside it.

        Args:
            name: the variable's name.
            path: attribute and item steps after the name, e.g. ".shape", "['total']" or "columns[0]"; no calls.
        """
        value = self._lookup(name, path)
        return self._result(bounded_repr(value))

    async def run_python(self, code: str) -> ToolResult:
        """Run Python code in the notebook's namespace, as a cell would; variables it assigns stay.

        Returns stdout, the last expression's value, the error (one line and where), and matplotlib
        figures as images. Use it to compute on the real data or draw a chart.

        Args:
            code: the Python code to run.
        """
        from .run import run_code

        transform = getattr(self.shell, "transform_cell", None)
        outcome = run_code(code, self.namespace, transform=transform, timeout=self.run_timeout)
        parts: list[str] = []
        if outcome.stdout:
            parts.append("stdout:\n" + bounded(outcome.stdout))
        if outcome.stderr:
            parts.append("stderr:\n" + bounded(outcome.stderr, 2000))
        parts += ["displayed:\n" + bounded(text, 2000) for text in outcome.displayed if text]
        if outcome.value is not None:
            parts.append("value:\n" + outcome.value)
        if outcome.error:
            parts.append("error: " + outcome.error)
        if outcome.assigned:
            parts.append("assigned: " + ", ".join(outcome.assigned))
        if outcome.images:
            n = len(outcome.images)
            parts.append(f"figures: {n} PNG image{'s' if n != 1 else ''} (shown in the cell)")
        text = "\n".join(parts) if parts else "(ran; no output)"
        return self._result(text, outcome.images, is_error=outcome.error is not None)

    async def recent_cells(self, n: int = 5) -> ToolResult:
        """The last cells the user ran: their code, their output value and any error (bounded).

        Args:
            n: how many cells, newest last (1 to 20).
        """
        n = max(1, min(int(n), MAX_CELLS))
        records = [r for r in self.cells.records if not r.source.lstrip().startswith("%%synapse")][-n:]
        if not records:
            return self._result("no cells have run yet in this kernel (since the extension was loaded)")
        blocks: list[str] = []
        for r in records:
            head = f"[{r.count}]" if r.count is not None else "[ ]"
            lines = [f"cell {head}:", bounded(r.source.rstrip(), MAX_CELL_CHARS)]
            if r.output is not None:
                lines += ["output:", r.output]
            if r.error is not None:
                lines.append("error: " + r.error)
            blocks.append("\n".join(lines))
        return self._result("\n\n".join(blocks))


def _quoted_word(match: re.Match[str]) -> str:
    """A quoted key of a path, as a bare word (so `['api_key']` is checked like `.api_key`)."""
    return " " + re.sub(r"\W+", "_", match.group(0)[1:-1]) + " "

