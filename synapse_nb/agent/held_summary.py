"""What the model is told of a held result: a faithful summary of bounded size, whatever the result's size.

It says what the value is, its shape, columns and types, a few rows, simple statistics, its size, its name,
and how to reach the rest (`results__sql`, and with the kernel tools Python by name): nothing is cut without
saying how much was seen.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..tables import meta_items
from .held import HeldResult

__all__ = ["SUMMARY_CHARS", "SUMMARY_ROWS", "summarize"]

SUMMARY_CHARS = 4000
"""The most characters a summary has, whatever the result's size."""
SUMMARY_ROWS = 5
"""Rows of a held table shown in its summary (fewer when they do not fit)."""
_CELL = 60  # characters of one cell or one statistic shown
_PREVIEW = 1200  # characters of a held text or JSON value shown
_FIELDS = 600  # characters of the fields sent beside a held table's rows (a warning that rows were cut)


def summarize(held: HeldResult, *, sql_tool: str, python: bool = False, limit: int = SUMMARY_CHARS) -> str:
    """The summary of `held` the model sees in place of the result, at most `limit` characters. `sql_tool` is the
    tool that queries held results; `python`: the kernel's Python tools are offered too."""
    head = (
        f"[held: the kernel holds this whole result of {held.tool} as `{held.name}` ({_kind(held)}, {held.shape}; "
        f"{held.chars:,} characters, about {held.tokens:,} tokens). You see a summary, not all of it.]"
    )
    how = _how(held, sql_tool, python)
    room = limit - len(head) - len(how) - 4
    body = _table_body(held.value, room) if isinstance(held.value, pd.DataFrame) else _value_body(held, room)
    return "\n".join(p for p in (head, body, how) if p)[:limit]


def _kind(held: HeldResult) -> str:
    return {"table": "a DataFrame", "json": "parsed JSON", "text": "text"}[held.kind]


def _how(held: HeldResult, sql_tool: str, python: bool) -> str:
    name = held.name
    if held.kind == "table":
        frame: pd.DataFrame = held.value
        column = next((str(c) for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])), None)
        number = next((str(c) for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])), None)
        example = (f'SELECT "{column}", count(*), sum("{number}") FROM {name} GROUP BY 1'
                   if column and number else f"SELECT count(*) FROM {name}")
        text = f"To use all of it, call {sql_tool} with DuckDB SQL over the table `{name}`, e.g. {example}."
    else:
        text = (f"To read the rest, call {sql_tool} with DuckDB SQL over `{name}`, one row whose column `value` "
                f"holds the text: e.g. SELECT substr(value, {_PREVIEW + 1}, 4000) FROM {name}"
                + (f", or json_extract(value, '$.KEY') FROM {name}." if held.kind == "json" else "."))
    if python:
        text += f" With kernel__run_python, `{name}` is a variable of the kernel."
    return text


def _table_body(frame: pd.DataFrame, room: int) -> str:
    rows, cols = frame.shape
    lines = [f"columns ({cols:,}; name: type, non-null, statistics):"]
    if frame.attrs:  # what the server said beside its rows (a warning that it cut them) comes first
        beside = "; ".join(f"{name}: {text}" for name, text, _ in meta_items(frame.attrs))
        lines.insert(0, _cut(f"the server sent beside the rows: {beside}", _FIELDS))
    used = sum(len(line) + 1 for line in lines)
    column_room = room * 3 // 5
    shown = 0
    for name in frame.columns:
        values = frame[name]
        filled = int(values.notna().sum())
        line = _cut(f"- {_cut(str(name))}: {values.dtype}, {filled:,} non-null, {_stats(values)}", 240)
        if used + len(line) + 1 > column_room:
            break
        lines.append(line)
        used += len(line) + 1
        shown += 1
    if shown < cols:
        lines.append(f"... and {cols - shown:,} more columns (SELECT * FROM ... LIMIT 0 lists them)")
    sample = _sample(frame, room - used - 80)
    if sample:
        n = sample.count("\n")
        lines.append(f"{'all ' if n >= rows else 'the first '}{n:,} of {rows:,} rows (CSV, long cells cut):")
        lines.append(sample)
    return "\n".join(lines)


def _stats(values: pd.Series) -> str:
    values = values.dropna()
    if values.empty:
        return "all null"
    if pd.api.types.is_bool_dtype(values):
        return f"{int(values.sum()):,} true"
    if pd.api.types.is_numeric_dtype(values):
        return (f"min {_num(values.min())}, max {_num(values.max())}, mean {_num(values.mean())}, "
                f"sum {_num(values.sum())}")
    try:
        counts = values.astype(str).value_counts()
    except TypeError:
        return "values of mixed kinds"
    top = ", ".join(f"{_cut(str(v), 24)} ({c:,})" for v, c in counts.head(3).items())
    return f"{len(counts):,} distinct; most common: {top}"


def _num(value: Any) -> str:
    if isinstance(value, float) or hasattr(value, "is_integer"):
        number = float(value)
        return f"{int(number):,}" if number.is_integer() and abs(number) < 1e15 else f"{number:,.6g}"
    return _cut(str(value), 24)


def _sample(frame: pd.DataFrame, room: int) -> str:
    """The first rows as CSV (header included), as many of SUMMARY_ROWS as fit in `room` characters."""
    if room < 40:
        return ""
    head = frame.head(SUMMARY_ROWS).copy()
    for column in head.columns:
        head[column] = head[column].map(lambda v: _cut(str(v)) if not isinstance(v, int | float) else v)
    lines = head.to_csv(index=False).splitlines()
    kept: list[str] = []
    used = 0
    for line in lines:
        line = _cut(line, 400)
        if used + len(line) + 1 > room:
            break
        kept.append(line)
        used += len(line) + 1
    return "\n".join(kept) if len(kept) > 1 else ""


def _value_body(held: HeldResult, room: int) -> str:
    value = held.value
    lines: list[str] = []
    if isinstance(value, Mapping):
        members = ", ".join(f"{_cut(str(k), 40)} ({_what(v)})" for k, v in list(value.items())[:40])
        more = f", and {len(value) - 40:,} more" if len(value) > 40 else ""
        lines.append(_cut(f"keys: {members}{more}", room // 2))
    elif isinstance(value, list):
        kinds = sorted({type(v).__name__ for v in value[:1000]})
        lines.append(f"items of kind {', '.join(kinds)}; the first: {_cut(json.dumps(value[0], default=str), 200)}"
                     if value else "no items")
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    preview = text[: max(0, min(_PREVIEW, room - sum(len(x) for x in lines) - 80))]
    lines.append(f"its first {len(preview):,} of {len(text):,} characters:")
    lines.append(preview)
    return "\n".join(lines)


def _what(value: Any) -> str:
    if isinstance(value, list):
        return f"list of {len(value):,}"
    if isinstance(value, Mapping):
        return f"object of {len(value):,} keys"
    if isinstance(value, str):
        return f"text of {len(value):,} characters" if len(value) > 40 else json.dumps(value)
    return _cut(json.dumps(value, default=str), 40)


def _cut(text: str, limit: int = _CELL) -> str:
    return text if len(text) <= limit else f"{text[: limit - 1]}…"
