"""`{expr}` in a %%synapse prompt: values from the user namespace, rendered compactly for the model.

Only lookups are evaluated, never code: a name, then any chain of `.attribute` and `[index]` where the
index is an integer or a quoted string (`{df}`, `{cfg.path}`, `{rows[0]}`, `{d['key'].name}`).
Attributes starting with an underscore are refused, and so is anything else (calls, operators,
comprehensions): such text, and names that do not exist, stay in the prompt literally. `{{` and `}}`
give literal braces. Note that an attribute lookup runs the object's property code, as in Python.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_VALUE_CHARS", "MISSING", "interpolate", "render_value", "resolve"]

MAX_VALUE_CHARS = 4000
"""Longest rendering of one interpolated value; longer ones are cut with a note."""

_PLACEHOLDER = re.compile(
    r"\{\{|\}\}|\{(?P<expr>[A-Za-z_]\w*(?:\s*(?:\.\s*[A-Za-z]\w*|\[\s*(?:-?\d+|'[^'\\]*'|\"[^\"\\]*\")\s*\]))*)\}"
)
_STEP = re.compile(r"\s*(?:\.\s*(?P<attr>[A-Za-z]\w*)|\[\s*(?P<index>-?\d+|'[^'\\]*'|\"[^\"\\]*\")\s*\])")
MISSING = object()
"""What `resolve` returns when an expression is not a plain lookup, or the lookup fails."""


def interpolate(prompt: str, namespace: Mapping[str, Any], *, max_chars: int = MAX_VALUE_CHARS) -> str:
    """The prompt with each resolvable `{expr}` replaced by its rendered value."""

    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole == "{{":
            return "{"
        if whole == "}}":
            return "}"
        value = resolve(match.group("expr"), namespace)
        return whole if value is MISSING else render_value(value, max_chars=max_chars)

    return _PLACEHOLDER.sub(replace, prompt)


def resolve(expr: str, namespace: Mapping[str, Any]) -> Any:
    """The value a lookup expression names (`name`, `.attr`, `[0]`, `['key']` steps), or MISSING.

    The rules of the module docstring: no calls, no operators, no attribute starting with `_`.
    """
    head = re.match(r"[A-Za-z_]\w*", expr)
    assert head is not None  # the placeholder pattern starts with a name
    if head.group(0) not in namespace:
        return MISSING
    value = namespace[head.group(0)]
    pos = head.end()
    while pos < len(expr):
        step = _STEP.match(expr, pos)
        if step is None:
            return MISSING
        pos = step.end()
        try:
            if step.group("attr") is not None:
                value = getattr(value, step.group("attr"))
            else:
                value = value[ast.literal_eval(step.group("index"))]
        except Exception:  # a lookup that fails leaves the text as written
            return MISSING
    return value


def render_value(value: Any, *, max_chars: int = MAX_VALUE_CHARS) -> str:
    """How a value reads in a prompt: DataFrames as schema + head, containers as JSON, others as str()."""
    kind = f"{type(value).__module__.split('.')[0]}.{type(value).__name__}"
    if kind == "pandas.DataFrame":
        text = _dataframe(value)
    elif kind == "pandas.Series":
        text = _series(value)
    elif isinstance(value, str):
        text = value
    elif isinstance(value, dict | list | tuple) and _jsonable(value):
        text = json.dumps(value, ensure_ascii=False, default=str)
    else:
        text = str(value)
    if len(text) > max_chars:
        text = text[:max_chars] + f"\n[... {len(text) - max_chars} more characters cut]"
    return text


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _dataframe(df: Any, head: int = 5) -> str:
    rows, cols = df.shape
    schema = ", ".join(f"{name} ({dtype})" for name, dtype in zip(df.columns, df.dtypes, strict=True))
    body = df.head(head).to_string(max_colwidth=40, show_dimensions=False)
    more = f" (first {head} shown)" if rows > head else ""
    return f"DataFrame with {rows} rows x {cols} columns: {schema}\nRows{more}:\n{body}"


def _series(series: Any, head: int = 5) -> str:
    name = "" if series.name is None else f" {series.name!r}"
    body = series.head(head).to_string(max_rows=head)
    more = f" (first {head} shown)" if len(series) > head else ""
    return f"Series{name} with {len(series)} values ({series.dtype})\nValues{more}:\n{body}"
