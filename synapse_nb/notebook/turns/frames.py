"""DataFrames of tool calls and tool results (imports pandas: load it lazily, from result.py)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ...tables import table_of
from ...types import ToolResult

__all__ = ["ToolCallFrame", "result_frame"]


def result_frame(result: ToolResult) -> pd.DataFrame:
    """A tool's tabular or structured result as a DataFrame.

    Rows and columns when the result holds a table (structured `columns`/`rows`, a list of objects,
    a Markdown pipe table: see tabular.py); otherwise its structured content, flattened into one row.
    ValueError when it has neither (the text is in `.text`)."""
    table = table_of(result)
    if table is not None:
        return pd.DataFrame([list(row) for row in table.rows], columns=list(table.columns))
    if result.structured_content is not None:
        return pd.json_normalize(dict(result.structured_content))
    preview = " ".join(result.text.split())[:80]
    raise ValueError(f"this tool result holds no table and no structured content (its text: {preview!r})")


class ToolCallFrame(pd.DataFrame):  # type: ignore[misc]
    """`_synapse.tool_calls`: one row per tool call; `result_df(i)` gives call i's result as a DataFrame."""

    @property
    def _constructor(self) -> Any:
        return ToolCallFrame

    def result_df(self, i: int = -1) -> pd.DataFrame:
        """The result of the tool call in row `i` (default: the last) as a DataFrame (see `result_frame`)."""
        if "result" not in self.columns:
            raise ValueError("these rows have no 'result' column; use _synapse.tool_calls.result_df(i)")
        if not -len(self) <= i < len(self):
            raise IndexError(f"there are {len(self)} tool calls; i must be in {-len(self)}..{len(self) - 1}")
        result = self["result"].iloc[i]
        if not isinstance(result, ToolResult):
            error = self["error"].iloc[i] if "error" in self.columns else None
            raise ValueError(f"tool call {i} has no result (error: {error})")
        return result_frame(result)
