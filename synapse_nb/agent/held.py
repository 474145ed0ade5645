"""HeldResults: the tool results the kernel keeps whole (a DataFrame for a table, the parsed value otherwise) under
short names, so the model can be given a summary (agent/held_summary.py) and query the whole by name.

A result is held when it is a table of more than `HoldPolicy.table_rows` rows, or its text is over the hold
budget (`HoldPolicy.over_tokens`, per server settable). The registry is one kernel's (the notebook state holds
it); each held value is also put in the user's namespace under its name, when the registry is given one.
"""

from __future__ import annotations

import json
import keyword
import re
import threading
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from ..errors import AgentError
from ..tables import Table, table_of
from ..types import ToolResult

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_HOLD_OVER",
    "DEFAULT_TABLE_ROWS",
    "HeldResult",
    "HeldResults",
    "HoldPolicy",
    "frame_of",
]

CHARS_PER_TOKEN = 4
"""How many characters of a tool result count as one token when it is weighed against the hold budget (the
usual rule of thumb for English and JSON; a budget is a size, not a bill)."""
DEFAULT_HOLD_OVER = 4000
"""Tokens: a result whose text is larger is held (about 16,000 characters, under the 20,000 characters that
were once cut off)."""
DEFAULT_TABLE_ROWS = 20
"""A table of more rows than this is held, whatever its size: a summary shows this many rows at most."""

Kind = Literal["table", "json", "text"]
_NAME_CHARS = re.compile(r"[^0-9A-Za-z_]+")


@dataclass(frozen=True, slots=True)
class HoldPolicy:
    """When a turn or a call holds a result: a table of more than `table_rows` rows, or a text of more than
    `over_tokens` tokens (`servers` maps a server's name to its own budget). A budget of 0 holds nothing of
    that server (the old way: the model sees the text, cut at the turn's `max_result_chars`)."""

    over_tokens: int = DEFAULT_HOLD_OVER
    table_rows: int = DEFAULT_TABLE_ROWS
    servers: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.over_tokens < 0 or self.table_rows < 0 or any(v < 0 for v in self.servers.values()):
            raise AgentError("a hold budget is a number of tokens, 0 or more (0: hold nothing)")

    def budget(self, server: str | None) -> int:
        """The hold budget in tokens for a result of `server` (None: a native tool)."""
        return self.servers.get(server, self.over_tokens) if server is not None else self.over_tokens

    def holds(self, result: ToolResult, server: str | None) -> bool:
        """Whether this result is held (a table of many rows, or more text than the budget)."""
        budget = self.budget(server)
        if budget == 0 or result.is_error:
            return False
        if len(result.text) > budget * CHARS_PER_TOKEN:
            return True
        table = table_of(result)
        return table is not None and len(table.rows) > self.table_rows


@dataclass(frozen=True, slots=True)
class HeldResult:
    """One held result: `value` (a DataFrame when `kind` is "table", else the parsed JSON value or the text) under
    `name`, from `tool` (its qualified name) in call `call_id`; `chars` is the size of the text the tool returned."""

    name: str
    value: Any
    kind: Kind
    tool: str
    call_id: str
    chars: int

    @property
    def tokens(self) -> int:
        """About how many tokens the whole result would have cost the model (CHARS_PER_TOKEN)."""
        return -(-self.chars // CHARS_PER_TOKEN)

    @property
    def shape(self) -> str:
        """`50,000 rows x 4 columns`, `a JSON object of 12 keys`, `text of 3,000 lines`."""
        if isinstance(self.value, pd.DataFrame):
            rows, cols = self.value.shape
            return f"{rows:,} row{'s' * (rows != 1)} x {cols:,} column{'s' * (cols != 1)}"
        if isinstance(self.value, Mapping):
            return f"a JSON object of {len(self.value):,} keys"
        if isinstance(self.value, list):
            return f"a JSON list of {len(self.value):,} items"
        if isinstance(self.value, str):
            return f"text of {self.value.count(chr(10)) + 1:,} lines"
        return f"a JSON {type(self.value).__name__}"

    def frame(self) -> pd.DataFrame:
        """What SQL sees under this name: the DataFrame of a table, else one row with the text as `value`
        (JSON text for a parsed value, so DuckDB's JSON functions reach inside it)."""
        if isinstance(self.value, pd.DataFrame):
            return self.value
        text = self.value if isinstance(self.value, str) else json.dumps(self.value, ensure_ascii=False, default=str)
        return pd.DataFrame({"value": [text]})


class HeldResults:
    """The held results of one kernel, by name, in the order held; each also a variable of `namespace` (the
    user's), which `drop` and `clear` remove again. Safe to use from the loop and worker threads."""

    def __init__(self, namespace: MutableMapping[str, Any] | None = None) -> None:
        self.namespace = namespace
        self._held: dict[str, HeldResult] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, name: object) -> bool:
        return name in self._held

    def __iter__(self) -> Iterator[HeldResult]:
        return iter(list(self._held.values()))

    def get(self, name: str) -> HeldResult | None:
        return self._held.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._held)

    def frames(self) -> dict[str, pd.DataFrame]:
        """Every held result as the table SQL sees under its name (HeldResult.frame)."""
        return {held.name: held.frame() for held in self}

    def hold(self, result: ToolResult, *, tool: str, call_id: str, name: str | None = None) -> HeldResult:
        """Keep `result` whole under `name` (None: the tool's name and a number, e.g. `query_1`) and return it.

        A table becomes a DataFrame; other text is parsed as JSON when it is JSON, else kept as text."""
        value, kind = _value_of(result)
        chars = len(result.text) or len(json.dumps(result.structured_content, default=str))
        with self._lock:
            chosen = self._check_name(name) if name is not None else self._new_name(tool)
            held = HeldResult(chosen, value, kind, tool, call_id, chars)
            self._held[chosen] = held
            if self.namespace is not None:
                self.namespace[chosen] = value
        return held

    def drop(self, name: str) -> HeldResult:
        """Forget one held result (and its variable, when that still holds it); AgentError when none has that name."""
        with self._lock:
            held = self._held.pop(name, None)
            if held is None:
                known = ", ".join(self._held) or "none are held"
                raise AgentError(f"no held result named {name!r} (held: {known})")
            self._forget(held)
        return held

    def clear(self) -> list[HeldResult]:
        """Forget every held result (and their variables); returns what was held."""
        with self._lock:
            gone = list(self._held.values())
            self._held.clear()
            for held in gone:
                self._forget(held)
        return gone

    def _forget(self, held: HeldResult) -> None:
        if self.namespace is not None and self.namespace.get(held.name) is held.value:
            del self.namespace[held.name]

    def _check_name(self, name: str) -> str:
        if not name.isidentifier() or keyword.iskeyword(name):
            raise AgentError(f"{name!r} cannot name a held result: use letters, digits and _ (a Python name)")
        return name

    def _new_name(self, tool: str) -> str:
        """`TOOL_N` from the tool's own name (the part after `SERVER__`), the first N free in the registry and
        the namespace."""
        base = _NAME_CHARS.sub("_", tool.rsplit("__", 1)[-1]).strip("_").lower() or "result"
        if base[0].isdigit():
            base = f"r_{base}"
        n = 1
        while f"{base}_{n}" in self._held or (self.namespace is not None and f"{base}_{n}" in self.namespace):
            n += 1
        return f"{base}_{n}"


def frame_of(table: Table) -> pd.DataFrame:
    """A table as a DataFrame: column names made unique (`a`, `a_2`), text columns that are all numbers (CSV,
    Markdown) read as numbers, and the fields the server sent beside the rows (`warning`, `truncated` ...) in its
    `.attrs`, as `%mcp call`'s `.df` has them."""
    seen: dict[str, int] = {}
    names: list[str] = []
    for column in table.columns:
        seen[column] = seen.get(column, 0) + 1
        names.append(column if seen[column] == 1 else f"{column}_{seen[column]}")
    frame = pd.DataFrame(list(table.rows), columns=names)
    for column in frame.columns:
        values = frame[column]
        if (values.dtype == object or pd.api.types.is_string_dtype(values)) and values.map(
                lambda v: isinstance(v, str)).all():
            try:
                frame[column] = pd.to_numeric(values)
            except (ValueError, TypeError):
                pass
    frame.attrs.update(table.meta)
    return frame


def _value_of(result: ToolResult) -> tuple[Any, Kind]:
    table = table_of(result)
    if table is not None:
        return frame_of(table), "table"
    if result.structured_content is not None:
        return result.structured_content, "json"
    text = result.text
    if text.strip()[:1] in ("[", "{"):
        try:
            return json.loads(text), "json"
        except ValueError:
            pass
    return text, "text"
