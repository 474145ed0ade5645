"""JSON schemas of native tools: from a function's signature, type hints and (Google or NumPy) docstring."""

from __future__ import annotations

import enum
import inspect
import json
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, Union, get_args, get_origin

__all__ = ["is_optional", "parse_docstring", "schema_from_function", "strip_none", "type_schema"]

_JSON_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def is_optional(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType) and type(None) in get_args(tp)


def strip_none(tp: Any) -> Any:
    rest = [a for a in get_args(tp) if a is not type(None)]
    return rest[0] if len(rest) == 1 else Union[tuple(rest)]  # noqa: UP007 - built from a runtime tuple


def type_schema(tp: Any) -> dict[str, Any]:
    """The JSON schema of one annotation (str/int/float/bool, containers, Literal, Enum, Optional, Annotated)."""
    if tp is inspect.Parameter.empty or tp is Any or tp is object:
        return {}
    if tp is type(None) or tp is None:
        return {"type": "null"}
    if tp in _JSON_TYPES:
        return {"type": _JSON_TYPES[tp]}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_schema([m.value for m in tp])
    origin, args = get_origin(tp), get_args(tp)
    if origin is typing.Annotated:
        schema = type_schema(args[0])
        notes = [a for a in args[1:] if isinstance(a, str)]
        if notes:
            schema["description"] = " ".join(notes)
        return schema
    if origin is Literal:
        return _enum_schema(list(args))
    if origin in (Union, types.UnionType):
        options = [type_schema(a) for a in args]
        return {"anyOf": options} if all(options) else {}
    if tp in (list, tuple, set, frozenset) or origin in (list, tuple, set, frozenset) or _is_abc(
        origin or tp, ("Sequence", "MutableSequence", "Iterable", "Collection", "Set", "AbstractSet")
    ):
        array: dict[str, Any] = {"type": "array"}
        items = [a for a in args if a is not Ellipsis]
        if items and (len(items) == 1 or len(set(map(repr, items))) == 1):
            item_schema = type_schema(items[0])
            if item_schema:
                array["items"] = item_schema
        if (origin or tp) in (set, frozenset) or _is_abc(origin or tp, ("Set", "AbstractSet")):
            array["uniqueItems"] = True
        return array
    if tp is dict or origin is dict or _is_abc(origin or tp, ("Mapping", "MutableMapping")):
        obj: dict[str, Any] = {"type": "object"}
        if len(args) == 2:
            value_schema = type_schema(args[1])
            if value_schema:
                obj["additionalProperties"] = value_schema
        return obj
    return {}


def _is_abc(tp: Any, names: tuple[str, ...]) -> bool:
    return getattr(tp, "__module__", None) in ("collections.abc", "typing") and getattr(tp, "__name__", "") in names


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"enum": values}
    kinds = {_JSON_TYPES.get(type(v)) for v in values}
    if len(kinds) == 1 and None not in kinds:
        schema["type"] = kinds.pop()
    return schema


_SECTION_RE = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters|Returns?|Yields?|"
    r"Raises|Examples?|Notes?|See Also|References|Attributes|Warnings?|Todo)\s*:?\s*$"
)
_PARAM_SECTIONS = {"Args", "Arguments", "Parameters", "Params", "Keyword Args", "Keyword Arguments", "Other Parameters"}
_GOOGLE_PARAM_RE = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_PARAM_RE = re.compile(r"^\*{0,2}(\w+)\s*(?::.*)?$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _header(lines: list[str], i: int) -> tuple[str, int, bool] | None:
    """A section header at line i: (name, lines it takes, numpy style), or None."""
    line = lines[i]
    match = _SECTION_RE.match(line.strip()) if line.strip() and _indent(line) == 0 else None
    if match is None:
        return None
    if i + 1 < len(lines) and lines[i + 1].strip() and set(lines[i + 1].strip()) == {"-"}:
        return match.group(1), 2, True
    if line.rstrip().endswith(":"):
        return match.group(1), 1, False
    return None


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The first paragraph (as one line) and the parameter descriptions of a Google or NumPy docstring."""
    lines = inspect.cleandoc(doc or "").splitlines()
    summary: list[str] = []
    i = 0
    while i < len(lines) and lines[i].strip() and _header(lines, i) is None:
        summary.append(lines[i].strip())
        i += 1
    params: dict[str, list[str]] = {}
    while i < len(lines):
        header = _header(lines, i)
        if header is None:
            i += 1
            continue
        name, taken, numpy_style = header
        i += taken
        current: str | None = None
        base: int | None = None
        while i < len(lines) and _header(lines, i) is None:
            line = lines[i]
            i += 1
            if not line.strip() or name not in _PARAM_SECTIONS:
                continue
            if not numpy_style and _indent(line) == 0:
                break  # the Google section ended
            if base is None:
                base = _indent(line)
            match = (_NUMPY_PARAM_RE if numpy_style else _GOOGLE_PARAM_RE).match(line.strip())
            if _indent(line) <= base and match:
                current = match.group(1)
                params[current] = [] if numpy_style else [match.group(2)]
            elif current is not None:
                params[current].append(line.strip())
    return " ".join(summary), {k: " ".join(v).strip() for k, v in params.items()}


def schema_from_function(fn: Callable[..., Any]) -> tuple[str, dict[str, Any]]:
    """The description and the JSON input schema of a function, from its signature, hints and docstring."""
    description, param_docs = parse_docstring(inspect.getdoc(fn))
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # unresolvable forward references: fall back to the raw annotations
        hints = dict(getattr(fn, "__annotations__", {}))
    properties: dict[str, Any] = {}
    required: list[str] = []
    extra = False
    for p in inspect.signature(fn).parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            extra = True
            continue
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            continue
        tp = hints.get(p.name, inspect.Parameter.empty)
        has_default = p.default is not inspect.Parameter.empty
        schema = type_schema(strip_none(tp) if has_default and is_optional(tp) else tp)
        if has_default:
            default = p.default.value if isinstance(p.default, enum.Enum) else p.default
            if default is not None:
                try:
                    schema["default"] = json.loads(json.dumps(default))  # tuples become lists, as in JSON
                except (TypeError, ValueError):
                    pass  # a default JSON cannot express is simply not advertised
        else:
            required.append(p.name)
        if param_docs.get(p.name) and "description" not in schema:
            schema["description"] = param_docs[p.name]
        properties[p.name] = schema
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    if not extra:
        result["additionalProperties"] = False
    return description, result
