"""Tables inside tool results: rows and columns from structured content, JSON rows, a Markdown table or CSV.

One reader serves the cell's tool block (an HTML table with a "raw" toggle), `result_frame` (a DataFrame)
and the results the agent holds for the model (agent/held.py), so all agree on what counts as a table.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .types import ToolResult

__all__ = ["Table", "csv_table", "markdown_table", "table_of", "table_of_value"]

_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


@dataclass(frozen=True, slots=True)
class Table:
    """Column names and rows (each row as long as `columns`)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


def table_of(result: ToolResult) -> Table | None:
    """The table a result holds: its structured content first, then its text (JSON rows, Markdown or CSV)."""
    if result.structured_content is not None:
        table = table_of_value(result.structured_content)
        if table is not None:
            return table
    text = result.text.strip()
    if text[:1] in ("[", "{"):
        try:
            table = table_of_value(json.loads(text))
        except ValueError:
            table = None
        if table is not None:
            return table
    return markdown_table(text) or csv_table(text)


def table_of_value(value: Any) -> Table | None:
    """A JSON value as a table: a list of objects, `{"columns": [...], "rows": [[...]]}`, or an object
    with exactly one list-of-objects member (`{"rows": [{...}]}`)."""
    if isinstance(value, Mapping):
        columns, rows = value.get("columns"), value.get("rows")
        if _names(columns) and isinstance(rows, list) and all(isinstance(r, list) for r in rows):
            names = tuple(str(c if isinstance(c, str) else c.get("name")) for c in columns)  # type: ignore[union-attr]
            return Table(names, tuple(_pad(r, len(names)) for r in rows))
        lists = [v for v in value.values() if _records(v)]
        if len(lists) == 1:
            return table_of_value(lists[0])
        return None
    if _records(value):
        columns_seen: dict[str, None] = {}
        for record in value:
            columns_seen.update(dict.fromkeys(str(k) for k in record))
        names = tuple(columns_seen)
        return Table(names, tuple(tuple(r.get(c) for c in names) for r in value))
    return None


def markdown_table(text: str) -> Table | None:
    """A GitHub-style pipe table that is the whole text (a header, a `---` line, rows)."""
    head = _first_lines(text, 2)  # most text is no table: say so without splitting all of it (10 MB results)
    if len(head) < 2 or not _SEPARATOR.match(head[1]) or "|" not in head[0]:
        return None
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not all("|" in line for line in lines):
        return None
    columns = tuple(_cells(lines[0]))
    rows = tuple(_pad(_cells(line), len(columns)) for line in lines[2:])
    return Table(columns, rows)


CSV_MIN_ROWS = 2
"""A text is read as CSV only with a header and at least this many rows, all as wide as the header."""


def csv_table(text: str) -> Table | None:
    """Comma- or tab-separated text with a header line, at least two columns and CSV_MIN_ROWS rows, every
    row as wide as the header (prose with commas is not a table). Cells stay text."""
    head = _first_lines(text, 2)
    if len(head) < 2:
        return None
    delimiter = "\t" if "\t" in head[0] else ","
    header = next(csv.reader([head[0]], delimiter=delimiter), [])
    names = [c.strip() for c in header]
    if len(names) < 2 or not all(_header_name(n) for n in names) or len(set(names)) != len(names):
        return None
    if _csv_width(head[1], delimiter) != len(names):
        return None
    rows = [row for row in csv.reader(io.StringIO(text.strip()), delimiter=delimiter) if row]
    if len(rows) < CSV_MIN_ROWS + 1 or any(len(row) != len(names) for row in rows):
        return None
    return Table(tuple(names), tuple(tuple(row) for row in rows[1:]))


def _header_name(name: str) -> bool:
    """A column name, not a clause of prose: short, a few words at most, no sentence's end."""
    return 0 < len(name) <= 64 and name.count(" ") <= 3 and not name.endswith((".", "!", "?", ":"))


def _csv_width(line: str, delimiter: str) -> int:
    return len(next(csv.reader([line], delimiter=delimiter), []))


def _first_lines(text: str, n: int) -> list[str]:
    """The first `n` lines of `text` that are not blank (fewer when it has fewer), read from the start only."""
    found: list[str] = []
    start = 0
    while len(found) < n and start <= len(text):
        end = text.find("\n", start)
        line = text[start:] if end < 0 else text[start:end]
        if line.strip():
            found.append(line)
        if end < 0:
            break
        start = end + 1
    return found


def _cells(line: str) -> list[str]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    cells = re.split(r"(?<!\\)\|", line)
    return [c.strip().replace("\\|", "|") for c in cells]


def _pad(row: Sequence[Any], width: int) -> tuple[Any, ...]:
    cells = tuple(row)[:width]
    return cells + (None,) * (width - len(cells))


def _names(columns: Any) -> bool:
    return isinstance(columns, list) and bool(columns) and all(
        isinstance(c, str) or (isinstance(c, Mapping) and isinstance(c.get("name"), str)) for c in columns
    )


def _records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)
