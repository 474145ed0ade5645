"""Execute the notebooks in a real kernel (nbclient) and save them with their outputs.

    python scripts/run_notebooks.py                      # every notebooks/*.ipynb, in place
    python scripts/run_notebooks.py notebooks/quickstart.ipynb --out demo_out/quickstart.ipynb

The kernel runs offline: API keys and model/config variables are removed from its environment, so the
scripted model and the bundled demo MCP server produce the same outputs on every machine. Each
notebook's first cell points SYNAPSE_DB at a fresh temporary file, so runs never share a history.
Run this after changing a notebook, then commit it with its outputs (nbval checks them in `make test`).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
OFFLINE_UNSET = (
    "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY", "OLLAMA_API_KEY", "SYNAPSE_MODEL", "SYNAPSE_DB",
    "SYNAPSE_MCP_CONFIG", "MCP_URL", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "DEEPSEEK_BASE_URL", "OLLAMA_BASE_URL",
)


def offline_env() -> dict[str, str]:
    """This process's environment without keys, model choice or MCP config (what the kernel inherits)."""
    return {k: v for k, v in os.environ.items() if k not in OFFLINE_UNSET}


def portable(text: str) -> str:
    """`text` without this machine's paths: the interpreter the kernel runs (`{sys.executable}` in a connect
    line) reads `python`, the checkout's folder and the temporary folder (a run's history file) are left out.
    notebooks/nbval_sanitize.cfg masks the same paths of a fresh run, so nbval compares the two alike."""
    for interpreter in sorted({sys.executable, os.path.realpath(sys.executable)}, key=len, reverse=True):
        text = text.replace(interpreter, "python")
    for folder in (str(REPO), tempfile.gettempdir(), os.path.realpath(tempfile.gettempdir())):
        text = text.replace(folder + os.sep, "")
    return text


def _portable_outputs(nb: Any) -> None:
    """Every saved output of `nb` made `portable` (its text, its data's strings; images are left alone), and
    the widget state nbclient saves in its metadata."""
    import json

    import nbformat

    if "widgets" in nb.metadata:
        nb.metadata["widgets"] = nbformat.from_dict(json.loads(portable(json.dumps(nb.metadata["widgets"]))))
    for cell in nb.cells:
        for output in cell.get("outputs", ()):
            if "text" in output:
                output["text"] = portable(output["text"])
            for mime, value in output.get("data", {}).items():
                if isinstance(value, str) and not mime.startswith("image/"):
                    output["data"][mime] = portable(value)


def execute(path: Path, out: Path | None = None, *, timeout: int = 300, env: dict[str, str] | None = None,
            machine_free: bool = False) -> Path:
    """Run every cell of `path` in a fresh kernel (cwd: the notebook's folder); save to `out` (default: in place).

    `env` adds variables to the offline environment (scripts/record_replay_demo.py records against a local server).
    `machine_free` saves the outputs without this machine's paths (`portable`), as the committed notebooks are.
    """
    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    saved = dict(os.environ)
    kernel_env = {**offline_env(), **(env or {})}  # taken before the clear below (offline_env reads os.environ)
    os.environ.clear()
    os.environ.update(kernel_env)
    try:
        with tempfile.TemporaryDirectory(prefix="synapse-kernel-") as sockets:
            # IPC sockets in a private folder: local-only, and no "TCP without encryption" warning.
            km = KernelManager(kernel_name="python3", transport="ipc", ip=str(Path(sockets) / "kernel"))
            client = NotebookClient(
                nb, km=km, timeout=timeout, allow_errors=False, resources={"metadata": {"path": str(path.parent)}},
            )
            try:
                client.execute()
            finally:
                if km.has_kernel:
                    km.shutdown_kernel()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    if machine_free:
        _portable_outputs(nb)
    target = out or path
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    parser.add_argument("--out", type=Path, help="where to save (only with one notebook)")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
    if args.out is not None and len(paths) != 1:
        parser.error("--out needs exactly one notebook")
    for path in paths:
        started = time.perf_counter()
        target = execute(path, args.out, machine_free=True)
        print(f"executed {path} -> {target} in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
