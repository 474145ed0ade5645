"""Native tools' arguments: a pydantic model built from a function's signature gives the JSON schema the model
sees and validates (and coerces) the arguments it sends; descriptions come from the (Google or NumPy) docstring.

    arguments = ToolArguments.of(weather)    # weather(city: str, days: int = 3, unit: Unit = Unit.C)
    arguments.input_schema                   # {"type": "object", "properties": {"city": {"type": "string"}, ...}}
    args, kwargs = arguments.bind({"city": "Oslo", "days": "2", "unit": "c"})   # days=2, unit=Unit.C

As the MCP SDK does for its servers' tools (func_metadata), with a schema kept compact for models: no
titles, enums inline, and an optional parameter with a default offered as its plain type.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PydanticSchemaGenerationError,
    TypeAdapter,
    ValidationError,
    create_model,
)
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, JsonSchemaWarningKind
from pydantic_core import core_schema

__all__ = ["ToolArguments", "parse_docstring", "schema_from_function"]


@dataclass(frozen=True, slots=True)
class ToolArguments:
    """The arguments of one native tool: their JSON schema, and how to turn what the model sent into a call."""

    description: str
    input_schema: dict[str, Any]
    model: type[BaseModel]
    fields: tuple[tuple[str, str, bool], ...]  # (model field, parameter name, positional-only)
    extra: bool  # the function takes **kwargs: unknown arguments go there

    @classmethod
    def of(cls, fn: Callable[..., Any]) -> ToolArguments:
        """Build the model of `fn`'s parameters (its signature, type hints and docstring)."""
        description, param_docs = parse_docstring(inspect.getdoc(fn))
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except Exception:  # an unresolvable forward reference: resolve the others one by one
            hints = _hints_one_by_one(fn)
        definitions: dict[str, Any] = {}
        fields: list[tuple[str, str, bool]] = []
        extra = False
        for i, p in enumerate(inspect.signature(fn).parameters.values()):
            if p.kind is inspect.Parameter.VAR_KEYWORD:
                extra = True
                continue
            if p.kind is inspect.Parameter.VAR_POSITIONAL:
                continue
            annotation, note = _annotation(hints.get(p.name, Any))
            doc = note or param_docs.get(p.name) or None
            default = ... if p.default is inspect.Parameter.empty else p.default
            # the model's field names are ours (a parameter may be called `json` or `_x`); the alias is the name
            name = f"arg{i}"
            # without a doc, an Annotated Field's own description stands
            info = Field(default, alias=p.name, description=doc) if doc else Field(default, alias=p.name)
            definitions[name] = (annotation, info)
            fields.append((name, p.name, p.kind is inspect.Parameter.POSITIONAL_ONLY))
        config = ConfigDict(extra="allow" if extra else "forbid", coerce_numbers_to_str=True,
                            arbitrary_types_allowed=True)
        model: type[BaseModel] = create_model(  # type: ignore[call-overload]
            f"{getattr(fn, '__name__', 'tool')}_arguments", __config__=config, **definitions)
        schema = model.model_json_schema(by_alias=True, schema_generator=_CompactSchema)
        return cls(description, _inline(schema), model, tuple(fields), extra)

    def bind(self, arguments: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """Positional and keyword arguments for the function, validated and coerced by the model.

        Raises TypeError (one line naming each bad argument) when they do not fit the signature.
        """
        try:
            values = self.model.model_validate(dict(arguments))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'arguments'}: {e['msg']}"
                                 for e in exc.errors(include_url=False))
            raise TypeError(f"arguments do not fit the tool: {problems}") from None
        given = values.model_fields_set
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for field, param, positional in self.fields:
            if field not in given:
                continue  # the function's own default applies
            if positional:
                args.append(getattr(values, field))
            else:
                kwargs[param] = getattr(values, field)
        kwargs.update(values.model_extra or {})
        return args, kwargs


def schema_from_function(fn: Callable[..., Any]) -> tuple[str, dict[str, Any]]:
    """The description and the JSON input schema of a function (ToolArguments.of's)."""
    arguments = ToolArguments.of(fn)
    return arguments.description, arguments.input_schema


def _hints_one_by_one(fn: Callable[..., Any]) -> dict[str, Any]:
    """The type hints of `fn` that resolve (in its module's namespace); the others are left out (any value)."""
    hints: dict[str, Any] = {}
    namespace = getattr(fn, "__globals__", {})
    for name, annotation in dict(getattr(fn, "__annotations__", {})).items():
        try:
            hints[name] = typing.get_type_hints(_Holder(annotation), namespace, include_extras=True)["value"]
        except Exception:  # unresolvable: that parameter takes any value
            continue
    return hints


class _Holder:
    """An object whose one annotation is the given one, so typing resolves it as it resolves a function's."""

    def __init__(self, annotation: Any) -> None:
        self.__annotations__ = {"value": annotation}


def _annotation(tp: Any) -> tuple[Any, str | None]:
    """The annotation pydantic validates with (Any where it cannot), and an `Annotated[T, "note"]` note."""
    note: str | None = None
    if get_origin(tp) is typing.Annotated:
        base, *meta = get_args(tp)
        notes = [m for m in meta if isinstance(m, str)]
        note = " ".join(notes) or None
        rest = [m for m in meta if not isinstance(m, str)]
        tp = typing.Annotated[(base, *rest)] if rest else base  # type: ignore[valid-type]
    if isinstance(tp, str) or tp is inspect.Parameter.empty or tp is object:
        return Any, note
    try:
        TypeAdapter(tp)
    except (PydanticSchemaGenerationError, TypeError, NameError):
        return Any, note  # a type pydantic cannot check (a DataFrame...): passed on as given, as before
    return tp, note


class _CompactSchema(GenerateJsonSchema):
    """Pydantic's JSON schema, without what only adds tokens for a model: titles, `additionalProperties: true`."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        json_schema = super().dict_schema(schema)
        if json_schema.get("additionalProperties") is True:
            del json_schema["additionalProperties"]
        return json_schema

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        # an optional parameter with a default: the model may leave it out, so offer the plain type
        inner = schema["schema"]
        if inner["type"] == "nullable":
            schema = {**schema, "schema": inner["schema"]}
        json_schema = super().default_schema(schema)
        if json_schema.get("default", 0) is None:
            del json_schema["default"]
        return json_schema

    def emit_warning(self, kind: JsonSchemaWarningKind, detail: str) -> None:
        if kind != "non-serializable-default":  # a default JSON cannot express is simply not advertised
            super().emit_warning(kind, detail)


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with `$ref`s to its `$defs` replaced by what they point at (unless a definition is recursive)."""
    schema = dict(schema)
    schema.pop("title", None)
    if schema.get("additionalProperties") is True:
        del schema["additionalProperties"]
    defs = schema.pop("$defs", None)
    if not defs:
        return schema

    def resolve(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [resolve(n, seen) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            key = ref.removeprefix("#/$defs/")
            if key in seen:
                raise RecursionError(key)
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            target = {k: v for k, v in defs[key].items() if k != "title"}  # the class name says nothing more
            return {**resolve(target, seen | {key}), **resolve(siblings, seen)}
        return {k: resolve(v, seen) for k, v in node.items()}

    try:
        resolved: dict[str, Any] = resolve(schema, frozenset())
        return resolved
    except RecursionError:  # a recursive type: keep the references
        return {**schema, "$defs": defs}


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


