"""The notebooks are kept executed, isolated and checkable: what nbval (run by `make test`) relies on.

nbval itself re-runs them (`--nbval --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg
notebooks/`); these checks catch what would make that comparison meaningless or flaky before it runs.
"""

from __future__ import annotations

import configparser
import functools
import re
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = ("quickstart", "tool_inspection", "history_analysis", "analyze_with_agent", "replay_demo", "mcp_apps")
SANITIZE = REPO / "notebooks" / "nbval_sanitize.cfg"
VARYING = re.compile(r"\b\d+(\.\d+)? ?ms\b|\bpid \d+|/tmp/|\d{4}-\d{2}-\d{2} \d{2}:\d{2}")
SECRETISH = re.compile(r"\bsk-[A-Za-z0-9]{8,}|Bearer [A-Za-z0-9]")

# nbformat's validation imports jsonschema, whose format checkers build a grammar (~2.5 s of CPU): imported
# where used, and the module's tests kept on one worker of `make quick` so only one pays it.
pytestmark = pytest.mark.xdist_group("nbformat")


@functools.cache  # read and validated once for the module's tests (which only look)
def load(name: str) -> Any:
    import nbformat

    nb = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
    nbformat.validate(nb)
    return nb


def sanitize_patterns() -> list[tuple[re.Pattern[str], str]]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(SANITIZE)
    return [(re.compile(parser[s]["regex"]), parser[s]["replace"]) for s in parser.sections()]


def output_texts(cell: Any) -> list[str]:
    texts: list[str] = []
    for output in cell.outputs:
        if output.output_type == "stream":
            texts.append(output.text)
        for mime, value in output.get("data", {}).items():
            if isinstance(value, str) and not mime.startswith("image/"):
                texts.append(value)
    return texts


def ignored(cell: Any) -> bool:
    return any(line.strip() == "# NBVAL_IGNORE_OUTPUT" for line in cell.source.splitlines())


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_saved_with_outputs_and_no_errors(name: str) -> None:
    nb = load(name)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), "run scripts/run_notebooks.py and commit the result"
    assert [o for c in code for o in c.outputs if o.output_type == "error"] == []
    checked = [c for c in code if c.outputs and not ignored(c)]
    assert len(checked) >= 4, "keep enough outputs checked for nbval to mean something"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_first_cell_isolates_the_run(name: str) -> None:
    first = next(c for c in load(name).cells if c.cell_type == "code")
    assert 'os.environ["SYNAPSE_DB"] = os.path.join(tempfile.mkdtemp(' in first.source
    # Offline: the scripted model unless the reader chose one (setdefault: their SYNAPSE_MODEL wins); the
    # replay demo forces its recorded model, which its cassette answers.
    if name == "replay_demo":
        assert 'os.environ["SYNAPSE_MODEL"] = "openai:demo-model"' in first.source
    else:
        scripted = r"scripted:(demo|analyst|mcp_apps_script\.json)"
        assert re.search(rf'os.environ.setdefault\("SYNAPSE_MODEL", "{scripted}"\)', first.source)
        assert 'os.environ["SYNAPSE_MODEL"] =' not in first.source


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_varying_outputs_are_masked_or_ignored(name: str) -> None:
    patterns = sanitize_patterns()
    for cell in load(name).cells:
        if cell.cell_type != "code" or ignored(cell):
            continue
        for text in output_texts(cell):
            for regex, replace in patterns:
                text = regex.sub(replace, text)
            found = VARYING.search(text)
            assert found is None, f"{name}: {cell.source[:60]!r} shows {found.group(0)!r} unmasked"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_no_secrets_in_saved_outputs(name: str) -> None:
    for cell in load(name).cells:
        if cell.cell_type == "code":
            for text in output_texts(cell):
                assert SECRETISH.search(text) is None


def test_sanitize_file_masks_what_varies() -> None:
    sample = "✓ demo: connected, 15 tools (stdio, pid 4242) in 1.5 s · 12 ms | /tmp/synapse-ab12_x/history.duckdb |"
    loaded = "✓ demo: connected, 15 tools (stdio, pid 4242) in 1.5 s (+2.3 s loading the MCP client, first time only)"
    for regex, replace in sanitize_patterns():
        sample = regex.sub(replace, sample)
        loaded = regex.sub(replace, loaded)
    assert sample == "✓ demo: connected, 15 tools (stdio, pid <pid>) in <duration> · <duration> | <history file> |"
    assert loaded == "✓ demo: connected, 15 tools (stdio, pid <pid>) in <duration>"


def test_quickstart_shows_the_offline_agent_using_the_demo_server() -> None:
    nb = load("quickstart")
    asked = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%synapse")]
    assert asked
    answer = "\n".join(output_texts(asked[0]))
    assert "demo__query" in answer
    assert "Top products by revenue" in answer
    assert "scripted:demo (offline scripted model)" in answer


def test_replay_demo_replays_its_cassette_which_holds_no_secret() -> None:
    nb = load("replay_demo")
    cassette = REPO / "notebooks" / "cassettes" / "replay_demo.jsonl"
    lines = cassette.read_text().splitlines()
    assert lines[0] == '{"format": "synapse_nb.cassette", "version": 1}'
    assert SECRETISH.search(cassette.read_text()) is None
    assert "sk-placeholder" not in cassette.read_text()  # scripts/record_replay_demo.py's key
    asked = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%synapse")]
    assert len(asked) == 2
    for cell in asked:
        assert "(replayed from replay_demo.jsonl)" in "\n".join(output_texts(cell))
    assert "demo__query" in "\n".join(output_texts(asked[0]))


def test_mcp_apps_saves_each_views_text_fallback() -> None:
    """Where no widget renders (GitHub, nbviewer, nbval, a notebook opened again later), a View reads as the
    tool's result and a line naming it: the snapshot output just before the View's own."""
    nb = load("mcp_apps")
    opened = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(("%mcp call", "%%synapse"))]
    assert len(opened) == 2
    for cell in opened:
        views = [cell.outputs[n - 1] for n, o in enumerate(cell.outputs)
                 if "application/vnd.jupyter.widget-view+json" in o.get("data", {}) and n > 0]
        assert all('class="snb-snapshot"' in o.data["text/html"] for o in views), cell.source
        fallback = [o.data["text/plain"] for o in views if "interactive view" in o.data["text/plain"]]
        assert len(fallback) == 1, cell.source
        assert fallback[0].startswith("Cohort Analysis: 6 cohorts, 6 periods")
        assert "[cohort.get-cohort-data has an interactive view (ui://get-cohort-data/mcp-app.html)" in fallback[0]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_saved_outputs_hold_no_path_of_the_machine_that_ran_them(name: str) -> None:
    """The interpreter a connect line names and the run's temporary history file read `python` and
    `synapse-…/history.duckdb`: a reader's machine has neither /work/... nor that /tmp folder."""
    import tempfile

    saved = (REPO / "notebooks" / f"{name}.ipynb").read_text()
    interpreters = re.findall(r"(?<![\w.])/[\w./-]*/bin/python[\d.]*", saved)
    assert interpreters == [], interpreters[:3]
    for folder in {str(REPO), tempfile.gettempdir(), "/tmp"}:
        assert f"{folder}/" not in saved, folder
