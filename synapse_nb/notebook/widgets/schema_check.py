"""JSON Schema plumbing for the form: local $ref / nullable-union resolution, and value checks by `jsonschema`.

`resolve` reads a schema node into what the form can draw; `schema_errors` checks arguments with
the jsonschema library (imported lazily: it is slow to import) and words its errors in one line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["MAX_DEPTH", "Location", "check_value", "resolve", "schema_errors", "type_name", "where_text"]

MAX_DEPTH = 4


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
            if branches and all(isinstance(b, Mapping) and "const" in b for b in branches):
                # titled choices (SEP-1330: oneOf / anyOf of const + title): an enum whose options carry labels
                node = {**node, "enum": [b["const"] for b in branches],
                        "_labels": [str(b.get("title") or b["const"]) for b in branches]}
                break
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


Location = tuple[str | int, ...]


def schema_errors(schema: Mapping[str, Any], value: Any) -> list[tuple[Location, str]]:
    """Every way `value` breaks `schema`, as (where, one-line message), most relevant first.

    The checking is the `jsonschema` library's (the dialect the schema's `$schema` names, else
    2020-12); only the wording is ours. jsonschema takes about a second to import, so it is imported
    here, when a form is first checked. A schema jsonschema cannot use is not checked (the server
    validates anyway)."""
    from jsonschema import exceptions, validators

    try:
        cls = validators.validator_for(schema, default=validators.Draft202012Validator)
        found = sorted(cls(schema).iter_errors(value), key=exceptions.relevance)
    except Exception:  # an invalid schema, a bad regex, an unresolvable $ref: leave it to the server
        return []
    return [_located(error) for error in found]


def check_value(schema: Mapping[str, Any], value: Any) -> str | None:
    """The first way `value` breaks `schema` as `where: message` (or `message` at the top), or None."""
    errors = schema_errors(schema, value)
    if not errors:
        return None
    where, message = errors[0]
    return f"{where_text(where)}: {message}" if where else message


def where_text(where: Location) -> str:
    """`a.b[2]`: a location for people."""
    out = ""
    for part in where:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _located(error: Any) -> tuple[Location, str]:
    where: Location = tuple(error.absolute_path)
    keyword, bound, instance = error.validator, error.validator_value, error.instance
    if keyword == "required" and isinstance(instance, dict):
        missing = next((n for n in bound if n not in instance), None)
        return ((*where, missing) if missing is not None else where), "required"
    if keyword == "additionalProperties" and isinstance(instance, dict):
        known = set(error.schema.get("properties") or ())
        extra = next((k for k in instance if k not in known), None)
        return ((*where, extra) if extra is not None else where), "unknown property"
    return where, _MESSAGES.get(keyword, lambda _b, _i, e: str(e.message))(bound, instance, error)


_MESSAGES: dict[str, Callable[[Any, Any, Any], str]] = {
    "type": lambda b, i, _e: f"expected {b if isinstance(b, str) else ' or '.join(b)}, got {type_name(i)}",
    "enum": lambda b, _i, _e: "must be one of: " + ", ".join(json.dumps(o) for o in b),
    "const": lambda b, _i, _e: f"must be {json.dumps(b)}",
    "minimum": lambda b, _i, _e: f"must be ≥ {b}",
    "maximum": lambda b, _i, _e: f"must be ≤ {b}",
    "exclusiveMinimum": lambda b, _i, _e: f"must be > {b}",
    "exclusiveMaximum": lambda b, _i, _e: f"must be < {b}",
    "multipleOf": lambda b, _i, _e: f"must be a multiple of {b}",
    "minLength": lambda b, _i, _e: f"needs at least {b} characters",
    "maxLength": lambda b, _i, _e: f"allows at most {b} characters",
    "pattern": lambda b, _i, _e: f"must match {b}",
    "minItems": lambda b, _i, _e: f"needs at least {b} items",
    "maxItems": lambda b, _i, _e: f"allows at most {b} items",
    "uniqueItems": lambda _b, _i, _e: "items must be unique",
}


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
