"""JSON Schema -> form fields, and form input -> tool arguments with per-field errors (pure logic, no widgets).

`build_form(schema)` reads a tool's input schema into `Field`s (one per property, nested for objects) or
says why only the raw-JSON editor can express it. `collect(spec, inputs)` turns what the form holds into
the arguments to send plus an error per field path; `parse_json_arguments` does the same for the raw
editor. Nothing here imports ipywidgets, so every rule is unit-tested on plain values.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..questions.formats import format_problem
from .schema_check import MAX_DEPTH, check_value, resolve, schema_errors, type_name, where_text

__all__ = [
    "MISSING",
    "Field",
    "FormSpec",
    "Path",
    "RawInput",
    "build_form",
    "check_value",
    "collect",
    "enum_labels",
    "initial_inputs",
    "inputs_from_arguments",
    "number_as_text",
    "parse_json_arguments",
    "skeleton",
]

Kind = Literal["string", "text", "number", "integer", "boolean", "enum", "array", "object", "json"]
Path = tuple[str, ...]

# Property names whose values are usually longer than one line get a Textarea.
MULTILINE_NAMES = frozenset(
    {"text", "sql", "query", "code", "body", "content", "prompt", "message", "script", "markdown", "source"}
)
UNSET_LABEL = "—"  # the Dropdown choice for an optional enum left unset
PREFILLED_NOT = frozenset({"string", "text", "number", "integer", "array", "json"})
"""Kinds whose input starts empty, its default shown as a placeholder (a checkbox or a choice shows it)."""


class _Missing:
    """The value of a field the user left unset (the argument is not sent)."""

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()


@dataclass(frozen=True, slots=True)
class Field:
    """One form field: its kind decides the widget; `schema` is the resolved sub-schema it validates with."""

    path: Path
    kind: Kind
    title: str
    description: str = ""
    required: bool = False
    default: Any = MISSING
    nullable: bool = False
    options: tuple[Any, ...] = ()
    labels: tuple[str, ...] = ()  # what the options are called (titled oneOf, enumNames), when not their values
    item_kind: Kind | None = None
    fields: tuple[Field, ...] = ()
    schema: Mapping[str, Any] = field(default_factory=dict)
    reason: str = ""

    @property
    def name(self) -> str:
        return self.path[-1]

    @property
    def has_default(self) -> bool:
        return self.default is not MISSING

    @property
    def placeholder(self) -> str:
        """The hint shown inside an empty input: the default (left empty, the server applies it), the kind."""
        if self.has_default and self.kind in PREFILLED_NOT:
            return f"default: {self.default if isinstance(self.default, str) else json.dumps(self.default)}"
        if self.kind in ("number", "integer") and self.required:
            return f"required {self.kind}"
        if self.kind == "array":
            kind = self.item_kind or "value"
            return f"{kind} items, one per line or comma-separated"
        if self.kind == "json":
            return "JSON value" + (f" ({self.reason})" if self.reason else "")
        if self.kind in ("number", "integer") and not self.required:
            return f"optional {self.kind}"
        fmt = self.schema.get("format")
        return f"{fmt}" if isinstance(fmt, str) else ""


@dataclass(frozen=True, slots=True)
class FormSpec:
    """The form for one input schema; `raw_only` says why the raw-JSON editor is the only way in."""

    fields: tuple[Field, ...]
    raw_only: str | None = None
    schema: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RawInput:
    """What one widget holds: its value and whether the user changed it (untouched optionals are not sent)."""

    value: Any
    touched: bool = False


# --- schema -> fields ---------------------------------------------------------------------------


def build_form(schema: Mapping[str, Any] | None) -> FormSpec:
    """Read a tool's input schema; a top level the form cannot express falls back to raw JSON."""
    root: Mapping[str, Any] = schema if isinstance(schema, Mapping) else {}
    node, reason = resolve(root, root, frozenset())
    if reason:
        return FormSpec((), raw_only=reason, schema=root)
    if node.get("type", "object") != "object":
        return FormSpec((), raw_only=f"the input is a {node.get('type')}, not an object", schema=root)
    props = node.get("properties") or {}
    if not isinstance(props, Mapping):
        return FormSpec((), raw_only="properties is not an object", schema=root)
    if not props and node.get("additionalProperties") not in (None, False):
        return FormSpec((), raw_only="free-form object", schema=root)
    return FormSpec(_object_fields(node, root, (), 0, frozenset()), schema=root)


def _object_fields(
    node: Mapping[str, Any], root: Mapping[str, Any], path: Path, depth: int, seen: frozenset[str]
) -> tuple[Field, ...]:
    required = set(node.get("required") or ())
    props = node.get("properties") or {}
    return tuple(
        _field(str(name), sub if isinstance(sub, Mapping) else {}, root, (*path, str(name)), name in required,
               depth, seen)
        for name, sub in props.items()
    )


def _field(
    name: str, raw: Mapping[str, Any], root: Mapping[str, Any], path: Path, required: bool, depth: int,
    seen: frozenset[str],
) -> Field:
    node, reason = resolve(raw, root, seen)
    nullable = bool(node.get("_nullable"))
    common: dict[str, Any] = {
        "path": path,
        "title": str(node.get("title") or name),
        "description": str(node.get("description") or ""),
        "required": required,
        "default": node.get("default", MISSING),
        "nullable": nullable,
        "schema": node,
    }
    if common["default"] is None and nullable:
        common["default"] = MISSING  # `Optional[x] = None`: unset and null mean the same
    if reason:
        return Field(kind="json", reason=reason, **{**common, "schema": raw})
    kind = _scalar_kind(name, node)
    if kind == "enum":
        options = tuple(node["enum"]) if "enum" in node else (node.get("const"),)
        if all(_is_scalar(v) for v in options) and options:
            return Field(kind="enum", options=options, labels=_labels(node, options), **common)
        return Field(kind="json", reason="enum of structured values", **common)
    if kind is not None:
        return Field(kind=kind, **common)
    typ = node.get("type")
    if typ == "array":
        items, item_reason = resolve(node.get("items") or {}, root, seen)
        item_kind = None if item_reason else _scalar_kind("", items)
        if item_kind in ("string", "text", "number", "integer", "boolean", "enum"):
            options = tuple(items.get("enum") or ()) if item_kind == "enum" else ()
            item = "string" if item_kind == "text" else item_kind
            schema = {**node, "items": items}
            return Field(kind="array", item_kind=item, options=options, labels=_labels(items, options),
                         **{**common, "schema": schema})
        return Field(kind="json", reason="array of structured items", **common)
    if typ == "object":
        props = node.get("properties")
        if isinstance(props, Mapping) and props and depth < MAX_DEPTH:
            ref = raw.get("$ref")
            inner_seen = seen | {ref} if isinstance(ref, str) else seen
            return Field(kind="object", fields=_object_fields(node, root, path, depth + 1, inner_seen), **common)
        why = "nested too deep" if props else "free-form object"
        return Field(kind="json", reason=why, **common)
    return Field(kind="json", reason="any value" if typ is None else f"type {typ}", **common)


def _scalar_kind(name: str, node: Mapping[str, Any]) -> Kind | None:
    if "enum" in node or "const" in node:
        return "enum"
    typ = node.get("type")
    if typ == "string":
        long = isinstance(node.get("maxLength"), int) and node["maxLength"] > 200
        if node.get("format") == "textarea" or long or name.lower() in MULTILINE_NAMES:
            return "text"
        return "string"
    if typ in ("number", "integer", "boolean"):
        return typ  # type: ignore[no-any-return]
    return None


def _labels(node: Mapping[str, Any], options: tuple[Any, ...]) -> tuple[str, ...]:
    """The options' titles: from a titled oneOf/anyOf (schema_check.resolve) or the legacy `enumNames`."""
    for key in ("_labels", "enumNames"):
        labels = node.get(key)
        if isinstance(labels, list) and len(labels) == len(options):
            return tuple(str(t) for t in labels)
    return ()


def multi_select(f: Field) -> bool:
    """An array of choices: a multi-select of its options, not a text box."""
    return f.kind == "array" and f.item_kind == "enum" and bool(f.options)


def option_labels(f: Field) -> list[str]:
    """Each option as shown: its title with the value when they differ (`Wonder Woman (hero-3)`), else the value."""
    values = [v if isinstance(v, str) else json.dumps(v) for v in f.options]
    if not f.labels:
        return values
    return [label if label == value else f"{label} ({value})" for label, value in zip(f.labels, values, strict=True)]


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def enum_labels(f: Field) -> list[str]:
    """The Dropdown's labels: the options, led by an "unset" choice when the field may stay empty."""
    return ([UNSET_LABEL] if _enum_unset_allowed(f) else []) + option_labels(f)


def _enum_unset_allowed(f: Field) -> bool:
    return not f.required and not f.has_default


# --- initial values and JSON <-> form -------------------------------------------------------------


def _start(f: Field) -> Any:
    """The value a field's widget starts from: its default where the widget shows it (a choice, a checkbox,
    a multi-select), else nothing (the default is the placeholder)."""
    return MISSING if f.kind in PREFILLED_NOT and not multi_select(f) else f.default


def initial_inputs(spec: FormSpec) -> dict[Path, RawInput]:
    """What each widget starts with: the default if there is one, else empty."""
    out: dict[Path, RawInput] = {}
    for f in _walk(spec.fields):
        out[f.path] = RawInput(_to_raw(f, _start(f)))
    return out


def inputs_from_arguments(spec: FormSpec, args: Mapping[str, Any]) -> tuple[dict[Path, RawInput], list[str]]:
    """Load arguments (from the raw editor) into form inputs; returns the inputs and the keys the form lacks."""
    out = initial_inputs(spec)
    unknown: list[str] = []

    def load(fields: tuple[Field, ...], values: Mapping[str, Any], prefix: Path) -> None:
        names = {f.name for f in fields}
        unknown.extend(".".join((*prefix, k)) for k in values if k not in names)
        for f in fields:
            if f.name not in values:
                continue
            value = values[f.name]
            if f.kind == "object" and isinstance(value, Mapping):
                load(f.fields, value, f.path)
            else:
                out[f.path] = RawInput(_to_raw(f, value), touched=True)

    load(spec.fields, args, ())
    return out, unknown


def _to_raw(f: Field, value: Any) -> Any:
    """A JSON value as the widget for `f` holds it (text for arrays/JSON/numbers typed as text)."""
    unset = value is MISSING or value is None
    if f.kind in ("string", "text"):
        return "" if unset else str(value)
    if f.kind in ("number", "integer"):
        if number_as_text(f):
            return "" if unset else json.dumps(value)
        if unset or isinstance(value, bool) or not isinstance(value, int | float):
            return 0 if f.kind == "integer" else 0.0
        return int(value) if f.kind == "integer" else float(value)
    if f.kind == "boolean":
        return bool(value) if not unset else False
    if f.kind == "enum":
        offset = 1 if _enum_unset_allowed(f) else 0
        for i, option in enumerate(f.options):
            if option == value and type(option) is type(value):
                return i + offset
        return 0
    if multi_select(f):
        chosen = value if isinstance(value, list) else []
        return tuple(i for i, option in enumerate(f.options) if option in chosen)
    if f.kind == "array":
        if unset or not isinstance(value, list):
            return "" if unset else json.dumps(value)
        return "\n".join(v if isinstance(v, str) else json.dumps(v) for v in value)
    if f.kind == "json":
        return "" if value is MISSING else json.dumps(value, indent=2)
    return None


def number_as_text(f: Field) -> bool:
    """Numbers sit in a text box, so that "empty" can mean "not sent" (optional) or "still to fill in"
    (required): a number box would start at 0, and a required 0 would be sent without a word."""
    return f.kind in ("number", "integer")


def skeleton(spec: FormSpec) -> dict[str, Any]:
    """A starting document for the raw editor: defaults, and a typed blank for each required property."""
    node, _ = resolve(spec.schema, spec.schema, frozenset())
    out: dict[str, Any] = {}
    props = node.get("properties") or {}
    required = set(node.get("required") or ())
    if not isinstance(props, Mapping):
        return out
    for name, sub in props.items():
        sub_node, _ = resolve(sub if isinstance(sub, Mapping) else {}, spec.schema, frozenset())
        if "default" in sub_node:
            out[name] = sub_node["default"]
        elif name in required:
            blanks = {"string": "", "number": 0, "integer": 0, "boolean": False, "array": [], "object": {}}
            out[name] = blanks.get(str(sub_node.get("type")))
    return out


def _walk(fields: tuple[Field, ...]) -> list[Field]:
    out: list[Field] = []
    for f in fields:
        out.append(f)
        out.extend(_walk(f.fields))
    return out


# --- form input -> arguments -----------------------------------------------------------------------


def collect(spec: FormSpec, inputs: Mapping[Path, RawInput]) -> tuple[dict[str, Any], dict[Path, str]]:
    """The arguments the form describes and one error per invalid field path (send only if no errors).

    Each input is parsed on its own (a number that is not one, a required field left empty); then
    the whole document is checked against the schema with jsonschema, and each error is put on the
    field it is about (errors about no field go to `()`)."""
    errors: dict[Path, str] = {}
    args = _collect_object(spec.fields, inputs, errors)
    paths = {f.path for f in _walk(spec.fields)}
    for where, message in schema_errors(spec.schema, args):
        names = tuple(str(p) for p in where)
        n = next((n for n in range(len(names), 0, -1) if names[:n] in paths), 0)
        if names[:n] not in errors:  # a field's own parse error says it first
            rest = where[n:]
            errors[names[:n]] = (f"{where_text(rest)}: " if rest else "") + message
    for path in errors:
        _drop(args, path)  # a value with an error is not part of the arguments
    return args, errors


def _collect_object(
    fields: tuple[Field, ...], inputs: Mapping[Path, RawInput], errors: dict[Path, str]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields:
        if f.kind == "object":
            if not f.required and not _any_touched(f, inputs):
                continue  # an optional object left alone is not sent, and its required parts do not matter
            out[f.name] = _collect_object(f.fields, inputs, errors)
            continue
        raw = inputs.get(f.path, RawInput(_to_raw(f, _start(f))))
        try:
            value = _parse(f, raw)
        except ValueError as exc:
            errors[f.path] = str(exc)
            continue
        if value is MISSING:
            if f.required:
                errors[f.path] = "required"
            continue
        out[f.name] = value
    return out


def _drop(args: dict[str, Any], path: Path) -> None:
    node: Any = args
    for name in path[:-1]:
        node = node.get(name) if isinstance(node, dict) else None
    if path and isinstance(node, dict):
        node.pop(path[-1], None)


def _any_touched(f: Field, inputs: Mapping[Path, RawInput]) -> bool:
    return any(g.path in inputs and inputs[g.path].touched for g in _walk(f.fields))


def _parse(f: Field, raw: RawInput) -> Any:
    """One widget's value as a JSON value, MISSING when unset; ValueError with a short message when bad."""
    v = raw.value
    if f.kind in ("string", "text"):
        if v in ("", None):
            return MISSING
        problem = format_problem(f.schema.get("format"), str(v))
        if problem is not None:  # said next to the field, as the user types it (email, uri, date, date-time)
            raise ValueError(problem)
        return str(v)
    if multi_select(f) and not isinstance(v, str):  # like a choice: shows its default, sent once the user picks
        if not isinstance(v, tuple | list) or not v or (not raw.touched and not f.required):
            return MISSING
        return [f.options[i] for i in v if isinstance(i, int) and 0 <= i < len(f.options)]
    if f.kind in ("number", "integer"):
        if isinstance(v, str):
            return MISSING if not v.strip() else _number(f.kind, v.strip())
        if not raw.touched and not f.required:
            return MISSING
        return _number(f.kind, v)
    if f.kind == "boolean":
        return bool(v) if raw.touched or f.required else MISSING
    if f.kind == "enum":
        offset = 1 if _enum_unset_allowed(f) else 0
        if not isinstance(v, int) or v < 0 or v >= len(f.options) + offset:
            return MISSING
        if offset and v == 0:
            return MISSING
        if not raw.touched and not f.required:
            return MISSING
        return f.options[v - offset]
    if f.kind == "array":
        return _parse_array(f, str(v or ""))
    text = str(v or "").strip()
    if not text:
        return MISSING
    return _json(text)


def _number(kind: str, v: Any) -> int | float:
    if isinstance(v, bool):
        raise ValueError(f"not a number: {v!r}")
    if isinstance(v, str):
        try:
            number = float(v) if kind == "number" else int(v)
        except ValueError:
            if kind == "integer" and _is_float(v):
                raise ValueError(f"not a whole number: {v!r}") from None
            raise ValueError(f"not a number: {v!r}") from None
    elif isinstance(v, int | float):
        number = v
    else:
        raise ValueError(f"not a number: {v!r}")
    if isinstance(number, float) and not math.isfinite(number):
        raise ValueError(f"not a finite number: {v!r}")
    if kind == "integer" and isinstance(number, float):
        if not number.is_integer():
            raise ValueError(f"not a whole number: {v!r}")
        number = int(number)
    return number


def _is_float(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _parse_array(f: Field, text: str) -> Any:
    text = text.strip()
    if not text:
        return MISSING
    if text.startswith("["):
        return _json(text)
    parts = text.splitlines() if "\n" in text else text.split(",")
    items = [p.strip() for p in parts if p.strip()]
    out: list[Any] = []
    for item in items:
        try:
            out.append(_item(f, item))
        except ValueError as exc:
            raise ValueError(f"item {len(out) + 1}: {exc}") from None
    return out


def _item(f: Field, s: str) -> Any:
    if f.item_kind in ("number", "integer"):
        return _number(f.item_kind, s)
    if f.item_kind == "boolean":
        low = s.lower()
        if low in ("true", "yes", "1"):
            return True
        if low in ("false", "no", "0"):
            return False
        raise ValueError(f"not true/false: {s!r}")
    if f.item_kind == "enum":
        for option in f.options:
            if s == (option if isinstance(option, str) else json.dumps(option)):
                return option
        raise ValueError(f"{s!r} is not one of {', '.join(map(str, f.options))}")
    return s


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None


def parse_json_arguments(spec: FormSpec, text: str) -> tuple[dict[str, Any] | None, dict[Path, str]]:
    """The raw editor's document checked against the schema; errors keyed by path, `()` for the document."""
    if not text.strip():
        text = "{}"
    try:
        value = _json(text)
    except ValueError as exc:
        return None, {(): str(exc)}
    if not isinstance(value, dict):
        return None, {(): f"the arguments must be a JSON object, not {type_name(value)}"}
    problem = check_value(spec.schema, value)
    if problem:
        return None, {(): problem}
    return value, {}
