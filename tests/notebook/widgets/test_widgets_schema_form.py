"""schema_form: JSON Schema -> fields, form input -> arguments and per-field errors (no widgets involved)."""

from __future__ import annotations

from typing import Any

import pytest

from synapse_nb.notebook.widgets import schema_form as sf
from synapse_nb.notebook.widgets.schema_check import check_value

RawInput = sf.RawInput


def kinds(schema: dict[str, Any]) -> dict[str, str]:
    return {".".join(f.path): f.kind for f in sf._walk(sf.build_form(schema).fields)}


def obj(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or [], **extra}


# --- schema -> fields ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prop", "kind"),
    [
        ({"type": "string"}, "string"),
        ({"type": "string", "maxLength": 5000}, "text"),
        ({"type": "string", "format": "textarea"}, "text"),
        ({"type": "number"}, "number"),
        ({"type": "integer"}, "integer"),
        ({"type": "boolean"}, "boolean"),
        ({"enum": ["a", "b"]}, "enum"),
        ({"type": "string", "enum": ["a", "b"]}, "enum"),
        ({"const": "fixed"}, "enum"),
        ({"type": "array", "items": {"type": "integer"}}, "array"),
        ({"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}, "json"),
        ({"type": "array"}, "json"),
        ({"type": "object"}, "json"),
        ({"type": "object", "additionalProperties": {"type": "string"}}, "json"),
        ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, "json"),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "json"),
        ({"allOf": [{"type": "string"}, {"minLength": 2}]}, "json"),
        ({"type": ["string", "integer"]}, "json"),
        ({"$ref": "https://example.com/schema.json"}, "json"),
        ({"not": {"type": "string"}}, "json"),
        ({}, "json"),
        ({"enum": [{"a": 1}, {"b": 2}]}, "json"),
    ],
)
def test_each_property_gets_the_widget_kind_its_schema_calls_for(prop: dict[str, Any], kind: str) -> None:
    assert kinds(obj({"x": prop})) == {"x": kind}


def test_multi_line_names_get_a_text_area_others_a_line() -> None:
    assert kinds(obj({"sql": {"type": "string"}, "table": {"type": "string"}})) == {"sql": "text", "table": "string"}


def test_nullable_unions_unwrap_to_the_non_null_type() -> None:
    form = sf.build_form(obj({
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None, "description": "max rows"},
        "name": {"type": ["string", "null"]},
    }))
    limit, name = form.fields
    assert (limit.kind, limit.nullable, limit.has_default, limit.description) == ("integer", True, False, "max rows")
    assert (name.kind, name.nullable) == ("string", True)


def test_local_refs_resolve_into_sub_forms_and_recursive_ones_fall_back_to_json() -> None:
    schema = obj(
        {"cfg": {"$ref": "#/$defs/Cfg", "description": "settings"}, "tree": {"$ref": "#/$defs/Node"}},
        ["cfg"],
        **{"$defs": {
            "Cfg": obj({"depth": {"type": "integer", "minimum": 1}}, ["depth"]),
            "Node": obj({"child": {"$ref": "#/$defs/Node"}, "label": {"type": "string"}}),
        }},
    )
    form = sf.build_form(schema)
    cfg, tree = form.fields
    assert (cfg.kind, cfg.required, cfg.description) == ("object", True, "settings")
    assert [(f.path, f.kind, f.required) for f in cfg.fields] == [(("cfg", "depth"), "integer", True)]
    assert tree.kind == "object"
    assert [(f.name, f.kind, f.reason) for f in tree.fields] == [
        ("child", "json", "recursive $ref"), ("label", "string", ""),
    ]


def test_a_top_level_the_form_cannot_express_is_raw_json_only() -> None:
    either = {"oneOf": [obj({"a": {"type": "string"}}), obj({"b": {"type": "string"}})]}
    assert sf.build_form(either).raw_only == "oneOf"
    assert sf.build_form({"type": "array"}).raw_only
    assert sf.build_form({"type": "object", "additionalProperties": True}).raw_only == "free-form object"
    assert sf.build_form(None).fields == ()
    assert sf.build_form({"type": "object", "properties": {}}).raw_only is None


def test_defaults_required_marks_and_placeholders() -> None:
    form = sf.build_form(obj({
        "n": {"type": "integer", "default": 3},
        "tags": {"type": "array", "items": {"type": "string"}},
        "limit": {"type": "integer"},
        "when": {"type": "string", "format": "date"},
    }, ["tags"]))
    n, tags, limit, when = form.fields
    assert (n.default, n.required, tags.required) == (3, False, True)
    assert "one per line" in tags.placeholder
    assert limit.placeholder == "optional integer"
    assert when.placeholder == "date"
    assert sf.initial_inputs(form)[("n",)].value == ""  # empty, with the default as its placeholder
    assert n.placeholder == "default: 3"
    assert sf.number_as_text(limit)
    assert sf.number_as_text(n)


# --- input -> arguments -----------------------------------------------------------------------------


ECHO = obj({"text": {"type": "string"}}, ["text"])


def test_a_missing_required_field_is_flagged_and_nothing_is_collected() -> None:
    args, errors = sf.collect(sf.build_form(ECHO), {("text",): RawInput("")})
    assert errors == {("text",): "required"}
    assert args == {}


def test_valid_input_becomes_typed_arguments() -> None:
    form = sf.build_form(obj({
        "text": {"type": "string"},
        "n": {"type": "integer"},
        "x": {"type": "number"},
        "flag": {"type": "boolean"},
        "mode": {"enum": ["fast", "slow"]},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "extra": {"type": "object", "additionalProperties": True},
    }, ["text", "n", "x", "flag", "mode"]))
    args, errors = sf.collect(form, {
        ("text",): RawInput("hi"),
        ("n",): RawInput(3, touched=True),
        ("x",): RawInput(2.5),
        ("flag",): RawInput(True),
        ("mode",): RawInput(1),
        ("ids",): RawInput("1, 2,3"),
        ("extra",): RawInput('{"k": [1, null]}'),
    })
    assert errors == {}
    assert args == {"text": "hi", "n": 3, "x": 2.5, "flag": True, "mode": "slow", "ids": [1, 2, 3],
                    "extra": {"k": [1, None]}}


@pytest.mark.parametrize(
    ("prop", "raw", "message"),
    [
        ({"type": "integer"}, "abc", "not a number: 'abc'"),
        ({"type": "integer"}, "3.5", "not a whole number: '3.5'"),
        ({"type": "number"}, "nan", "not a finite number: 'nan'"),
        ({"type": "number", "minimum": 0}, "-1", "must be ≥ 0"),
        ({"type": "integer", "exclusiveMaximum": 10}, "10", "must be < 10"),
        ({"type": "integer", "multipleOf": 5}, "7", "must be a multiple of 5"),
        ({"type": "array", "items": {"type": "integer"}}, "1, x", "item 2: not a number: 'x'"),
        ({"type": "array", "items": {"type": "boolean"}}, "yes\nmaybe", "item 2: not true/false: 'maybe'"),
        ({"type": "array", "items": {"enum": ["a", "b"]}}, "a, c", "item 2: 'c' is not one of a, b"),
        ({"type": "array", "items": {"type": "string"}, "maxItems": 1}, "a, b", "allows at most 1 items"),
        ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, "a\na", "items must be unique"),
        ({"type": "object"}, '{"a": ', "invalid JSON: Expecting value (line 1, column 6)"),
        ({"type": "object"}, "[1]", "expected object, got array"),
        ({"type": "string", "minLength": 3}, "ab", "needs at least 3 characters"),
        ({"type": "string", "pattern": "^[a-z]+$"}, "AB", "must match ^[a-z]+$"),
    ],
)
def test_bad_input_is_flagged_on_its_field(prop: dict[str, Any], raw: str, message: str) -> None:
    form = sf.build_form(obj({"x": prop}, ["x"]))
    args, errors = sf.collect(form, {("x",): RawInput(raw, touched=True)})
    assert errors == {("x",): message}
    assert "x" not in args


def test_optional_fields_left_alone_are_not_sent() -> None:
    form = sf.build_form(obj({
        "n": {"type": "integer", "default": 5},
        "flag": {"type": "boolean"},
        "mode": {"enum": ["a", "b"]},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        "note": {"type": "string"},
    }))
    assert sf.collect(form, sf.initial_inputs(form)) == ({}, {})
    args, _ = sf.collect(form, {
        ("n",): RawInput(5, touched=True), ("flag",): RawInput(False, touched=True),
        ("mode",): RawInput(2, touched=True),
        ("limit",): RawInput("7"), ("note",): RawInput("x"),
    })
    assert args == {"n": 5, "flag": False, "mode": "b", "limit": 7, "note": "x"}


def test_an_optional_enum_offers_an_unset_choice() -> None:
    field = sf.build_form(obj({"mode": {"enum": ["a", 2, None]}})).fields[0]
    assert sf.enum_labels(field) == [sf.UNSET_LABEL, "a", "2", "null"]
    required = sf.build_form(obj({"mode": {"enum": ["a", "b"]}}, ["mode"])).fields[0]
    assert sf.enum_labels(required) == ["a", "b"]


def test_an_optional_sub_form_is_sent_only_when_touched_and_then_checked() -> None:
    form = sf.build_form(obj({"cfg": obj({"k": {"type": "number", "minimum": 0}, "name": {"type": "string"}}, ["k"])}))
    assert sf.collect(form, sf.initial_inputs(form)) == ({}, {})
    inputs = {**sf.initial_inputs(form), ("cfg", "k"): RawInput(-1.0, touched=True)}
    assert sf.collect(form, inputs) == ({"cfg": {}}, {("cfg", "k"): "must be ≥ 0"})
    inputs[("cfg", "k")] = RawInput(2.0, touched=True)
    assert sf.collect(form, inputs) == ({"cfg": {"k": 2.0}}, {})


def test_a_required_sub_form_reports_its_missing_parts() -> None:
    form = sf.build_form(obj({"cfg": obj({"name": {"type": "string"}}, ["name"])}, ["cfg"]))
    assert sf.collect(form, sf.initial_inputs(form)) == ({"cfg": {}}, {("cfg", "name"): "required"})


def test_arrays_accept_lines_commas_or_a_json_array() -> None:
    form = sf.build_form(obj({"names": {"type": "array", "items": {"type": "string"}}}))
    for raw, expected in (("a, b", ["a", "b"]), ("a, b\nc", ["a, b", "c"]), ('["x, y"]', ["x, y"])):
        assert sf.collect(form, {("names",): RawInput(raw)}) == ({"names": expected}, {})


# --- raw JSON mode -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("{bad", "invalid JSON: Expecting property name enclosed in double quotes (line 1, column 2)"),
        ("[1, 2]", "the arguments must be a JSON object, not array"),
        ("{}", "text: required"),
        ('{"text": 5}', "text: expected string, got integer"),
    ],
)
def test_the_raw_editor_is_checked_against_the_schema(text: str, error: str) -> None:
    assert sf.parse_json_arguments(sf.build_form(ECHO), text) == (None, {(): error})


def test_the_raw_editor_passes_what_the_form_cannot_check() -> None:
    form = sf.build_form({"oneOf": [obj({"a": {"type": "string"}}, ["a"]), obj({"b": {"type": "integer"}}, ["b"])]})
    assert sf.parse_json_arguments(form, '{"b": 1}') == ({"b": 1}, {})
    assert sf.parse_json_arguments(sf.build_form(ECHO), "  ") == (None, {(): "text: required"})


def test_json_round_trips_through_the_form() -> None:
    schema = obj({
        "text": {"type": "string"}, "n": {"type": "integer", "default": 1},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "mode": {"enum": ["a", "b"]}, "cfg": obj({"k": {"type": "number"}}), "any": {},
    }, ["text"])
    form = sf.build_form(schema)
    args = {"text": "hi", "n": 4, "ids": [1, 2], "mode": "b", "cfg": {"k": 1.5}, "any": {"deep": [1]}, "zzz": 1}
    inputs, unknown = sf.inputs_from_arguments(form, args)
    assert unknown == ["zzz"]
    back, errors = sf.collect(form, inputs)
    assert errors == {}
    assert back == {k: v for k, v in args.items() if k != "zzz"}


def test_the_skeleton_starts_the_raw_editor_with_defaults_and_required_blanks() -> None:
    props = {"a": {"type": "string"}, "b": {"type": "integer", "default": 2}, "c": {"type": "boolean"}}
    form = sf.build_form(obj(props, ["a"]))
    assert sf.skeleton(form) == {"a": "", "b": 2}


def test_the_checker_treats_json_numbers_as_json_does() -> None:
    assert check_value({"type": "integer"}, 2.0) is None
    assert check_value({"type": "integer"}, True) == "expected integer, got boolean"
    assert check_value({"enum": [1, 2]}, 1.0) is None
    assert check_value({"enum": [1, 2]}, True) == "must be one of: 1, 2"
    closed = {"type": "object", "properties": {}, "additionalProperties": False}
    assert check_value(closed, {"x": 1}) == "x: unknown property"
    assert check_value({"type": "array", "items": {"type": "string"}}, ["a", 1]) == "[1]: expected string, got integer"


@pytest.mark.process
def test_jsonschema_is_imported_only_when_a_form_is_checked() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from synapse_nb.notebook.widgets import schema_form as sf; "
        "form = sf.build_form({'type': 'object', 'properties': {'n': {'type': 'integer', 'minimum': 1}}}); "
        "assert 'jsonschema' not in sys.modules, 'imported early'; "
        "print(sf.collect(form, {('n',): sf.RawInput('0')})); assert 'jsonschema' in sys.modules"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "must be ≥ 1" in out.stdout
