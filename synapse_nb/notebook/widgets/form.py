"""ToolForm: the widgets for one tool's arguments, built from schema_form's fields, with a raw-JSON mode."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import ipywidgets as w

from ..output.markup import Html, esc
from . import schema_form as sf

__all__ = ["ToolForm"]

FORM, JSON = "Form", "JSON"
_TYPE_LABEL = {"text": "string", "enum": "choice", "json": "JSON"}


class ToolForm(w.VBox):  # type: ignore[misc]
    """Arguments for one tool. `arguments()` validates, flags each bad field, and returns None if any.

    Widgets change only by trait assignment; each input remembers whether the user touched it, so
    optional fields left alone are not sent and the server applies its own defaults.
    """

    def __init__(self, schema: Mapping[str, Any] | None) -> None:
        self.spec = sf.build_form(schema)
        self.inputs: dict[sf.Path, w.Widget] = {}
        self.error_labels: dict[sf.Path, w.HTML] = {}
        self.touched: set[sf.Path] = set()
        self._loading = False
        self.errors: dict[sf.Path, str] = {}

        self.mode = w.ToggleButtons(
            options=[FORM, JSON], value=FORM, style={"button_width": "64px"},
            tooltips=["Fill in the fields", "Edit the arguments as raw JSON"],
        )
        self.raw = w.Textarea(
            placeholder='{"name": "value"}', layout=w.Layout(width="100%", height="160px"), continuous_update=False
        )
        self.raw_error = w.HTML(layout=w.Layout(margin="0"))
        self.raw_error.add_class("snb-field-error")
        self.note = w.HTML()
        self.note.add_class("snb-muted")
        self.form_box = w.VBox([self._row(f) for f in self.spec.fields], layout=w.Layout(width="100%"))
        no_arguments = not self.spec.fields and not self.spec.raw_only
        if no_arguments:
            self.form_box.children = (w.HTML('<span class="snb-muted">This tool takes no arguments.</span>'),)
        self.body = w.VBox(layout=w.Layout(width="100%"))
        self.raw.value = json.dumps(sf.skeleton(self.spec), indent=2)
        self.raw.observe(self._raw_changed, "value")
        self.mode.observe(self._mode_changed, "value")
        head = [] if no_arguments else [self.mode]  # nothing to switch between
        super().__init__([*head, self.note, self.body], layout=w.Layout(width="100%"))
        if self.spec.raw_only:
            self.mode.value = JSON
            self.mode.disabled = True
            reason = self.spec.raw_only
            self.note.value = esc(f"The form cannot express this schema ({reason}): edit the arguments as JSON.")
        self._show()

    # --- building -------------------------------------------------------------------------------

    def _row(self, f: sf.Field) -> w.Widget:
        star = Html('<span class="snb-req" title="required">*</span>') if f.required else ""
        kind = _TYPE_LABEL.get(f.kind, f.kind if f.kind != "array" else f"list of {f.item_kind}")
        # the whole key, wrapped where it must (never cut); the title too when it says more than the key
        title = Html('<div class="snb-field-title">{}</div>').format(f.title) if _says_more(f.title, f.name) else ""
        label = w.HTML(
            Html('<b title="{}">{}</b>{}{}<div class="snb-muted">{}</div>').format(f.description, f.name, star, title,
                                                                                 kind),
            layout=w.Layout(width="150px", min_width="150px"),
        )
        label.add_class("snb-field-label")
        if f.kind == "object":
            inner = w.VBox([self._row(g) for g in f.fields], layout=w.Layout(width="100%"))
            inner.add_class("snb-card")
            parts: list[w.Widget] = [inner]
        else:
            control = self._control(f)
            self.inputs[f.path] = control
            error = w.HTML(layout=w.Layout(margin="0"))
            error.add_class("snb-field-error")
            self.error_labels[f.path] = error
            parts = [control, error]
        if f.description:
            hint = w.HTML(esc(f.description), layout=w.Layout(margin="0 0 2px 0"))
            hint.add_class("snb-muted")
            parts.insert(1, hint)
        box = w.HBox([label, w.VBox(parts, layout=w.Layout(flex="1"))], layout=w.Layout(width="100%", margin="2px 0"))
        box.add_class(f"snb-field-{'-'.join(f.path)}")
        box.add_class("snb-field")
        return box

    def _control(self, f: sf.Field) -> w.Widget:
        raw = sf.initial_inputs(sf.FormSpec((f,))).get(f.path, sf.RawInput(None)).value
        full = w.Layout(width="100%")
        attr = "value"
        control: w.Widget
        if f.kind == "string":
            control = w.Text(value=raw, placeholder=f.placeholder, layout=full)
        elif f.kind == "text":
            control = w.Textarea(value=raw, placeholder=f.placeholder, rows=3, layout=full)
        elif f.kind in ("number", "integer"):  # a text box: empty means unset (see schema_form.number_as_text)
            control = w.Text(value=raw, placeholder=f.placeholder, layout=w.Layout(width="200px"))
        elif f.kind == "boolean":
            control = w.Checkbox(value=raw, indent=False, description="")
        elif f.kind == "enum":
            control = w.Dropdown(options=sf.enum_labels(f), index=raw, layout=w.Layout(width="auto", max_width="100%"))
            attr = "index"
        elif sf.multi_select(f):  # several of the options: pick with Ctrl/Shift-click
            control = w.SelectMultiple(options=sf.option_labels(f), index=raw, rows=min(len(f.options), 6),
                                       layout=w.Layout(width="auto", max_width="100%"))
            attr = "index"
        else:  # array, json
            rows = 2 if f.kind == "array" else 4
            control = w.Textarea(value=raw, placeholder=f.placeholder, rows=rows, layout=full)
        control.add_class("snb-input")
        control.observe(lambda change, path=f.path: self._touch(path), attr)
        return control

    # --- state ----------------------------------------------------------------------------------

    def _touch(self, path: sf.Path) -> None:
        if self._loading:
            return
        self.touched.add(path)
        if path in self.errors:  # the user is fixing it: stop shouting
            self._set_errors({p: e for p, e in self.errors.items() if p != path})

    def _raw_changed(self, change: Mapping[str, Any]) -> None:
        if () in self.errors:
            self._set_errors({})

    def _show(self) -> None:
        if self.mode.value == JSON:
            self.body.children = (self.raw, self.raw_error)
        else:
            self.body.children = (self.form_box,)

    def _mode_changed(self, change: Mapping[str, Any]) -> None:
        if self._loading:
            return
        if change["new"] == JSON:
            args, _ = sf.collect(self.spec, self.raw_inputs())
            self.raw.value = json.dumps(args, indent=2)
            self._set_errors({})
            self._show()
            return
        args_or_none, errors = sf.parse_json_arguments(self.spec, self.raw.value)
        if args_or_none is None and () in errors and errors[()].startswith(("invalid JSON", "the arguments")):
            self._set_errors(errors)
            self._loading = True
            try:
                self.mode.value = JSON  # stay: the document cannot be loaded into the form
            finally:
                self._loading = False
            return
        args = args_or_none if args_or_none is not None else _loose_object(self.raw.value)
        unknown = self.load(args)
        self.note.value = esc(f"Not in the form, dropped: {', '.join(unknown)}") if unknown else ""
        self._show()

    def raw_inputs(self) -> dict[sf.Path, sf.RawInput]:
        """What every input holds now, for schema_form.collect."""
        out: dict[sf.Path, sf.RawInput] = {}
        for path, control in self.inputs.items():
            value = control.index if isinstance(control, w.Dropdown | w.SelectMultiple) else control.value
            out[path] = sf.RawInput(value, touched=path in self.touched)
        return out

    def load(self, args: Mapping[str, Any]) -> list[str]:
        """Put arguments into the form (as if typed); returns the keys the form has no field for."""
        inputs, unknown = sf.inputs_from_arguments(self.spec, args)
        self._loading = True
        try:
            for path, raw in inputs.items():
                control = self.inputs.get(path)
                if control is None:
                    continue
                if isinstance(control, w.Dropdown | w.SelectMultiple):
                    control.index = raw.value
                else:
                    control.value = raw.value
                if raw.touched:
                    self.touched.add(path)
                else:
                    self.touched.discard(path)
        finally:
            self._loading = False
        return unknown

    def arguments(self) -> dict[str, Any] | None:
        """The arguments to send, or None after flagging every invalid field next to it."""
        if self.mode.value == JSON:
            args, errors = sf.parse_json_arguments(self.spec, self.raw.value)
        else:
            args, errors = sf.collect(self.spec, self.raw_inputs())
        self._set_errors(errors)
        return None if errors else args

    def _set_errors(self, errors: dict[sf.Path, str]) -> None:
        self.errors = dict(errors)
        for path, label in self.error_labels.items():
            message = errors.get(path, "")
            label.value = Html("⚠ {}").format(message) if message else ""
            control = self.inputs[path]
            if message:
                control.add_class("snb-invalid")
            else:
                control.remove_class("snb-invalid")
        doc = errors.get((), "")
        self.raw_error.value = Html("⚠ {}").format(doc) if doc else ""


def _says_more(title: str, key: str) -> bool:
    """Whether a field's title is more than its key re-spelled (`Text` for `text`, `Max Rows` for `max_rows`)."""
    def bare(s: str) -> str:
        return re.sub(r"[\W_]+", "", s).casefold()

    return bool(title) and bare(title) != bare(key)


def _loose_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
