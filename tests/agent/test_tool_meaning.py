"""The tool search's ranking by meaning (agent/tool_meaning.py): the search extra's model loads from its wheel
with no network and leaves the kernel's logging alone, ranks by meaning where words share nothing, and the
setting turns it off."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from synapse_nb.agent.tool_index import ToolIndex
from synapse_nb.agent.tool_meaning import bundled_embedder
from synapse_nb.notebook.turns.tool_search import tool_search
from synapse_nb.types import ToolSpec

_LOAD_OFFLINE = """
import logging, socket
def refuse(*args, **kwargs):
    raise OSError("no network in this test")
socket.socket.connect = refuse
socket.create_connection = refuse
from synapse_nb.agent.tool_meaning import bundled_embedder
embedder = bundled_embedder()
assert embedder is not None, "no model"
vectors = embedder(["show the working tree status", "is my working copy clean?"])
print(vectors.shape[0], round(float(vectors[0] @ vectors[0]), 3), len(logging.getLogger().handlers),
      logging.getLogger().level)
"""


@pytest.mark.process
def test_the_model_loads_from_its_wheel_with_no_network_and_leaves_logging_alone() -> None:
    # wordllama's own loader downloads its tokenizer, and wordllama.inference calls logging.basicConfig(INFO)
    # when imported: in a kernel that would print every library's INFO lines under the user's cells
    done = subprocess.run([sys.executable, "-c", _LOAD_OFFLINE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["2", "1.0", "0", str(30)]  # unit vectors; no root handler; WARNING as before


def test_meaning_finds_a_tool_whose_words_the_request_does_not_use() -> None:
    embedder = bundled_embedder()
    assert embedder is not None, "the search extra's model is missing: pip install -e '.[test]' (make venv)"
    specs = [ToolSpec(name=f"fs__{name}", description=text, input_schema={}, server="fs", original_name=name)
             for name, text in (("list_files", "List the files in a folder"),
                                ("delete_directory", "Delete a directory and all it holds"),
                                ("remove_file", "Remove one file"), ("rename_directory", "Give a directory a new name"),
                                ("get_time", "Get the current time"))]
    request = "wipe out the folder"
    assert [h.name for h in ToolIndex(specs).search(request, 5)] == ["fs__list_files"]  # 'folder', its only word
    hits = ToolIndex(specs, embedder=embedder).search(request, 5)
    assert hits[0].name == "fs__delete_directory"
    assert len(hits) == len(specs)  # by meaning every tool has a place
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert ToolIndex(specs, embedder=embedder).search("   ", 3) == []
    assert ToolIndex(specs, embedder=embedder).search("zzzz qqqq", 3) == []  # no word any tool uses: nothing


def test_the_setting_turns_meaning_off_and_the_index_ranks_by_words_alone() -> None:
    assert tool_search(None, None, 40).embedder() is bundled_embedder() is not None
    assert tool_search(None, None, 40, meaning=False).embedder() is None
    vectors = bundled_embedder()(["a", "b"])  # type: ignore[misc]
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
