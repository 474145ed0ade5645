"""A failed %%synapse turn in a real kernel run by nbclient (as Run All does): its error shows once, as what it
is (never repeated as `UsageError: ...`), and the cell still ends with an error, so the run stops there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.kernel_session import kernel_env
from tests.support.llm_server import LlmServer, error, text
from tests.support.local_servers import refusing_port

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.kernel]

KEY = "sk-test-turn-errors-0000"


def run_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base_url: str, cells: list[str]) -> tuple[Any, str]:
    """Run `cells` after the set-up cells, stopping at the first error as Run All does; the notebook and
    the error nbclient raised."""
    # nbformat and nbclient load when a test runs, not when the file is collected: nbformat imports jsonschema,
    # which builds a URI grammar on import (about 2 s of CPU in each pytest worker, `make quick`'s too)
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    for key, value in kernel_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in ["%load_ext synapse_nb", *cells,
                                                                                "print('after the failure')"]])
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(CellExecutionError) as caught:
        client.execute()
    return nb, str(caught.value)


def shown(cell: Any) -> list[str]:
    """Each output of a cell as the text a reader sees (display text, stream text, error traceback)."""
    texts = []
    for output in cell.outputs:
        if output.output_type == "error":
            texts.append("\n".join(output.traceback) or f"{output.ename}: {output.evalue}")
        elif output.output_type == "stream":
            texts.append(output.text)
        else:
            texts.append(str(output.get("data", {}).get("text/plain", "")) +
                         str(output.get("data", {}).get("text/markdown", "")))
    return texts


def check_once(nb: Any, index: int, message: str) -> None:
    cell = nb.cells[index]
    texts = shown(cell)
    assert sum(message in t for t in texts) == 1, texts  # the message once, in one output ...
    assert not any("UsageError" in t for t in texts), texts  # ... as what it is
    errors = [o for o in cell.outputs if o.output_type == "error"]
    assert len(errors) == 1  # the cell ends with it: Run All stops
    assert message in "\n".join(errors[0].traceback)
    assert any("✗ failed openai:gpt-test" in t for t in texts), texts  # the transcript's footer says failed
    assert nb.cells[-1].outputs == []  # the cell after it did not run
    assert KEY not in "\n".join(texts)


def test_a_401_shows_once_and_stops_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LlmServer() as server:
        server.queue(error(401, "invalid api key"))
        nb, raised = run_all(tmp_path, monkeypatch, server.openai_base_url,
                             ["%%synapse --model openai:gpt-test\nhello"])
    check_once(nb, 1, "AuthenticationError: openai rejected the request (HTTP 401")
    assert "AuthenticationError" in raised


def test_an_unreachable_server_shows_once_and_stops_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with refusing_port() as port:
        nb, _ = run_all(tmp_path, monkeypatch, f"http://127.0.0.1:{port}/v1",
                        ["%%synapse --model openai:gpt-test\nhello"])
    check_once(nb, 1, "ProviderUnavailableError: ")


def test_a_replay_miss_shows_once_and_stops_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cassette = tmp_path / "c.jsonl"
    with LlmServer() as server:
        server.queue(text("recorded answer"))
        nb, _ = run_all(tmp_path, monkeypatch, server.openai_base_url, [
            f"%synapse record {cassette}",
            "%%synapse --model openai:gpt-test\nthe recorded question",
            "%synapse record off",
            f"%synapse replay {cassette}",
            "%%synapse --model openai:gpt-test\nsomething never asked",
        ])
    assert "recorded answer" in "".join(shown(nb.cells[2]))
    check_once(nb, 5, "ReplayMismatchError: replay: this request is not in the cassette c.jsonl")
