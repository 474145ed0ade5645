"""Elicitation requests as values a UI can render (form fields, URL prompts) and the answers it gives back.

A server's `requested_schema` is a flat JSON-Schema object; `parse_form` turns it into typed fields
(strings with formats, numbers with bounds, booleans, and the SEP-1330 enums: titled or untitled,
single or multi-select). Whatever the UI is (stdin prompts, a widget form, a script choosing
"accept with defaults"), its answer goes through `ElicitationForm.answer`, which applies the
SEP-1034 defaults for omitted fields and converts typed-in text, so every UI takes the same path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import McpError

__all__ = [
    "Choice",
    "ElicitationAnswer",
    "ElicitationError",
    "ElicitationField",
    "ElicitationForm",
    "FieldKind",
    "UrlElicitation",
    "parse_form",
]

FieldKind = Literal["string", "integer", "number", "boolean", "choice", "multi_choice"]
Action = Literal["accept", "decline", "cancel"]
Value = str | int | float | bool | list[str] | None

_TRUE = frozenset({"y", "yes", "true", "1", "on"})
_FALSE = frozenset({"n", "no", "false", "0", "off"})


class ElicitationError(McpError):
    """An answer does not fit the form (wrong type, out of range, unknown choice, missing required field)."""


@dataclass(frozen=True, slots=True)
class Choice:
    """One option of an enum field: the value sent back and the title shown (the value when untitled)."""

    value: str
    title: str


@dataclass(frozen=True, slots=True)
class ElicitationField:
    """One top-level property of a requested schema, typed for rendering."""

    name: str
    kind: FieldKind
    title: str
    description: str | None = None
    required: bool = False
    default: Value = None
    format: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    choices: tuple[Choice, ...] = ()
    min_items: int | None = None
    max_items: int | None = None

    @property
    def has_default(self) -> bool:
        return self.default is not None

    def convert(self, raw: Any) -> Value:
        """A typed value from what a user gave (text typed at a prompt, or already a Python value).

        Choices may be given by value, title or 1-based number; multi-select text is comma-separated.
        Raises ElicitationError naming the field and what it accepts.
        """
        if self.kind == "boolean":
            return self._boolean(raw)
        if self.kind in ("integer", "number"):
            return self._number(raw)
        if self.kind == "choice":
            return self._choice(raw)
        if self.kind == "multi_choice":
            items = [s.strip() for s in raw.split(",") if s.strip()] if isinstance(raw, str) else list(raw)
            values = [self._choice(x) for x in items]
            if self.min_items is not None and len(values) < self.min_items:
                raise self._error(f"choose at least {self.min_items}")
            if self.max_items is not None and len(values) > self.max_items:
                raise self._error(f"choose at most {self.max_items}")
            return values
        text = str(raw)
        if self.min_length is not None and len(text) < self.min_length:
            raise self._error(f"needs at least {self.min_length} characters")
        if self.max_length is not None and len(text) > self.max_length:
            raise self._error(f"takes at most {self.max_length} characters")
        return text

    def _boolean(self, raw: Any) -> bool:
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise self._error("answer yes or no")

    def _number(self, raw: Any) -> int | float:
        if isinstance(raw, bool):
            raise self._error(f"needs a{'n integer' if self.kind == 'integer' else ' number'}")
        try:
            value: int | float = int(str(raw).strip()) if self.kind == "integer" else float(str(raw).strip())
        except ValueError:
            if self.kind == "integer" and isinstance(raw, float) and raw.is_integer():
                value = int(raw)
            else:
                raise self._error(f"needs a{'n integer' if self.kind == 'integer' else ' number'}") from None
        if self.minimum is not None and value < self.minimum:
            raise self._error(f"must be at least {self.minimum:g}")
        if self.maximum is not None and value > self.maximum:
            raise self._error(f"must be at most {self.maximum:g}")
        return value

    def _choice(self, raw: Any) -> str:
        text = str(raw).strip()
        for c in self.choices:
            if text in (c.value, c.title):
                return c.value
        if text.isdigit() and 1 <= int(text) <= len(self.choices):
            return self.choices[int(text) - 1].value
        shown = ", ".join(c.value if c.title == c.value else f"{c.value} ({c.title})" for c in self.choices)
        raise self._error(f"must be one of {shown}")

    def _error(self, what: str) -> ElicitationError:
        return ElicitationError(f"field {self.name!r} {what}")


@dataclass(frozen=True, slots=True)
class ElicitationAnswer:
    """What the user did: accept (with `content`), decline, or cancel (dismissed without choosing)."""

    action: Action
    content: Mapping[str, Value] | None = None

    @classmethod
    def decline(cls) -> ElicitationAnswer:
        return cls("decline")

    @classmethod
    def cancel(cls) -> ElicitationAnswer:
        return cls("cancel")


@dataclass(frozen=True, slots=True)
class ElicitationForm:
    """A form-mode request: the server's message and the fields to fill in."""

    server: str
    message: str
    fields: tuple[ElicitationField, ...]
    schema: Mapping[str, Any] = field(default_factory=dict, repr=False)

    def answer(self, values: Mapping[str, Any] | None = None) -> ElicitationAnswer:
        """Accept with `values` (raw or typed); omitted fields take their defaults (SEP-1034).

        Raises ElicitationError for an unknown field, a value that does not convert, or a required
        field left without value or default.
        """
        given = dict(values or {})
        unknown = set(given) - {f.name for f in self.fields}
        if unknown:
            raise ElicitationError(f"no field named {', '.join(sorted(unknown))} in this form")
        content: dict[str, Value] = {}
        for f in self.fields:
            if f.name in given and given[f.name] not in (None, ""):
                content[f.name] = f.convert(given[f.name])
            elif f.has_default:
                content[f.name] = f.default
            elif f.required:
                raise ElicitationError(f"field {f.name!r} is required")
        return ElicitationAnswer("accept", content)

    def accept_defaults(self) -> ElicitationAnswer:
        """Accept with every default applied (what Enter-Enter-Enter at a prompt gives)."""
        return self.answer({})


@dataclass(frozen=True, slots=True)
class UrlElicitation:
    """A URL-mode request: open `url` (out of band, e.g. a sign-in page); accept means the user consented."""

    server: str
    message: str
    url: str
    elicitation_id: str | None = None

    def consent(self) -> ElicitationAnswer:
        return ElicitationAnswer("accept")


def parse_form(server: str, message: str, schema: Mapping[str, Any]) -> ElicitationForm:
    """The typed fields of a requested schema; a property we cannot type is kept as a string field."""
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    fields = tuple(
        _field(str(name), prop if isinstance(prop, Mapping) else {}, str(name) in required)
        for name, prop in props.items()
    )
    return ElicitationForm(server, message, fields, dict(schema))


def _field(name: str, prop: Mapping[str, Any], required: bool) -> ElicitationField:
    kind: FieldKind
    choices: tuple[Choice, ...] = ()
    typ = prop.get("type")
    raw_items = prop.get("items")
    items: Mapping[str, Any] = raw_items if isinstance(raw_items, Mapping) else {}
    if typ == "array":
        kind, choices = "multi_choice", _choices(items)
    elif "enum" in prop or "oneOf" in prop or "anyOf" in prop:
        kind, choices = "choice", _choices(prop)
    elif typ in ("integer", "number", "boolean"):
        kind = typ
    else:
        kind = "string"
    default = prop.get("default")
    if kind == "multi_choice" and isinstance(default, Sequence) and not isinstance(default, str):
        default = [str(x) for x in default]
    elif default is not None and not isinstance(default, str | int | float | bool):
        default = None
    return ElicitationField(
        name=name,
        kind=kind,
        title=str(prop.get("title") or name),
        description=prop.get("description"),
        required=required,
        default=default,
        format=prop.get("format"),
        minimum=_num(prop.get("minimum")),
        maximum=_num(prop.get("maximum")),
        min_length=_int(prop.get("minLength")),
        max_length=_int(prop.get("maxLength")),
        choices=choices,
        min_items=_int(prop.get("minItems")),
        max_items=_int(prop.get("maxItems")),
    )


def _choices(prop: Mapping[str, Any]) -> tuple[Choice, ...]:
    """SEP-1330: `enum` (untitled, or titled by the legacy `enumNames`), `oneOf`/`anyOf` of const+title."""
    if "enum" in prop:
        values = [str(v) for v in prop.get("enum") or ()]
        names = prop.get("enumNames")
        titles = [str(t) for t in names] if isinstance(names, list) and len(names) == len(values) else values
        return tuple(Choice(v, t) for v, t in zip(values, titles, strict=True))
    options = prop.get("oneOf") or prop.get("anyOf") or ()
    return tuple(
        Choice(str(o["const"]), str(o.get("title") or o["const"]))
        for o in options if isinstance(o, Mapping) and "const" in o
    )


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
