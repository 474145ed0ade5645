"""`%synapse cost [--by model|server|tool|session|day] [--since WHEN]`, and a cell's price and budget checks."""

from __future__ import annotations

import datetime as _dt
import re
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ...errors import SynapseError
from ..recording.reader import require_reader
from ..usage import usage_error
from .options import Option, OptionSet

if TYPE_CHECKING:
    import pandas as pd

    from ...history.store import HistoryStore

__all__ = ["BY", "cost", "parse_cost", "parse_when"]

BY = ("model", "server", "tool", "session", "day")
_HINT = "e.g. %synapse cost --by server --since 7d"
_RELATIVE = re.compile(r"^(\d+)\s*([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_when(text: str, now: _dt.datetime | None = None) -> _dt.datetime:
    """WHEN as a naive UTC datetime: `7d`, `24h`, `30m`, `2w` ago, `today` / `yesterday` (local midnight),
    or an ISO date or time (local time unless it says its offset)."""
    now = now or _dt.datetime.now().astimezone()
    word = text.strip().lower()
    match = _RELATIVE.match(word)
    if match:
        moment = now - _dt.timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    elif word in ("today", "yesterday"):
        moment = now.replace(hour=0, minute=0, second=0, microsecond=0)
        if word == "yesterday":
            moment -= _dt.timedelta(days=1)
    else:
        try:
            moment = _dt.datetime.fromisoformat(text.strip())
        except ValueError:
            raise UsageError(
                f"%synapse cost: --since {text!r} is not a time; use 7d, 24h, 30m, today, yesterday or a date "
                "like 2026-11-01"
            ) from None
        if moment.tzinfo is None:
            moment = moment.astimezone()  # a time without an offset is local
    return moment.astimezone(_dt.UTC).replace(tzinfo=None)


COST_OPTIONS = OptionSet("%synapse cost", _HINT, (
    Option("--by", "B", "group by {choices} (default: model)", choices=BY),
    Option("--since", "WHEN", "only calls since WHEN: 7d, 24h, 30m, today, yesterday or a date like 2026-11-01"),
))
"""`%synapse cost`'s options, declared once (notebook/commands/options.py builds the parser and the help from them)."""


def parse_cost(words: list[str]) -> tuple[str, _dt.datetime | None]:
    """(by, since) of `%synapse cost` words."""
    ns, rest = COST_OPTIONS.parse(words)
    if rest:
        raise UsageError(f"%synapse cost: unexpected {rest[0]!r}; {_HINT}")
    return ns.by or "model", parse_when(ns.since) if ns.since is not None else None


def cost(store: HistoryStore, words: list[str]) -> pd.DataFrame:
    """`%synapse cost [--by model|server|tool|session|day] [--since WHEN]`: what LLM calls cost, as a DataFrame.

    By model, session or day: calls, prompt tokens (cached and cache-written apart), output tokens and
    USD (what the priced calls cost, never NaN; `unpriced_calls` counts the calls with no known price, so a
    nonzero count marks the sum as a lower bound). By server or tool: the cost
    of the prompt tokens each tool's results added to every later request of their session (plus
    sampling calls the server asked for), so the first row is the server that costs the most. See
    synapse_nb/history/cost.py for the exact rule.
    """
    by, since = parse_cost(words)
    hist = require_reader(store)
    try:
        frame: pd.DataFrame = hist.cost(by=by, since=since)
    except SynapseError as exc:
        raise usage_error(exc) from None
    return frame
