"""Tables inside tool results: rows and columns from structured content, JSON rows, Markdown tables or CSV,
with the fields found beside them (a warning, `truncated`, a cursor) kept as the table's `meta`.

One reader serves the cell's tool block (an HTML table with a "raw" toggle), `result_frame` (a DataFrame)
and the results the agent holds for the model (agent/held.py), so all agree on what counts as a table.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .types import ToolResult

__all__ = [
    "META_CHARS", "Table", "csv_table", "markdown_table", "meta_items", "table_of", "table_of_value", "tables_of",
]

META_CHARS = 400  # a field beside a table is shown up to this many characters (all of it stays in `meta`)
# Fields that say the table is not the whole answer: shown first, in the warning colour.
WARNING_FIELDS = frozenset({"warning", "warnings", "truncated", "error", "errors", "message", "note", "notice",
                            "hasmore", "has_more", "nextcursor", "next_cursor", "next", "limit", "partial"})

RECENT = 4
"""Results whose tables are remembered (by identity): a 50,000-row result takes a quarter of a second to read."""
_RECENT: deque[tuple[ToolResult, tuple[Table, ...]]] = deque(maxlen=RECENT)

_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


@dataclass(frozen=True, slots=True)
class Table:
    """Column names and rows (each row as long as `columns`).

    `meta`: the other fields of the object the table was found in (`warning`, `truncated`, `nextCursor`,
    row counts ...), by their path (`page.next` for a field of a nested object); a table that was the
    whole result has none. `path`: where the table was (`customers`, `data.rows`; "" for the whole value)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    meta: Mapping[str, Any] = field(default_factory=dict)
    path: str = ""


def table_of(result: ToolResult) -> Table | None:
    """The table a result holds: its structured content first, then its text (JSON rows or Markdown).

    None when it holds none, or several (see `tables_of`: the user picks one by its path)."""
    found = tables_of(result)
    return found[0] if len(found) == 1 else None


def tables_of(result: ToolResult) -> list[Table]:
    """Every table a result holds, in order: those of its structured content when it has any, else those
    of its text (a JSON value, or Markdown pipe tables, each with the prose around it as `meta["text"]`).

    Read once per result object (RECENT): the kernel holding a result reads it in a worker thread, then the
    cell showing it, `.df` and the summary read it again."""
    for seen, known in tuple(_RECENT):
        if seen is result:
            return list(known)
    found = _read_tables(result)
    _RECENT.append((result, tuple(found)))
    return found


def _read_tables(result: ToolResult) -> list[Table]:
    if result.structured_content is not None:
        found = _tables_in(result.structured_content)
        if found:
            return found
    return _text_tables(result.text)


def table_of_value(value: Any) -> Table | None:
    """A JSON value as a table: a list of objects, `{"columns": [...], "rows": [[...]]}`, or an object
    with exactly one table among its members (a list of objects, a Markdown table as a string, or a nested
    object holding one), whose other members become the table's `meta`."""
    found = _tables_in(value)
    return found[0] if len(found) == 1 else None


def _tables_in(value: Any, depth: int = 0) -> list[Table]:
    """The tables of a JSON value, each with the fields beside it (up to three objects deep)."""
    if _records(value):
        columns_seen: dict[str, None] = {}
        for record in value:
            columns_seen.update(dict.fromkeys(str(k) for k in record))
        names = tuple(columns_seen)
        return [Table(names, tuple(tuple(r.get(c) for c in names) for r in value))]
    if not isinstance(value, Mapping):
        return []
    columns, rows = value.get("columns"), value.get("rows")
    if _names(columns) and isinstance(rows, list) and all(isinstance(r, list) for r in rows):
        names = tuple(str(c if isinstance(c, str) else c.get("name")) for c in columns)  # type: ignore[union-attr]
        meta = {k: v for k, v in value.items() if k not in ("columns", "rows")}
        return [Table(names, tuple(_pad(r, len(names)) for r in rows), meta)]
    inner: dict[str, list[Table]] = {}
    for key, member in value.items():
        if isinstance(member, str):
            inner[key] = _text_tables(member) if "|" in member else []
        elif depth < 3 and isinstance(member, Mapping | list):
            inner[key] = _tables_in(member, depth + 1)
    # beside each table: the members that hold no table (another table is no field of this one)
    beside = {k: v for k, v in value.items() if not inner.get(k)}
    found: list[Table] = []
    for key, tables in inner.items():
        for table in tables:
            # a lone member is a wrapper (fastmcp's `{"result": ...}`): its name tells nothing
            path = table.path if len(value) == 1 else f"{key}.{table.path}" if table.path else str(key)
            meta = dict(beside)
            meta.update({f"{key}.{k}" if k != "text" else k: v for k, v in table.meta.items()})
            found.append(Table(table.columns, table.rows, meta, path))
    return found


def _text_tables(text: str) -> list[Table]:
    """The tables of a text: a JSON value's, or its Markdown pipe tables (the prose around them as `text`)."""
    stripped = text.strip()
    if stripped[:1] in ("[", "{"):
        try:
            return _tables_in(json.loads(stripped))
        except ValueError:
            pass
    whole = markdown_table(stripped) or csv_table(stripped)
    if whole is not None:
        return [whole]
    if "|" not in text:
        return []
    return _tables_within(text)


def markdown_table(text: str) -> Table | None:
    """A GitHub-style pipe table that is the whole text (a header, a `---` line, rows)."""
    head = _first_lines(text, 2)  # most text is no table: say so without splitting all of it (10 MB results)
    if len(head) < 2 or not _SEPARATOR.match(head[1]) or "|" not in head[0]:
        return None
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not all("|" in line for line in lines):
        return None
    return _pipe_table(lines)


def _pipe_table(lines: Sequence[str]) -> Table:
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


def _tables_within(text: str) -> list[Table]:
    """Pipe tables inside prose (a header line with `|`, a `---` line, then the lines with `|`); each keeps
    the prose of the whole text (without the tables) as `meta["text"]`, so nothing said beside it is lost."""
    lines = text.splitlines()
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(lines) - 1:
        if "|" in lines[i] and _SEPARATOR.match(lines[i + 1]) and "|" in lines[i + 1] + lines[i]:
            end = i + 2
            while end < len(lines) and "|" in lines[end] and lines[end].strip():
                end += 1
            spans.append((i, end))
            i = end
        else:
            i += 1
    if not spans:
        return []
    kept: list[str] = []
    last = 0
    for start, end in spans:
        kept.extend(lines[last:start])
        last = end
    kept.extend(lines[last:])
    prose = "\n".join(kept).strip()
    meta = {"text": re.sub(r"\n{3,}", "\n\n", prose)} if prose else {}
    return [Table(t.columns, t.rows, meta, str(n) if len(spans) > 1 else "") for n, t in
            enumerate(_pipe_table(lines[s:e]) for s, e in spans)]


def meta_items(meta: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """The fields beside a table as `(name, value as text, is a warning)`, warnings first: a string as
    written, other values as compact JSON, each cut to META_CHARS with the count of what is left out."""
    items: list[tuple[str, str, bool]] = []
    for name, value in meta.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        if len(text) > META_CHARS:
            text = f"{text[:META_CHARS]}… ({len(text) - META_CHARS:,} more characters)"
        leaf = name.rsplit(".", 1)[-1].lower()
        items.append((name, text, leaf in WARNING_FIELDS or "warn" in leaf or "truncat" in leaf))
    return sorted(items, key=lambda item: not item[2])


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
