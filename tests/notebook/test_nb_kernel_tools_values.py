"""The kernel tools' pure parts: secret-name rules, bounded reprs, variable rows, descriptions, and run_code edges."""

from __future__ import annotations

import base64
import os
from typing import Any

import numpy as np
import pandas as pd
import pytest

from synapse_nb.notebook.workspace.run import run_code
from synapse_nb.notebook.workspace.values import (
    MAX_VARIABLES,
    bounded_repr,
    describe_frame,
    is_secret_name,
    list_rows,
    refusal,
    secret_values,
    user_variables,
    variable_row,
)


@pytest.mark.parametrize(
    ("name", "secret"),
    [("api_key", True), ("OPENAI_API_KEY", True), ("github_Token", True), ("client_secret", True),
     ("db_password", True), ("PassWord", True), ("keys", True), ("sales", False), ("tokenize", True),
     ("df", False), ("pw", False)],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_refusal_covers_secret_names_and_the_environment() -> None:
    assert refusal("sales", 1) is None
    assert "looks like a secret" in str(refusal("my_token", "x"))
    assert refusal("env", os.environ) == "environment variables are never shown"


def test_secret_values_walks_nested_mappings_within_bounds() -> None:
    ns: dict[str, Any] = {
        "api_key": "k-123456", "cfg": {"db": {"password": "p-123456"}, "user": "bob"}, "_token": "hidden-by-underscore",
        "env": os.environ, "n": 3,
    }
    assert sorted(secret_values(ns)) == ["k-123456", "p-123456"]
    deep: dict[str, Any] = {"a": {"b": {"c": {"d": {"password": "too-deep"}}}}}
    assert secret_values(deep) == []


def test_bounded_repr_keeps_dict_order_and_cuts_big_values() -> None:
    assert bounded_repr({"b": 2, "a": 1}) == "{'b': 2, 'a': 1}"
    assert bounded_repr(list(range(1000))).endswith(", ...]")
    assert len(bounded_repr("x" * 100_000)) < 500
    frame = pd.DataFrame({"a": range(1000)})
    text = bounded_repr(frame)
    assert "[1000 rows x 1 columns]" in text
    assert len(text.splitlines()) < 30

    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    assert bounded_repr(Broken()).startswith("<")


def test_user_variables_and_rows() -> None:
    import json as json_module

    hidden = {"In": [], "exit": object()}
    ns: dict[str, Any] = {
        "In": hidden["In"], "exit": hidden["exit"], "json_module": json_module, "f": lambda: 1, "K": int,
        "_x": 1, "df": pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}), "arr": np.zeros((2, 3)), "items": [1, 2, 3],
        "n": 5,
    }
    assert user_variables(ns, hidden) == ["arr", "df", "items", "n"]
    row = variable_row("df", ns["df"])
    assert row["type"] == "pandas.DataFrame"
    assert row["shape"] == "2 x 2"
    assert row["columns"] == "a, b"
    assert row["size"].endswith("B")
    assert variable_row("arr", ns["arr"])["size"] == "48 B"
    assert variable_row("n", 5) == {"name": "n", "type": "int"}
    many = {f"v{i:04d}": i for i in range(MAX_VARIABLES + 5)}
    listed = list_rows(many, None, None)
    assert len(listed["variables"]) == MAX_VARIABLES
    assert listed["more"].startswith("5 more variables")


def test_describe_frame_bounds_rows_and_columns() -> None:
    wide = pd.DataFrame({f"c{i}": range(3) for i in range(100)})
    text = describe_frame(wide, "wide", rows=500)
    assert "- ... 40 more columns" in text
    assert "first 3 rows:" in text
    with pytest.raises(TypeError, match="not a DataFrame or Series"):
        describe_frame([1, 2], "items")


class Picture:
    """Displays as a PNG (as a matplotlib figure does under the inline backend's plt.show())."""

    def _repr_png_(self) -> bytes:
        return PNG

    def __repr__(self) -> str:
        return "Picture()"


PNG = b"\x89PNG\r\n\x1a\n-not-really-an-image"


def test_run_code_captures_stderr_displays_and_shown_images(ip: Any) -> None:
    # (ip: displays are captured from the shell's display publisher, as in a kernel)
    ns: dict[str, Any] = {"Picture": Picture}
    outcome = run_code(
        "import sys\nfrom IPython.display import display\n"
        "print('warned', file=sys.stderr)\ndisplay('shown')\ndisplay(Picture())\nx = 1",
        ns,
    )
    assert outcome.stderr == "warned\n"
    assert outcome.displayed == ("'shown'",)
    assert [base64.b64decode(i) for i in outcome.images] == [PNG]
    assert outcome.assigned == ("display", "sys", "x")
    assert outcome.error is None
    assert outcome.value is None


def test_run_code_left_open_figures_become_pngs_and_are_closed() -> None:
    plt = pytest.importorskip("matplotlib.pyplot")
    before = set(plt.get_fignums())
    outcome = run_code("import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.bar(['a', 'b'], [1, 2])", {})
    assert len(outcome.images) == 1
    assert base64.b64decode(outcome.images[0]).startswith(b"\x89PNG")
    assert set(plt.get_fignums()) == before
