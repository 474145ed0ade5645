"""`{expr}` in prompts: lookups only; unknown or unsafe text stays literal; DataFrames read compactly."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from synapse_nb.notebook.turns.interpolate import interpolate, render_value


@dataclass
class Config:
    path: str
    items: list[str]


def test_names_attributes_and_indexes_are_looked_up() -> None:
    ns = {"city": "Lyon", "cfg": Config("/data/x.csv", ["a", "b"]), "d": {"k": {"deep": 3}}, "rows": [10, 20]}
    prompt = "In {city}, read {cfg.path} ({cfg.items[1]}); {d['k']['deep']} and {rows[-1]} and {d[\"k\"]}"
    assert interpolate(prompt, ns) == 'In Lyon, read /data/x.csv (b); 3 and 20 and {"deep": 3}'


def test_unknown_names_and_failing_lookups_stay_literal() -> None:
    ns = {"rows": [1], "cfg": Config("p", [])}
    text = "{missing} {rows[5]} {cfg.nope} {rows['x']}"
    assert interpolate(text, ns) == text


def test_code_is_never_evaluated() -> None:
    calls: list[str] = []

    def boom() -> str:
        calls.append("called")
        return "x"

    ns = {"boom": boom, "a": 1, "b": 2, "obj": Config("p", [])}
    text = "{boom()} {a + b} {obj.__class__} {obj._private} {[x for x in a]} {a: 1}"
    assert interpolate(text, ns) == text
    assert calls == []


def test_double_braces_are_literal_braces() -> None:
    assert interpolate("{{name}} is {name}", {"name": "N"}) == "{name} is N"


def test_dataframes_render_as_schema_and_head() -> None:
    df = pd.DataFrame({"product": [f"p{i}" for i in range(50)], "revenue": [float(i) for i in range(50)]})
    text = interpolate("Look at {df}", {"df": df})
    assert "DataFrame with 50 rows x 2 columns: product (object), revenue (float64)" in text.replace("str", "object")
    assert "first 5 shown" in text
    assert "p4" in text
    assert "p5" not in text


def test_series_and_containers() -> None:
    assert render_value({"a": [1, 2]}) == '{"a": [1, 2]}'
    series = pd.Series([1, 2, 3], name="n")
    assert render_value(series).startswith("Series 'n' with 3 values (int64)")


def test_long_values_are_cut_with_a_note() -> None:
    text = render_value("x" * 100, max_chars=10)
    assert text.startswith("x" * 10)
    assert "90 more characters cut" in text
