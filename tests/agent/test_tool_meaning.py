"""The tool search's ranking by meaning (agent/tool_meaning.py): the search extra's model loads from its wheel
with no network and leaves the kernel's logging alone, ranks by meaning where words share nothing, and the
setting turns it off."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from synapse_nb.agent.tool_index import ToolIndex
from synapse_nb.agent.tool_meaning import Remembering, bundled_embedder
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


def test_each_text_is_embedded_once_and_its_vector_is_the_models() -> None:
    """A turn's search builds its index afresh (and so does each `%mcp search`): the tools' texts, the same each
    time, are not embedded again."""
    model = bundled_embedder()
    assert isinstance(model, Remembering), "bundled_embedder() remembers"
    asked: list[list[str]] = []

    def counted(texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        asked.append(list(texts))
        return model(texts)

    remembering = Remembering(counted, limit=4)
    first = remembering(["list the files", "delete a folder", "list the files"])
    assert asked == [["list the files", "delete a folder"]]
    again = remembering(["delete a folder", "get the time", "list the files"])
    assert asked[1:] == [["get the time"]]
    assert np.array_equal(again[0], first[1])
    assert np.array_equal(again[2], first[0])
    assert np.allclose(again, model(["delete a folder", "get the time", "list the files"]))
    remembering(["a", "b"])  # past the limit: forgotten, then these embedded together
    assert asked[2:] == [["a", "b"]]
    assert remembering([]).shape == (0, 0)
