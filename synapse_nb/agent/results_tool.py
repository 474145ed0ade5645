"""ResultsSql: the `results__sql` tool, offered to the model while results are held: DuckDB SQL over them by name.

The SQL engine is given (history/frames_sql.py: DuckDB lives in the history layer); this module only makes the
tool: its spec, its arguments, the answer as a table. A big answer is held in its turn like any tool's result.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from ..errors import SynapseError
from ..types import READ_ONLY_HINTS, ContentBlock, ToolResult, ToolSpec
from .held import HeldResults

__all__ = ["RESULTS_SERVER", "SQL_TOOL", "FrameQuery", "ResultsSql"]

RESULTS_SERVER = "results"
SQL_TOOL = f"{RESULTS_SERVER}__sql"

FrameQuery = Callable[[str, Mapping[str, pd.DataFrame]], pd.DataFrame]
"""Runs SQL over DataFrames by name and returns the answer (history/frames_sql.py: query_frames)."""


class ResultsSql:
    """The `results__sql` agent tool over `held` (an AgentTool: offered while anything is held), run by `query`
    in a worker thread so a long query leaves the loop free."""

    def __init__(self, held: HeldResults, query: FrameQuery) -> None:
        self.held = held
        self.query = query

    def specs(self) -> Sequence[ToolSpec]:
        if not len(self.held):
            return ()
        names = ", ".join(self.held.names[-20:])
        return (ToolSpec(
            name=SQL_TOOL,
            description=(
                "Run one DuckDB SQL query over the tool results the kernel holds, each a table named as its "
                f"summary says (held now: {names}). Use it to compute over every row (GROUP BY, sums, filters, "
                "joins) instead of reasoning from the rows shown. A big answer is held too, under a new name."
            ),
            input_schema={
                "type": "object",
                "properties": {"sql": {"type": "string", "description": "one DuckDB SELECT over held results"}},
                "required": ["sql"],
                "additionalProperties": False,
            },
            server=RESULTS_SERVER,
            original_name="sql",
            annotations=dict(READ_ONLY_HINTS),
        ),)

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        started = time.perf_counter()
        sql = arguments.get("sql")
        if name != SQL_TOOL or not isinstance(sql, str) or not sql.strip():
            return ToolResult.error(f"{SQL_TOOL} takes one argument, sql: a DuckDB query over the held results")
        try:
            answer = await asyncio.to_thread(self.query, sql, self.held.frames())
        except SynapseError as exc:
            return ToolResult.error(str(exc), duration_ms=(time.perf_counter() - started) * 1000)
        return answer_of(answer, (time.perf_counter() - started) * 1000)


def answer_of(frame: pd.DataFrame, duration_ms: float) -> ToolResult:
    """A query's answer as a tool result: CSV text, and the rows as structured content (so a big one is held
    as a DataFrame again)."""
    columns = [str(c) for c in frame.columns]
    rows = [[_plain(v) for v in row] for row in frame.itertuples(index=False, name=None)]
    return ToolResult(
        content=(ContentBlock("text", text=frame.to_csv(index=False)),),
        structured_content={"columns": columns, "rows": rows},
        duration_ms=duration_ms,
    )


def _plain(value: Any) -> Any:
    """A cell as JSON can carry it (numpy scalars as Python numbers, timestamps as ISO text, NaN as null)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return item()
        except (ValueError, TypeError):
            pass
    if isinstance(value, str | int | float | bool):
        return value
    return str(value)
