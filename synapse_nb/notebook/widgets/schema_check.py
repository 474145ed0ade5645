"""JSON Schema plumbing for the form: local $ref / nullable-union resolution and a small value checker.

The checker covers what a form can get wrong before a call (types, enums, bounds, lengths, patterns,
required properties, array items); the server still validates everything else.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["MAX_DEPTH", "check_value", "resolve", "type_name"]

MAX_DEPTH = 4
_JSON_TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}


def resolve(
    raw: Mapping[str, Any], root: Mapping[str, Any], seen: frozenset[str]
) -> tuple[Mapping[str, Any], str | None]:
    """Follow local $refs, unwrap `X | None` unions and single allOf; anything else is a reason for JSON."""
    node: dict[str, Any] = dict(raw)
    for _ in range(MAX_DEPTH * 2):
        ref = node.pop("$ref", None)
        if ref is not None:
            if not isinstance(ref, str) or not ref.startswith("#/"):
                return node, "$ref"
            if ref in seen:
                return node, "recursive $ref"
            target = _pointer(root, ref)
            if target is None:
                return node, f"unresolved $ref {ref}"
            seen = seen | {ref}
            node = {**target, **node}  # the referring node's title/description/default win
            continue
        all_of = node.pop("allOf", None)
        if all_of is not None:
            if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], Mapping):
                node = {**all_of[0], **node}
                continue
            return node, "allOf"
        for key in ("anyOf", "oneOf"):
            branches = node.pop(key, None)
            if branches is None:
                continue
            if not isinstance(branches, list):
                return node, key
            others = [b for b in branches if not (isinstance(b, Mapping) and b.get("type") == "null")]
            if len(others) == 1 and len(others) < len(branches) and isinstance(others[0], Mapping):
                node = {**others[0], **node, "_nullable": True}
                break
            return node, key
        else:
            typ = node.get("type")
            if isinstance(typ, list):
                types = [t for t in typ if t != "null"]
                if len(types) != 1:
                    return node, f"type {typ}"
                node = {**node, "type": types[0], "_nullable": "null" in typ or node.get("_nullable", False)}
            if "not" in node or "if" in node:
                return node, "not" if "not" in node else "if/then"
            return node, None
    return node, "too many nested references"


def _pointer(root: Mapping[str, Any], ref: str) -> Mapping[str, Any] | None:
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, Mapping) else None


def check_value(
    schema: Mapping[str, Any], value: Any, *, root: Mapping[str, Any] | None = None, _where: str = "",
) -> str | None:
    """The first way `value` breaks `schema` as a one-line message, or None. Unknown keywords are ignored."""
    root = schema if root is None else root
    node, reason = resolve(schema, root, frozenset())
    at = f"{_where}: " if _where else ""
    if reason:
        return None  # the server validates what the form cannot
    if value is None and node.get("_nullable"):
        return None
    if "const" in node and value != node["const"]:
        return f"{at}must be {json.dumps(node['const'])}"
    if "enum" in node and not _in_enum(value, node["enum"]):
        return f"{at}must be one of: {', '.join(json.dumps(o) for o in node['enum'])}"
    typ = node.get("type")
    if isinstance(typ, str) and typ in _JSON_TYPES and not _has_type(value, typ):
        return f"{at}expected {typ}, got {type_name(value)}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        problem = _check_number(node, value)
        if problem:
            return at + problem
    if isinstance(value, str):
        problem = _check_string(node, value)
        if problem:
            return at + problem
    if isinstance(value, list):
        if isinstance(node.get("minItems"), int) and len(value) < node["minItems"]:
            return f"{at}needs at least {node['minItems']} items"
        if isinstance(node.get("maxItems"), int) and len(value) > node["maxItems"]:
            return f"{at}allows at most {node['maxItems']} items"
        if node.get("uniqueItems") and len({json.dumps(v, sort_keys=True) for v in value}) != len(value):
            return f"{at}items must be unique"
        items = node.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                problem = check_value(items, item, root=root, _where=f"{_where}[{i}]")
                if problem:
                    return problem
    if isinstance(value, dict):
        raw_props = node.get("properties")
        props: Mapping[str, Any] = raw_props if isinstance(raw_props, Mapping) else {}
        for name in node.get("required") or ():
            if name not in value:
                return f"{_where + '.' if _where else ''}{name}: required"
        for name, sub in value.items():
            where = f"{_where}.{name}" if _where else str(name)
            if name in props and isinstance(props[name], Mapping):
                problem = check_value(props[name], sub, root=root, _where=where)
                if problem:
                    return problem
            elif node.get("additionalProperties") is False:
                return f"{where}: unknown property"
    return None


def _in_enum(value: Any, options: Any) -> bool:
    """JSON equality: 1 and 1.0 are the same number, but True is not 1."""
    if not isinstance(options, list):
        return True
    return any(value == o and (type(value) is type(o) or _both_numbers(value, o)) for o in options)


def _both_numbers(a: Any, b: Any) -> bool:
    return all(isinstance(x, int | float) and not isinstance(x, bool) for x in (a, b))


def _check_number(node: Mapping[str, Any], v: float) -> str | None:
    checks: tuple[tuple[str, Callable[[float], bool], str], ...] = (
        ("minimum", lambda b: v < b, "must be ≥ {}"),
        ("maximum", lambda b: v > b, "must be ≤ {}"),
        ("exclusiveMinimum", lambda b: v <= b, "must be > {}"),
        ("exclusiveMaximum", lambda b: v >= b, "must be < {}"),
    )
    for key, broken, message in checks:
        bound = node.get(key)
        if isinstance(bound, int | float) and not isinstance(bound, bool) and broken(bound):
            return message.format(bound)
    step = node.get("multipleOf")
    if isinstance(step, int | float) and step > 0 and not math.isclose(v / step, round(v / step)):
        return f"must be a multiple of {step}"
    return None


def _check_string(node: Mapping[str, Any], v: str) -> str | None:
    if isinstance(node.get("minLength"), int) and len(v) < node["minLength"]:
        return f"needs at least {node['minLength']} characters"
    if isinstance(node.get("maxLength"), int) and len(v) > node["maxLength"]:
        return f"allows at most {node['maxLength']} characters"
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        try:
            if re.search(pattern, v) is None:
                return f"must match {pattern}"
        except re.error:
            return None
    return None


def _has_type(value: Any, typ: str) -> bool:
    if typ == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if typ == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return type_name(value) == typ


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
