"""DuckDB SQL over DataFrames held in memory (the results the kernel holds for the model), not over the history file.

The agent's `results__sql` tool (agent/results_tool.py) is given `query_frames` by the notebook layer: DuckDB
stays in this layer, and the agent sees a plain function of (SQL, tables by name).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb
import pandas as pd

from ..errors import HistoryError

__all__ = ["query_frames"]


def query_frames(sql: str, tables: Mapping[str, Any]) -> pd.DataFrame:
    """Run one DuckDB query over `tables` (name -> DataFrame), each a table of that name, in a fresh in-memory
    database that cannot read or write files or the network (the model writes this SQL). HistoryError, one
    line, when DuckDB refuses the query."""
    con = duckdb.connect(":memory:")
    try:
        for name, frame in tables.items():
            con.register(name, frame)
        con.execute("SET enable_progress_bar = false")  # it would print into the user's cell
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        return con.execute(sql).df()
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise HistoryError(f"the SQL over held results failed: {first}") from exc
    finally:
        con.close()
