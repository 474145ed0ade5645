"""nbval's kernel runs with the offline environment (notebooks/conftest.py): a SYNAPSE_MODEL or API key set in
the shell does not reach the notebooks, which only `setdefault` their model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.kernel]

REPO = Path(__file__).resolve().parents[2]


def test_nbval_kernels_do_not_see_the_shells_model_or_keys(tmp_path: Path) -> None:
    shutil.copy(REPO / "notebooks" / "conftest.py", tmp_path / "conftest.py")
    source = "import os\nprint(os.environ.get('SYNAPSE_MODEL'), os.environ.get('OPENAI_API_KEY'))"
    notebook = {
        "cells": [{"cell_type": "code", "execution_count": 1, "id": "c0", "metadata": {}, "source": source,
                   "outputs": [{"name": "stdout", "output_type": "stream", "text": "None None\n"}]}],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5,
    }
    (tmp_path / "env.ipynb").write_text(json.dumps(notebook))
    env = {**os.environ, "SYNAPSE_MODEL": "openai:from-the-shell", "OPENAI_API_KEY": "sk-from-the-shell",
           "PYTHONPATH": os.pathsep.join([str(REPO / "scripts"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
         "--rootdir", str(tmp_path), str(tmp_path / "env.ipynb")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
