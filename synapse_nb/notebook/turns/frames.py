"""DataFrames of tool calls and tool results (imports pandas: load it lazily, from result.py)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ...tables import Table, tables_of
from ...types import ToolResult

__all__ = ["ToolCallFrame", "result_frame", "table_frame"]


def result_frame(result: ToolResult, name: str | int | None = None) -> pd.DataFrame:
    """A tool's tabular or structured result as a DataFrame.

    Rows and columns when the result holds a table (structured `columns`/`rows`, a list of objects, one
    inside an object, a Markdown pipe table alone or inside prose: see tabular.py), with the fields found
    beside it (`warning`, `truncated`, `nextCursor` ...) in the frame's `.attrs`; otherwise its structured
    content, flattened into one row. `name` picks one of several tables by its path (`customers`,
    `data.rows`) or position. ValueError when there is no such table (the text is in `.text`)."""
    tables = tables_of(result)
    if name is not None:
        return table_frame(_pick(tables, name))
    if len(tables) == 1:
        return table_frame(tables[0])
    if result.structured_content is not None:
        return pd.json_normalize(dict(result.structured_content))
    if tables:
        return table_frame(_pick(tables, None))
    preview = " ".join(result.text.split())[:80]
    raise ValueError(f"this tool result holds no table and no structured content (its text: {preview!r})")


def table_frame(table: Table) -> pd.DataFrame:
    """A Table as a DataFrame whose `.attrs` are the fields found beside it."""
    frame = pd.DataFrame([list(row) for row in table.rows], columns=list(table.columns))
    frame.attrs.update(table.meta)
    return frame


def _pick(tables: list[Table], name: str | int | None) -> Table:
    """The table named by its path or position; ValueError naming the tables there are."""
    names = ", ".join(repr(t.path) for t in tables) or "none"
    if isinstance(name, int) and not isinstance(name, bool) and -len(tables) <= name < len(tables):
        return tables[name]
    for table in tables:
        if table.path == name:
            return table
    if name is None:
        raise ValueError(f"this tool result holds {len(tables)} tables: {names}; pick one with .df_of(NAME)")
    raise ValueError(f"this tool result has no table {name!r}; its tables: {names}")


class ToolCallFrame(pd.DataFrame):  # type: ignore[misc]
    """`_synapse.tool_calls`: one row per tool call; `result_df(i)` gives call i's result as a DataFrame."""

    @property
    def _constructor(self) -> Any:
        return ToolCallFrame

    def result_df(self, i: int = -1, table: str | int | None = None) -> pd.DataFrame:
        """The result of the tool call in row `i` (default: the last) as a DataFrame (see `result_frame`);
        `table` picks one of several tables in it by path (`customers`) or position."""
        if "result" not in self.columns:
            raise ValueError("these rows have no 'result' column; use _synapse.tool_calls.result_df(i)")
        if not -len(self) <= i < len(self):
            raise IndexError(f"there are {len(self)} tool calls; i must be in {-len(self)}..{len(self) - 1}")
        result = self["result"].iloc[i]
        if not isinstance(result, ToolResult):
            error = self["error"].iloc[i] if "error" in self.columns else None
            raise ValueError(f"tool call {i} has no result (error: {error})")
        return result_frame(result, table)
