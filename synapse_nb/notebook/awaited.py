"""Awaited cells: the input transformer that turns a whole-cell magic into a top-level `await` of it.

A cell that is one `%%synapse` cell, or one `%mcp ...` / `%synapse ...` line (comment lines aside), is
rewritten (before
IPython's own magic and `?`-help transforms) into

    await __import__('synapse_nb.notebook.awaited', fromlist=['run']).run(get_ipython(), 'mcp', '<line>')

so ipykernel, and terminal IPython with autoawait, run it natively as a task on their loop: no nested
loop, no patched asyncio. The line and the cell body pass through `repr()`, so quotes, backslashes,
triple quotes and braces arrive exactly as typed; the magic then parses and expands them as it would
have (`{expr}` / `$name` on option lines, `{name}` interpolation in prompts).

Left to IPython as they were: `%synapse?` / `%mcp?` / `%%synapse?` (help), any magic that shares its
cell with other code (that goes through notebook/runner.py's bridge), and every cell when the shell
cannot await (autoawait off, or a non-asyncio loop runner such as trio). `%synapse QUESTION?` is a
question, so its trailing `?` is the question's, not IPython's help.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["InputTransformer", "run"]

_CELL = re.compile(r"%%synapse(?=\s|$)(.*)")
_LINE = re.compile(r"%(synapse|mcp)(?=\s|$)(.*)", re.S)
_CALL = "await __import__('synapse_nb.notebook.awaited', fromlist=['run']).run(get_ipython(), {args})\n"


class InputTransformer:
    """An entry of `shell.input_transformers_cleanup` (registered at %load_ext, removed at %unload_ext)."""

    # IPython's check_complete (the terminal's "is this cell finished?") skips transforms marked so:
    # a `%%synapse` cell typed in the terminal then still waits for its blank line.
    has_side_effects = True

    def __init__(self, shell: Any) -> None:
        self.shell = shell

    def __call__(self, lines: list[str]) -> list[str]:
        if not lines or not self._can_await():
            return lines
        rewritten = rewrite(lines)
        return lines if rewritten is None else [rewritten]

    def _can_await(self) -> bool:
        if not getattr(self.shell, "autoawait", False):
            return False
        from IPython.core.async_helpers import _asyncio_runner

        return getattr(self.shell, "loop_runner", None) is _asyncio_runner


def rewrite(lines: list[str]) -> str | None:
    """The awaited form of a cell (its lines after IPython's cleanup), or None to leave it as it is."""
    first = lines[0].rstrip("\r\n")
    cell = _CELL.fullmatch(first)
    if cell is not None:
        # As IPython's cell-magic transform does: the rest of the first line, and the body as typed.
        line = cell.group(1).strip()
        return _CALL.format(args=f"'synapse', {line!r}, {''.join(lines[1:])!r}")
    code = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if len(code) != 1:  # comment lines around the magic may stay; other code may not
        return None
    match = _LINE.fullmatch(code[0].strip())
    if match is None:
        return None
    name, line = match.group(1), match.group(2).strip()
    if not line.rstrip("?"):  # `%mcp?`, `%synapse??`: IPython's help on the magic
        return None
    if line.startswith("?"):
        return None
    return _CALL.format(args=f"{name!r}, {line!r}")


async def run(shell: Any, name: str, line: str, cell: str | None = None) -> Any:
    """What a rewritten cell awaits: the magic's command on the running loop (notebook/magics.py)."""
    from .extension import get_state

    state = get_state(shell)
    if state is None or state.magics is None:  # unloaded between transform and run: IPython decides
        if cell is None:
            return shell.run_line_magic(name, line)
        return shell.run_cell_magic(name, line, cell)
    return await state.magics.run_awaited(name, line, cell)
