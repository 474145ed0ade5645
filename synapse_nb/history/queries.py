"""The SQL the history readers share: filters and ordering of the relations, newest-N, a session by name,
and the column lists that show every relation with this code's columns whatever wrote it.

The history file reader (reader.py) and the lake reader (lake_reader.py) differ only in where a relation's
rows come from (a file plus its spool, or Parquet parts); every query a user can ask is built here once.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .schema import COLUMNS, SQL_TYPE, TIME_COLUMN

__all__ = [
    "FIND_SESSION",
    "Select",
    "When",
    "empty_relation",
    "known_columns",
    "quote_path",
    "select",
    "since_filter",
    "when_value",
]

When = _dt.datetime | _dt.date | str | None

# The newest session named $1, else the newest whose id starts with $1.
FIND_SESSION = (
    "SELECT session_id FROM sessions WHERE name = $1 OR starts_with(session_id, $1) "
    "ORDER BY (name = $1) DESC, created_at DESC LIMIT 1"
)


def when_value(value: When) -> Any:
    """A `since`/`until` bound as DuckDB compares it with the stored naive-UTC timestamps."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.UTC).replace(tzinfo=None)
        return value
    if isinstance(value, _dt.date):
        return _dt.datetime(value.year, value.month, value.day)
    return value


def since_filter(column: str, since: When) -> tuple[str, list[Any]]:
    """` WHERE column >= since` and its parameter, or nothing when `since` is None."""
    if since is None:
        return "", []
    return f" WHERE {column} >= CAST(? AS TIMESTAMP)", [when_value(since)]


@dataclass(frozen=True)
class Select:
    """One query over a relation and its positional parameters."""

    sql: str
    params: list[Any]


def select(relation: str, *, since: When = None, until: When = None, limit: int | None = None,
           session_id: str | None = None, server: str | None = None,
           parts: Sequence[str] | None = None) -> Select:
    """The rows of `relation` matching the filters, in the relation's order (messages by session and seq,
    the others by time); with `limit`, only the newest N. `parts` are the tables the relation's view unions
    (default: the view itself): the newest N are taken from each part first, because DuckDB does not push a
    top-N through a view's UNION ALL."""
    where: list[str] = []
    params: list[Any] = []
    for column, value in (("session_id", session_id), ("server", server)):
        if value is not None:
            where.append(f'"{column}" = ?')
            params.append(value)
    time_col = f'"{TIME_COLUMN[relation]}"'
    if since is not None:
        where.append(f"{time_col} >= CAST(? AS TIMESTAMP)")
        params.append(when_value(since))
    if until is not None:
        where.append(f"{time_col} < CAST(? AS TIMESTAMP)")
        params.append(when_value(until))
    order = "session_id, seq" if relation == "messages" else time_col
    cond = f" WHERE {' AND '.join(where)}" if where else ""
    if limit is None:
        return Select(f"SELECT * FROM {relation}{cond} ORDER BY {order}", params)
    top = f"ORDER BY {time_col} DESC LIMIT {int(limit)}"
    sources = list(parts or [relation])
    if len(sources) == 1:
        newest = f"SELECT * FROM {sources[0]}{cond} {top}"
    else:
        newest = "SELECT * FROM (" + " UNION ALL BY NAME ".join(
            f"(SELECT * FROM {part}{cond} {top})" for part in sources) + f") {top}"
    return Select(f"SELECT * FROM ({newest}) ORDER BY {order}", params * len(sources))


def empty_relation(relation: str) -> str:
    """A row-less SELECT with this code's columns of `relation`, typed: what a missing table reads as."""
    nulls = ", ".join(f'NULL::{SQL_TYPE[k]} AS "{c}"' for c, k in COLUMNS[relation].items())
    return f"{nulls} LIMIT 0"


def known_columns(relation: str, present: Collection[str], *, cast: bool = False) -> list[str]:
    """This code's columns of `relation` in order: those `present` as they are (CAST to this code's type
    when `cast`, for Parquet written by other versions), the missing ones as typed NULLs."""
    out: list[str] = []
    for c, k in COLUMNS[relation].items():
        if c not in present:
            out.append(f'NULL::{SQL_TYPE[k]} AS "{c}"')
        else:
            out.append(f'CAST("{c}" AS {SQL_TYPE[k]}) AS "{c}"' if cast else f'"{c}"')
    return out


def quote_path(path: Path) -> str:
    """`path` inside a single-quoted SQL string literal."""
    return str(path).replace("'", "''")
