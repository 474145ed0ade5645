"""`make demo`: run notebooks/quickstart.ipynb headless in a real kernel, then show what the agent did;
then notebooks/analyze_with_agent.ipynb, where the agent looks into the kernel (`%%synapse --kernel`).

Offline and without an API key: the notebook uses the scripted model and the bundled demo MCP server.
The executed notebook is saved to demo_out/quickstart.ipynb; the answers and the tool calls are read
back from the history file the notebook recorded (its path is in the notebook's `%synapse status` output).
"""

from __future__ import annotations

import re
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run_notebooks import REPO, execute

NOTEBOOK = REPO / "notebooks" / "quickstart.ipynb"
OUT = REPO / "demo_out" / "quickstart.ipynb"
KERNEL_NOTEBOOK = REPO / "notebooks" / "analyze_with_agent.ipynb"
KERNEL_OUT = REPO / "demo_out" / "analyze_with_agent.ipynb"
WIDTH = 100


def history_file(notebook: Any) -> Path:
    """The history file named in the executed notebook's `%synapse status` output."""
    for cell in notebook.cells:
        if cell.cell_type != "code" or "%synapse status" not in cell.source:
            continue
        for output in cell.outputs:
            match = re.search(r"^history\s+(\S+)", output.get("data", {}).get("text/plain", ""), re.M)
            if match:
                return Path(match.group(1))
    raise SystemExit("demo: the executed notebook does not show its history file (%synapse status)")


def answers(history: Any) -> list[tuple[str, str]]:
    """(question, answer) for every turn, in order: the last assistant text after each user message."""
    messages = history.messages()
    pairs: list[tuple[str, str]] = []
    for _, row in messages.iterrows():
        if row.role == "user":
            pairs.append((row.content, ""))
        elif row.role == "assistant" and pairs and row.content:
            pairs[-1] = (pairs[-1][0], row.content)
    return pairs


def main() -> int:
    import nbformat

    import synapse_nb

    print(f"Running {NOTEBOOK.relative_to(REPO)} in a fresh kernel (offline: scripted model, demo MCP server) ...")
    started = time.perf_counter()
    execute(NOTEBOOK, OUT)
    took = time.perf_counter() - started
    notebook = nbformat.read(OUT, as_version=4)
    path = history_file(notebook)
    history = synapse_nb.history(path)

    for question, answer in answers(history):
        print(f"\n{'=' * WIDTH}\nQ: {question}\n{'-' * WIDTH}")
        print(textwrap.indent(answer.strip(), "   "))

    calls = history.tool_calls()
    print(f"\n{'=' * WIDTH}\nTool calls the agent made ({len(calls)}):\n")
    if not calls.empty:
        table = calls[["server", "tool", "arguments", "is_error", "duration_ms"]].copy()
        table["arguments"] = table["arguments"].map(lambda a: a if len(a) <= 60 else a[:59] + "…")
        table["duration_ms"] = table["duration_ms"].round(1)
        print(table.to_string(index=False))

    turns = history.turns()
    print(f"\n{len(turns)} turns, {int(turns.input_tokens.sum() + turns.output_tokens.sum())} tokens, "
          f"notebook executed in {took:.1f} s")
    print(f"\nExecuted notebook: {OUT.relative_to(REPO)}   (open it: .venv/bin/jupyter lab {OUT.relative_to(REPO)})")
    print(f"History file:      {path}")
    print(f"   query it:       .venv/bin/python -c \"import synapse_nb; print(synapse_nb.history('{path}').turns())\"")
    kernel_demo()
    return 0


def kernel_demo() -> None:
    """Run the kernel-tools notebook and show the agent's answer and the code it ran in the kernel."""
    import nbformat

    name = KERNEL_NOTEBOOK.relative_to(REPO)
    print(f"\n{'=' * WIDTH}\nRunning {name}: the agent sees the kernel (%%synapse --kernel) ...")
    started = time.perf_counter()
    execute(KERNEL_NOTEBOOK, KERNEL_OUT)
    took = time.perf_counter() - started
    notebook = nbformat.read(KERNEL_OUT, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        plain = [o.get("data", {}).get("text/plain", "") for o in cell.outputs if o.output_type == "display_data"]
        if cell.source.startswith("%%synapse --kernel") and plain:
            question = cell.source.split("\n", 1)[1].strip()
            print(f"\nQ: {question}   (with the kernel__* tools)\n{'-' * WIDTH}")
            print(textwrap.indent(plain[-1].strip(), "   "))
        if cell.source.startswith("print(_synapse.code)"):
            code = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
            print(f"\nThe code the agent ran in the kernel (_synapse.code):\n{'-' * WIDTH}")
            print(textwrap.indent(code.rstrip(), "   "))
    print(f"\nExecuted notebook: {KERNEL_OUT.relative_to(REPO)} in {took:.1f} s   (the chart is in its "
          "kernel__run_python block)")


if __name__ == "__main__":
    sys.exit(main())
