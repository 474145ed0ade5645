"""ToolForm: the widgets built for each kind, errors shown next to their field, the raw-JSON toggle."""

from __future__ import annotations

import json

import ipywidgets as w

from synapse_nb.notebook.widgets.form import JSON, ToolForm

SCHEMA = {
    "type": "object",
    "properties": {
        "sql": {"type": "string", "description": "A read-only <SELECT>"},
        "table": {"type": "string"},
        "limit": {"type": "integer", "default": 10},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1},
        "offset": {"type": "integer"},
        "dry": {"type": "boolean"},
        "fmt": {"enum": ["csv", "json"], "default": "csv"},
        "cols": {"type": "array", "items": {"type": "string"}},
        "cfg": {"type": "object", "properties": {"k": {"type": "string"}}},
        "any": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
    },
    "required": ["sql", "ratio"],
}


def test_each_kind_gets_its_widget_with_default_hint_and_required_mark() -> None:
    form = ToolForm(SCHEMA)
    types = {".".join(p): type(c).__name__ for p, c in form.inputs.items()}
    assert types == {
        "sql": "Textarea", "table": "Text", "limit": "Text", "ratio": "Text", "offset": "Text",
        "dry": "Checkbox", "fmt": "Dropdown", "cols": "Textarea", "cfg.k": "Text", "any": "Textarea",
    }
    assert form.inputs[("limit",)].value == ""  # starts empty: the default is the placeholder ...
    assert form.inputs[("limit",)].placeholder == "default: 10"
    assert form.inputs[("ratio",)].value == ""  # ... and a required number starts empty, never at 0
    assert form.inputs[("ratio",)].placeholder == "required number"
    assert form.inputs[("fmt",)].value == "csv"
    assert form.inputs[("offset",)].placeholder == "optional integer"
    rows = {box._dom_classes[0]: box for box in _rows(form)}
    sql_label = rows["snb-field-sql"].children[0].value
    assert 'class="snb-req"' in sql_label
    assert 'class="snb-req"' not in rows["snb-field-table"].children[0].value
    hint = rows["snb-field-sql"].children[1].children[1].value
    assert hint == "A read-only &lt;SELECT&gt;"  # descriptions are escaped, never HTML
    assert form.mode.value == "Form"


def _rows(box: w.Widget) -> list[w.Widget]:
    out = []
    for child in getattr(box, "children", ()):
        if any(c.startswith("snb-field-") for c in getattr(child, "_dom_classes", ())):
            out.append(child)
        out.extend(_rows(child))
    return out


def test_invalid_input_is_flagged_next_to_each_field_and_nothing_is_returned() -> None:
    form = ToolForm(SCHEMA)
    form.inputs[("offset",)].value = "ten"
    form.inputs[("ratio",)].value = "1.5"
    assert form.arguments() is None
    assert form.error_labels[("sql",)].value == "⚠ required"
    assert form.error_labels[("offset",)].value == "⚠ not a number: &#x27;ten&#x27;"
    assert form.error_labels[("ratio",)].value == "⚠ must be ≤ 1"
    assert form.error_labels[("table",)].value == ""
    assert "snb-invalid" in form.inputs[("sql",)]._dom_classes


def test_fixing_a_field_clears_its_error_and_valid_input_is_returned() -> None:
    form = ToolForm(SCHEMA)
    assert form.arguments() is None
    form.inputs[("sql",)].value = "select 1"
    assert form.error_labels[("sql",)].value == ""
    assert "snb-invalid" not in form.inputs[("sql",)]._dom_classes
    form.inputs[("ratio",)].value = "0.5"
    form.inputs[("cols",)].value = "a\nb"
    form.inputs[("dry",)].value = True
    form.inputs[("fmt",)].value = "json"
    assert form.arguments() == {"sql": "select 1", "ratio": 0.5, "cols": ["a", "b"], "dry": True, "fmt": "json"}
    assert all(label.value == "" for label in form.error_labels.values())


def test_switching_to_json_carries_the_form_over_and_back() -> None:
    form = ToolForm(SCHEMA)
    form.inputs[("sql",)].value = "select 2"
    form.inputs[("ratio",)].value = "0.25"
    form.mode.value = JSON
    assert form.body.children == (form.raw, form.raw_error)
    assert json.loads(form.raw.value) == {"sql": "select 2", "ratio": 0.25}
    form.raw.value = json.dumps({"sql": "select 3", "ratio": 1, "limit": 7, "cfg": {"k": "v"}, "bogus": 1})
    assert form.arguments() == {"sql": "select 3", "ratio": 1, "limit": 7, "cfg": {"k": "v"}, "bogus": 1}
    form.mode.value = "Form"
    assert form.body.children == (form.form_box,)
    assert form.inputs[("sql",)].value == "select 3"
    assert form.inputs[("limit",)].value == "7"
    assert form.inputs[("cfg", "k")].value == "v"
    assert "bogus" in form.note.value
    assert form.arguments() == {"sql": "select 3", "ratio": 1.0, "limit": 7, "cfg": {"k": "v"}}


def test_bad_json_is_flagged_and_keeps_the_editor_open() -> None:
    form = ToolForm(SCHEMA)
    form.mode.value = JSON
    form.raw.value = '{"sql": '
    assert form.arguments() is None
    assert form.raw_error.value.startswith("⚠ invalid JSON")
    form.mode.value = "Form"  # cannot load a broken document into the form
    assert form.mode.value == JSON
    assert form.raw.value == '{"sql": '
    assert form.raw_error.value.startswith("⚠ invalid JSON")
    form.raw.value = '{"sql": "x", "ratio": 0}'
    assert form.raw_error.value == ""
    assert form.arguments() == {"sql": "x", "ratio": 0}


def test_a_schema_the_form_cannot_express_opens_in_json_with_the_reason() -> None:
    form = ToolForm({"anyOf": [{"type": "object"}, {"type": "string"}]})
    assert form.mode.value == JSON
    assert form.mode.disabled
    assert "anyOf" in form.note.value
    form.raw.value = '{"free": true}'
    assert form.arguments() == {"free": True}


def test_a_tool_without_arguments_has_no_toggle_and_sends_an_empty_object() -> None:
    form = ToolForm({"type": "object", "properties": {}})
    assert form.mode not in form.children
    assert "takes no arguments" in form.form_box.children[0].value
    assert form.arguments() == {}


def test_a_required_number_left_empty_is_flagged_not_sent_as_zero() -> None:
    form = ToolForm({"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]})
    assert form.inputs[("seconds",)].value == ""
    assert form.arguments() is None
    assert form.error_labels[("seconds",)].value == "⚠ required"
    form.inputs[("seconds",)].value = "0"
    assert form.arguments() == {"seconds": 0.0}


def test_a_label_shows_the_whole_key_and_a_title_only_when_it_says_more() -> None:
    form = ToolForm({"type": "object", "properties": {
        "max_rows": {"type": "integer", "title": "Max Rows"},  # the key re-spelled: not repeated
        "email": {"type": "string", "title": "Your work email"},
        "untitledSingleSelectEnum": {"type": "string", "enum": ["a", "b"]},
    }})
    labels = {box._dom_classes[0]: box.children[0] for box in _rows(form) if isinstance(box, w.Box)}
    assert "snb-field-title" not in labels["snb-field-max_rows"].value
    assert '<div class="snb-field-title">Your work email</div>' in labels["snb-field-email"].value
    long_key = labels["snb-field-untitledSingleSelectEnum"]
    assert ">untitledSingleSelectEnum</b>" in long_key.value  # whole, never cut
    assert "snb-field-label" in long_key._dom_classes  # the class whose CSS wraps it (checked in the browser)
