"""`key=value` words typed by a tool's input schema: a string parameter gets the word as written.

`%mcp call arxiv.get paper_id=1706.03762 note=1.10` sends `{"paper_id": "1706.03762", "note": "1.10"}` when the
schema says both are strings (parsed as JSON they would arrive as the numbers 1706.03762 and 1.1, and a server
rejects the first and stores the second changed). A number, integer, boolean, array or object parameter parses
its word as JSON (one clear line when it does not fit); a parameter the schema does not describe keeps the
rule of words without a schema: JSON when the word parses, else the word as written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from IPython.core.error import UsageError

__all__ = ["typed_words", "word_value"]

_JSON_TYPE: dict[type, str] = {bool: "boolean", int: "integer", float: "number", list: "array", dict: "object",
                               type(None): "null"}


def _types(schema: Mapping[str, Any]) -> set[str]:
    """The JSON types a parameter's schema allows (`type`, or the types of its anyOf/oneOf branches); empty when
    it does not say."""
    found: set[str] = set()
    declared = schema.get("type")
    if isinstance(declared, str):
        found.add(declared)
    elif isinstance(declared, list):
        found.update(t for t in declared if isinstance(t, str))
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or ():
            if isinstance(branch, Mapping):
                found |= _types(branch)
    values = list(schema.get("enum") or ())
    if "const" in schema:
        values.append(schema["const"])
    found.update(_json_type(v) for v in values)
    return found


def _json_type(value: Any) -> str:
    return _JSON_TYPE.get(type(value), "string")


def _fits(value: Any, types: set[str]) -> bool:
    kind = _json_type(value)
    return kind in types or (kind == "integer" and "number" in types)


def word_value(key: str, word: str, schema: Mapping[str, Any] | None) -> Any:
    """The value of `key=word` for a parameter of this schema (None: a parameter the tool does not describe)."""
    types = _types(schema) if schema is not None else set()
    try:
        parsed: Any = json.loads(word)
        parses = True
    except json.JSONDecodeError:
        parsed, parses = word, False
    if not types:
        return parsed
    if "string" in types:
        # the word as written, unless it is structured JSON the schema allows besides strings (["a","b"], true)
        if parses and not isinstance(parsed, str | int | float) and _fits(parsed, types):
            return parsed
        return word
    if parses and _fits(parsed, types):
        return parsed
    allowed = " or ".join(sorted(types))
    raise UsageError(
        f"%mcp call: {key}={word} is not {_article(allowed)} (the tool's schema says {allowed}); "
        f"e.g. {_example(key, types)}"
    )


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _example(key: str, types: set[str]) -> str:
    if "array" in types:
        return f"""{key}='["a", "b"]'"""
    if "object" in types:
        return f"""{key}='{{"k": "v"}}'"""
    if "boolean" in types:
        return f"{key}=true"
    return f"{key}=3"


def typed_words(words: Mapping[str, str], input_schema: Mapping[str, Any]) -> dict[str, Any]:
    """Every `key=word` typed by the tool's input schema (its `properties`)."""
    properties = input_schema.get("properties") if isinstance(input_schema, Mapping) else None
    properties = properties if isinstance(properties, Mapping) else {}
    return {
        key: word_value(key, word, properties[key] if isinstance(properties.get(key), Mapping) else None)
        for key, word in words.items()
    }
