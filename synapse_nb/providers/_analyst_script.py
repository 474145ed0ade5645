"""The built-in "analyst" script (`scripted:analyst`): analyses a DataFrame in the kernel with the `kernel__*` tools.

One question plays: list the variables, describe the DataFrame the prompt names (else the first one),
then one `run_python` that sums a numeric column by a categorical one and draws a bar chart, and an
answer with the numbers. Columns named in the prompt are preferred. Declined code gets an answer from
the description alone.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from ._script import Conversation, Reply, ToolOutcome

__all__ = ["AnalystScript"]

NEEDS_KERNEL = (
    "I'm the offline **scripted** analyst: I answer from the DataFrames in your kernel, but I cannot see it in "
    "this cell. Run the question with `%%synapse --kernel` (or `%config SynapseMagics.kernel_tools = True`)."
)
_COLUMN = re.compile(r"^- (?P<name>.+?) \((?P<dtype>[^,]+), (?P<nulls>[\d,]+) null\)$", re.M)
_SHAPE = re.compile(r": pandas DataFrame, (?P<rows>[\d,]+) rows x (?P<cols>\d+) columns")
_NUMERIC = re.compile(r"^(u?int|float|Int|UInt|Float|decimal)", re.I)
_CATEGORICAL = re.compile(r"^(str|string|object|category|bool)", re.I)


def _frames(outcome: ToolOutcome) -> list[str]:
    try:
        data = json.loads(outcome.text)
    except ValueError:
        return []
    rows = data.get("variables", []) if isinstance(data, dict) else []
    return [r["name"] for r in rows if isinstance(r, dict) and r.get("type") == "pandas.DataFrame"]


def _mentioned(names: list[str], prompt: str) -> str | None:
    return next((n for n in names if re.search(rf"\b{re.escape(n)}\b", prompt)), None)


def _value(text: str) -> Any:
    """The `value:` section of a run_python result, as a Python literal (None if it is not one)."""
    match = re.search(r"^value:\n(.*?)(?:\n(?:error|assigned|figures|stdout|stderr|displayed)\b|\Z)", text, re.S | re.M)
    if match is None:
        return None
    try:
        return ast.literal_eval(match.group(1).strip())
    except (ValueError, SyntaxError):
        return None


def _number(value: Any) -> str:
    return f"{value:,.2f}" if isinstance(value, float) else f"{value:,}" if isinstance(value, int) else str(value)


class AnalystScript:
    """Plays the analysis of the module docstring over the kernel tools."""

    def reply(self, c: Conversation) -> Reply:
        tools = {n: c.find_tool(n) for n in ("list_variables", "describe_dataframe", "run_python")}
        if not all(tools.values()):
            return Reply(NEEDS_KERNEL)
        listed = c.done("list_variables")
        if not listed:
            return Reply("Let me look at the variables in your kernel.", ((str(tools["list_variables"]), {}),))
        frames = _frames(listed[-1])
        if not frames:
            return Reply("I found no pandas DataFrame in the kernel; build one and ask me again.")
        name = _mentioned(frames, c.prompt) or frames[0]
        described = c.done("describe_dataframe")
        if not described:
            return Reply("", ((str(tools["describe_dataframe"]), {"name": name, "rows": 3}),))
        columns = [(m.group("name"), m.group("dtype")) for m in _COLUMN.finditer(described[-1].text)]
        numeric = [col for col, dtype in columns if _NUMERIC.match(dtype)]
        categorical = [col for col, dtype in columns if _CATEGORICAL.match(dtype)]
        if described[-1].is_error or not numeric or not categorical:
            return Reply(f"Here is what I know about `{name}`:\n\n```\n{described[-1].text.strip()}\n```")
        measure = _mentioned(numeric, c.prompt) or numeric[0]
        group = _mentioned(categorical, c.prompt) or categorical[0]
        ran = c.done("run_python")
        if not ran:
            return Reply(
                f"I'll sum `{measure}` by `{group}` in `{name}` and draw it.",
                ((str(tools["run_python"]), {"code": self._code(name, group, measure)}),),
            )
        shape = _SHAPE.search(described[-1].text)
        size = f" ({shape.group('rows')} rows)" if shape else ""
        if ran[-1].is_error:
            return Reply(
                f"The code did not run ({ran[-1].text.strip().splitlines()[0]}), so I can only describe "
                f"`{name}`{size}: its numeric columns are {', '.join(f'`{n}`' for n in numeric)} and its "
                f"categorical columns {', '.join(f'`{n}`' for n in categorical)}."
            )
        totals = _value(ran[-1].text)
        if not isinstance(totals, dict) or not totals:
            return Reply(f"The code ran and said:\n\n```\n{ran[-1].text.strip()}\n```")
        lines = [f"**Total `{measure}` by `{group}`** in `{name}`{size}:", "", f"| {group} | {measure} |", "|---|---:|"]
        lines += [f"| {k} | {_number(v)} |" for k, v in totals.items()]
        top, top_value = next(iter(totals.items()))
        overall = sum(v for v in totals.values() if isinstance(v, int | float))
        share = f" ({top_value / overall:.0%} of {_number(overall)})" if overall else ""
        lines += ["", f"`{top}` leads with **{_number(top_value)}**{share}. The bar chart is in the "
                  "`kernel__run_python` block above; `summary` now holds the totals in your kernel."]
        return Reply("\n".join(lines))

    @staticmethod
    def _code(name: str, group: str, measure: str) -> str:
        return (
            "import matplotlib.pyplot as plt\n"
            f"summary = {name}.groupby({group!r})[{measure!r}].sum().sort_values(ascending=False)\n"
            f"ax = summary.plot.bar(title={f'Total {measure} by {group}'!r}, ylabel={measure!r}, rot=0)\n"
            "summary.round(2).to_dict()"
        )
