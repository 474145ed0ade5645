"""Cost queries over the history: what LLM calls cost by model, session, day, and by the tool or server
whose results made later prompts longer.

Every recorded call has `cost_usd` (NULL: the model had no known price, or it was recorded before
costs were). A group's `cost_usd` is the sum of what its priced calls cost, and `unpriced_calls` counts
the others, so one unpriced call never hides the known sum (a nonzero `unpriced_calls` marks the sum as a
lower bound). A group with no priced call at all shows 0 with its `unpriced_calls` beside it, never NaN:
such groups sort first, since their real cost could be the largest.

By tool / server. A tool's result is sent again with every later request of its session, so it costs
on every one of them. Each call records the tokens each tool result first sent in it added to the
prompt (`llm_calls.tool_result_tokens`, measured from the provider's own token counts, see
synapse_nb/agent/spend.py). For each later call of the session, a result is charged its share of that
call's prompt cost: tokens / the call's prompt tokens x `input_cost_usd` (cache discounts included).
`context_usd` sums those charges; `sampling_usd` adds the LLM calls an MCP server asked for itself
(sampling) during the tool's calls; `cost_usd` is both. Native tools (no server) group as "python",
the label the notebook gives them everywhere (`_synapse.tool_calls`, `%mcp tools`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .queries import When, since_filter, when_value

if TYPE_CHECKING:
    import pandas as pd

    from .reader import History

__all__ = ["COST_BY", "CostBy", "cost"]

CostBy = Literal["model", "server", "tool", "session", "day"]
COST_BY: tuple[CostBy, ...] = ("model", "server", "tool", "session", "day")
NATIVE = "python"

_TOTALS = """
    count(*) AS calls,
    sum(input_tokens) AS input_tokens,
    sum(coalesce(cached_input_tokens, 0)) AS cached_input_tokens,
    sum(coalesce(cache_write_tokens, 0)) AS cache_write_tokens,
    sum(output_tokens) AS output_tokens,
    coalesce(sum(cost_usd), 0.0) AS cost_usd,
    count(*) FILTER (WHERE cost_usd IS NULL) AS unpriced_calls
"""

_BY_COST = "sum(c.cost_usd) DESC NULLS FIRST, calls DESC"  # a group with no priced call first
_GROUPED = {  # select, group by, order by
    "model": ("provider || ':' || model AS model", "1", _BY_COST),
    "session": ("c.session_id, any_value(s.name) AS name", "c.session_id", _BY_COST),
    "day": ("CAST(date_trunc('day', c.started_at) AS DATE) AS day", "1", "day"),
}


def cost(history: History, by: CostBy = "model", since: When = None) -> pd.DataFrame:
    """What LLM calls cost, grouped `by` model, server, tool, session or day; calls since `since` only."""
    if by not in COST_BY:
        raise ValueError(f"cost by {by!r}: expected one of {', '.join(COST_BY)}")
    if by in ("server", "tool"):
        return _by_tool(history, by, since)
    select, group, order = _GROUPED[by]
    where, params = since_filter("c.started_at", since)
    join = " LEFT JOIN (SELECT session_id, any_value(name) AS name FROM sessions GROUP BY 1) s USING (session_id)"
    query = (
        f"SELECT {select}, {_TOTALS} FROM llm_calls c{join if by == 'session' else ''}{where} "
        f"GROUP BY {group} ORDER BY {order}"
    )
    return history.sql(query, params)


@dataclass(slots=True)
class _Group:
    tool_calls: int = 0
    result_tokens: int = 0
    resent_tokens: int = 0
    context_usd: float = 0.0
    sampling_usd: float = 0.0
    unpriced: int = 0
    priced: int = 0


def _tokens(value: Any) -> Mapping[str, int]:
    if value is None or (isinstance(value, float) and value != value):  # NULL / NaN
        return {}
    data = json.loads(value) if isinstance(value, str) else value
    return {str(k): int(v) for k, v in dict(data).items()}


def _by_tool(history: History, by: Literal["server", "tool"], since: When) -> pd.DataFrame:
    import pandas as pd

    where, params = since_filter("started_at", since)
    # Every call of the sessions active since `since`: a result sent earlier is still in their prompts.
    calls = history.sql(
        "SELECT session_id, started_at, input_tokens, input_cost_usd, cost_usd, origin, tool_call_id, "
        "tool_result_tokens FROM llm_calls WHERE session_id IN "
        f"(SELECT session_id FROM llm_calls{where}) ORDER BY session_id, started_at",
        params,
    )
    tools = history.sql("SELECT tool_call_id, server, tool, started_at FROM tool_calls")
    owner: dict[str, tuple[str, ...]] = {}
    for row in tools.itertuples(index=False):
        server = row.server if isinstance(row.server, str) and row.server else NATIVE
        owner[str(row.tool_call_id)] = (server,) if by == "server" else (server, str(row.tool))
    cutoff = pd.Timestamp(when_value(since)) if since is not None else None
    groups: dict[tuple[str, ...], _Group] = defaultdict(_Group)
    counted: set[str] = set()
    active: dict[str, int] = {}
    session: str | None = None
    for row in calls.itertuples(index=False):
        if row.session_id != session:
            session, active = row.session_id, {}
        in_window = cutoff is None or row.started_at >= cutoff
        origin = row.origin if isinstance(row.origin, str) else None
        if origin is not None:  # a server's sampling request: charged whole to the tool call it came during
            key = owner.get(str(row.tool_call_id)) or ((origin.split(":", 1)[-1],) if by == "server" else None)
            if key is not None and in_window:
                if _missing(row.cost_usd):
                    groups[key].unpriced += 1
                else:
                    groups[key].sampling_usd += float(row.cost_usd)
                    groups[key].priced += 1
            continue
        for call_id, tokens in _tokens(row.tool_result_tokens).items():
            active[call_id] = active.get(call_id, 0) + tokens
            key = owner.get(call_id)
            if key is not None and call_id not in counted and in_window:
                counted.add(call_id)
                groups[key].tool_calls += 1
                groups[key].result_tokens += tokens
        if not in_window or not row.input_tokens:
            continue
        for call_id, tokens in active.items():
            key = owner.get(call_id)
            if key is None or not tokens:
                continue
            g = groups[key]
            g.resent_tokens += tokens
            if _missing(row.input_cost_usd):
                g.unpriced += 1
            else:
                g.context_usd += min(1.0, tokens / int(row.input_tokens)) * float(row.input_cost_usd)
                g.priced += 1
    columns = ["server"] if by == "server" else ["server", "tool"]
    records = []
    for key, g in groups.items():
        total = g.context_usd + g.sampling_usd
        records.append({
            **dict(zip(columns, key, strict=True)), "tool_calls": g.tool_calls, "result_tokens": g.result_tokens,
            "resent_tokens": g.resent_tokens, "context_usd": g.context_usd, "sampling_usd": g.sampling_usd,
            "cost_usd": total, "unpriced_calls": g.unpriced, "_unknown": g.unpriced > 0 and not g.priced,
        })
    names = [*columns, "tool_calls", "result_tokens", "resent_tokens", "context_usd", "sampling_usd", "cost_usd",
             "unpriced_calls"]
    frame = pd.DataFrame.from_records(records, columns=[*names, "_unknown"])
    frame = frame.sort_values(["_unknown", "cost_usd", *columns], ascending=[False, False, *([True] * len(columns))],
                              ignore_index=True)
    return frame[names]


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)

