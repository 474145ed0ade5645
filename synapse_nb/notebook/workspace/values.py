"""What the kernel tools say about values: secret-looking names, bounded reprs, variable rows, DataFrame descriptions.

Pure functions over Python values (no IPython), so they are tested on their own. pandas, numpy,
polars and pyarrow are recognised by their type's module and never imported here.
"""

from __future__ import annotations

import inspect
import os
import re
import reprlib
import sys
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any

from ..turns.view import size_text

__all__ = [
    "MAX_DESCRIBE_CHARS",
    "MAX_VALUE_CHARS",
    "MAX_VARIABLES",
    "bounded",
    "bounded_repr",
    "describe_frame",
    "is_frame",
    "is_secret_name",
    "kind_of",
    "list_rows",
    "refusal",
    "secret_values",
    "user_variables",
    "variable_row",
]

MAX_VALUE_CHARS = 4000
"""Longest repr a kernel tool returns for one value."""
MAX_DESCRIBE_CHARS = 12000
"""Longest description of one DataFrame (dtypes, nulls, statistics, first rows)."""
MAX_VARIABLES = 200
"""Most variables one `list_variables` call lists (the rest are counted)."""
MAX_COLUMNS = 60
"""Most columns a description details (the rest are counted)."""

_SECRET_NAME = re.compile(r"key|token|secret|passw", re.IGNORECASE)
_FRAMES = ("pandas.DataFrame", "pandas.Series", "polars.DataFrame", "polars.Series", "pyarrow.Table")


def is_secret_name(name: str) -> bool:
    """True for names that look like they hold a secret: `*key*`, `*token*`, `*secret*`, `*password*` (any case)."""
    return _SECRET_NAME.search(name) is not None


def refusal(name: str, value: Any) -> str | None:
    """Why a value may not be shown (a secret-looking name, the environment), or None when it may."""
    if is_secret_name(name):
        return f"{name!r} looks like a secret (its name has key, token, secret or password); its value is never shown"
    if value is os.environ or isinstance(value, type(os.environ)):
        return "environment variables are never shown"
    return None


def secret_values(namespace: Mapping[str, Any], *, limit: int = 2000) -> list[str]:
    """String values held under secret-looking names: variables, and keys of dicts (nested, bounded walk).

    They are masked in every result, so printing `cfg` or `api_key` in run_python shows `[REDACTED]`.
    """
    found: list[str] = []
    budget = [limit]

    def walk(name: str, value: Any, depth: int) -> None:
        budget[0] -= 1
        if budget[0] < 0:
            return
        if isinstance(value, str):
            if is_secret_name(name):
                found.append(value)
        elif isinstance(value, Mapping) and depth < 3 and value is not os.environ:
            for key, item in list(value.items())[:200]:
                walk(str(key), item, depth + 1)

    for name, value in list(namespace.items()):
        if not name.startswith("_"):
            walk(name, value, 0)
    return found


def kind_of(value: Any) -> str:
    """`module.Type` by the top-level package, e.g. `pandas.DataFrame`, `numpy.ndarray`, `builtins.dict`."""
    return f"{type(value).__module__.split('.')[0]}.{type(value).__name__}"


def is_frame(value: Any) -> bool:
    """True for tables `describe_frame` understands: pandas/polars DataFrame and Series, pyarrow Table."""
    return kind_of(value) in _FRAMES


def bounded(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    """`text` cut to `limit` characters, with a note saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit:,} more characters cut]"


class _Repr(reprlib.Repr):
    """reprlib with dicts in insertion order (reprlib sorts them; a sorted result would misreport rankings)."""

    def repr_dict(self, x: dict[Any, Any], level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        items = [f"{self.repr1(k, level - 1)}: {self.repr1(v, level - 1)}" for k, v in list(x.items())[: self.maxdict]]
        return "{" + ", ".join(items) + (", ...}" if len(x) > self.maxdict else "}")


_REPR = _Repr()
_REPR.maxlevel = 4
_REPR.maxstring = 400
_REPR.maxother = 400
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxfrozenset = _REPR.maxdeque = _REPR.maxarray = 50
_REPR.maxdict = 50


def bounded_repr(value: Any, limit: int = MAX_VALUE_CHARS) -> str:
    """A repr that stays short for big containers and long strings; tables print their own bounded form."""
    kind = kind_of(value)
    try:
        if kind in ("pandas.DataFrame", "pandas.Series"):
            text = value.to_string(max_rows=20, max_cols=20, max_colwidth=60, show_dimensions=True) if kind == (
                "pandas.DataFrame") else value.to_string(max_rows=20, length=True, dtype=True, name=True)
        elif kind in ("numpy.ndarray", "polars.DataFrame", "polars.Series", "pyarrow.Table"):
            text = repr(value)  # these bound their own repr
        else:
            text = _REPR.repr(value)
    except Exception as exc:  # a broken __repr__ is the value's problem, not the tool's
        text = f"<{kind} whose repr raised {type(exc).__name__}>"
    return bounded(text, limit)


# ---------------------------------------------------------------------------------------------- variables


def user_variables(namespace: Mapping[str, Any], hidden: Mapping[str, Any] | None = None) -> list[str]:
    """The names a user made: not `_`-prefixed, not IPython's own (`hidden`), not modules, functions or classes."""
    names: list[str] = []
    for name, value in list(namespace.items()):
        if name.startswith("_") or (hidden is not None and name in hidden and hidden[name] is value):
            continue
        if inspect.ismodule(value) or inspect.isroutine(value) or inspect.isclass(value):
            continue
        if type(value).__module__.startswith(("IPython.", "synapse_nb.")):
            continue  # exit/quit autocallers, our own result objects
        names.append(name)
    return sorted(names)


def _size(value: Any) -> int | None:
    kind = kind_of(value)
    try:
        if kind in ("pandas.DataFrame", "pandas.Series"):
            deep = len(value) <= 100_000  # deep counting reads every object cell: fine for small frames only
            usage = value.memory_usage(deep=deep, index=True)
            return int(usage.sum()) if kind == "pandas.DataFrame" else int(usage)
        if kind in ("polars.DataFrame", "polars.Series"):
            return int(value.estimated_size())
        if kind in ("numpy.ndarray", "pyarrow.Table"):
            return int(value.nbytes)
        return sys.getsizeof(value)
    except Exception:  # size is a nicety; never let it fail the listing
        return None


def _shape(value: Any) -> str | None:
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        return " x ".join(str(n) for n in shape) if shape else "scalar"
    if isinstance(value, str | bytes | bytearray | list | tuple | dict | set | frozenset):
        return f"len {len(value)}"
    return None


def variable_row(name: str, value: Any) -> dict[str, Any]:
    """One row of `list_variables`: name, type, shape or length, memory size (no value)."""
    row: dict[str, Any] = {"name": name, "type": kind_of(value).removeprefix("builtins.")}
    shape = _shape(value)
    if shape is not None:
        row["shape"] = shape
    if is_frame(value) or hasattr(value, "nbytes") or isinstance(value, list | tuple | dict | set | frozenset):
        size = _size(value)
        if size is not None:
            row["size"] = size_text(size)
    if kind_of(value) == "pandas.DataFrame":
        row["columns"] = ", ".join(str(c) for c in list(value.columns)[:12]) + (
            ", ..." if len(value.columns) > 12 else "")
    return row


def list_rows(namespace: Mapping[str, Any], hidden: Mapping[str, Any] | None, pattern: str | None) -> dict[str, Any]:
    """The `list_variables` result: rows for the user's variables matching the glob `pattern` (bounded)."""
    names = [n for n in user_variables(namespace, hidden) if pattern is None or fnmatchcase(n, pattern)]
    rows = [variable_row(n, namespace[n]) for n in names[:MAX_VARIABLES]]
    result: dict[str, Any] = {"variables": rows}
    if len(names) > MAX_VARIABLES:
        result["more"] = f"{len(names) - MAX_VARIABLES} more variables not listed; narrow with pattern"
    return result


# ---------------------------------------------------------------------------------------------- DataFrames


def describe_frame(value: Any, name: str, rows: int = 5) -> str:
    """Shape, dtypes with null counts, describe() of numeric and categorical columns, and the first rows."""
    kind = kind_of(value)
    rows = max(0, min(int(rows), 50))
    if kind == "pyarrow.Table":
        value, kind = value.slice(0, 100_000).to_pandas(), "pandas.DataFrame"  # describe over a bounded prefix
        name = f"{name} (pyarrow Table, first 100,000 rows)" if value.shape[0] >= 100_000 else f"{name} (pyarrow Table)"
    if kind == "pandas.Series":
        text = _describe_series(value, name, rows)
    elif kind == "pandas.DataFrame":
        text = _describe_pandas(value, name, rows)
    elif kind in ("polars.DataFrame", "polars.Series"):
        text = _describe_polars(value, name, rows)
    else:
        raise TypeError(f"{name} is a {kind}, not a DataFrame or Series")
    return bounded(text, MAX_DESCRIBE_CHARS)


def _describe_pandas(df: Any, name: str, rows: int) -> str:
    n_rows, n_cols = df.shape
    shown = df.iloc[:, :MAX_COLUMNS]
    nulls = shown.isna().sum()
    lines = [f"{name}: pandas DataFrame, {n_rows:,} rows x {n_cols} columns", "", "columns (dtype, nulls):"]
    lines += [f"- {col} ({dtype}, {int(nulls[col]):,} null)" for col, dtype in shown.dtypes.items()]
    if n_cols > MAX_COLUMNS:
        lines.append(f"- ... {n_cols - MAX_COLUMNS} more columns")
    numeric = shown.select_dtypes(include="number")
    if numeric.shape[1]:
        lines += ["", "numeric columns:", numeric.describe().to_string(max_cols=30)]
    categorical = shown.select_dtypes(include=["object", "category", "string", "bool"])
    if categorical.shape[1]:
        lines += ["", "categorical columns:", categorical.describe().to_string(max_cols=30)]
    if rows:
        lines += ["", f"first {min(rows, n_rows)} rows:", df.head(rows).to_string(max_cols=30, max_colwidth=40)]
    return "\n".join(lines)


def _describe_series(series: Any, name: str, rows: int) -> str:
    lines = [
        f"{name}: pandas Series {series.name!r}, {len(series):,} values, dtype {series.dtype}, "
        f"{int(series.isna().sum()):,} null",
        "", "statistics:", series.describe().to_string(),
    ]
    if rows:
        lines += ["", f"first {min(rows, len(series))} values:", series.head(rows).to_string()]
    return "\n".join(lines)


def _describe_polars(frame: Any, name: str, rows: int) -> str:
    kind = kind_of(frame)
    lines = [f"{name}: {kind.replace('.', ' ')}, shape {frame.shape}"]
    if kind == "polars.DataFrame":
        lines += ["", "columns (dtype, nulls):"]
        nulls = frame.null_count().row(0)
        schema = frame.schema.items()
        lines += [f"- {col} ({dtype}, {n:,} null)" for (col, dtype), n in zip(schema, nulls, strict=False)]
    else:
        lines[0] += f", {frame.name!r}, dtype {frame.dtype}, {frame.null_count():,} null"
    lines += ["", "statistics:", str(frame.describe())]
    if rows:
        lines += ["", f"first {min(rows, frame.shape[0])} rows:", str(frame.head(rows))]
    return "\n".join(lines)
