"""Awaited cells: the input transformer that turns a whole-cell magic into a top-level `await` of it.

A cell that is one `%%synapse` cell, or one `%mcp ...` / `%synapse ...` line (comment lines aside), is
rewritten (before
IPython's own magic and `?`-help transforms) into

    await __import__('synapse_nb.notebook.kernel.awaited', fromlist=['run']).run(get_ipython(), 'mcp', '<line>')

so ipykernel, and terminal IPython with autoawait, run it natively as a task on their loop: no nested
loop, no patched asyncio. The line and the cell body pass through `repr()`, so quotes, backslashes,
triple quotes and braces arrive exactly as typed; the magic then parses and expands them as it would
have (`{expr}` / `$name` on option lines, `{name}` interpolation in prompts).

In a cell that mixes code and magics (`import sys` then `%mcp connect ...`), `AwaitMagicCalls` does the
same after IPython's transforms, for each top-level statement that runs one of these magics.

Left to IPython as they were: `%synapse?` / `%mcp?` / `%%synapse?` (help), magics inside loops,
functions or other blocks (those go through notebook/kernel/runner.py's bridge), and every cell when the
shell cannot await (autoawait off, or a non-asyncio loop runner such as trio). A whole-cell
`%synapse QUESTION?` is a question, so its trailing `?` is the question's, not IPython's help.
"""

from __future__ import annotations

import ast
import re
from typing import Any

__all__ = ["AwaitMagicCalls", "InputTransformer", "run"]

_CELL = re.compile(r"%%synapse(?=\s|$)(.*)")
_LINE = re.compile(r"%(synapse|mcp)(?=\s|$)(.*)", re.S)
_CALL = "await __import__('synapse_nb.notebook.kernel.awaited', fromlist=['run']).run(get_ipython(), {args})\n"


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


class AwaitMagicCalls:
    """An entry of `shell.input_transformers_post`: in a cell that mixes code and magics, each top-level
    statement IPython made of a `%mcp` / `%synapse` line (`get_ipython().run_line_magic('mcp', ...)`,
    also as `x = %mcp list`) awaits the command instead. Found in the parsed cell, so a magic-looking line
    inside a string is never touched; magics inside loops, functions or other blocks keep the runner's
    bridge (they cannot be awaited there)."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell

    def __call__(self, lines: list[str]) -> list[str]:
        code = "".join(lines)
        if "_magic(" not in code or not InputTransformer(self.shell)._can_await():
            return lines
        try:
            tree = ast.parse(code)
        except SyntaxError:
            return lines
        rows = code.splitlines(keepends=True)
        edits = [call for node in tree.body if (call := _magic_call(node)) is not None]
        for call in reversed(edits):  # from the end, so earlier positions stay valid
            start = _offset(rows, call.lineno, call.col_offset)
            end = _offset(rows, call.end_lineno or call.lineno, call.end_col_offset or 0)
            args = ", ".join(repr(a.value) for a in call.args if isinstance(a, ast.Constant))
            code = code[:start] + _CALL.format(args=args).rstrip("\n") + code[end:]
            rows = code.splitlines(keepends=True)
        return code.splitlines(keepends=True) if edits else lines


def _magic_call(node: ast.stmt) -> ast.Call | None:
    value = node.value if isinstance(node, ast.Expr | ast.Assign | ast.AnnAssign) else None
    if not isinstance(value, ast.Call) or value.keywords:
        return None
    func = value.func
    if not (isinstance(func, ast.Attribute) and func.attr in ("run_line_magic", "run_cell_magic")):
        return None
    owner = func.value
    if not (isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "get_ipython"):
        return None
    wanted = 2 if func.attr == "run_line_magic" else 3
    if len(value.args) != wanted or not all(isinstance(a, ast.Constant) and isinstance(a.value, str)
                                            for a in value.args):
        return None
    name = value.args[0]
    assert isinstance(name, ast.Constant)
    if name.value not in ("mcp", "synapse"):
        return None
    return value


def _offset(rows: list[str], lineno: int, col: int) -> int:
    """A character offset in the cell from ast's (1-based line, UTF-8 byte column)."""
    before = sum(len(row) for row in rows[: lineno - 1])
    return before + len(rows[lineno - 1].encode()[:col].decode())


async def run(shell: Any, name: str, line: str, cell: str | None = None) -> Any:
    """What a rewritten cell awaits: the magic's command on the running loop (notebook/magics.py)."""
    # The magics object the name is registered to (none once the extension is unloaded): no import of the
    # extension here, so the kernel room never reaches up to the state.
    kind = "line" if cell is None else "cell"
    magics = getattr(shell.magics_manager.magics[kind].get(name), "__self__", None)
    if magics is None or not hasattr(magics, "run_awaited"):  # unloaded between transform and run: IPython decides
        if cell is None:
            return shell.run_line_magic(name, line)
        return shell.run_cell_magic(name, line, cell)
    return await magics.run_awaited(name, line, cell)
