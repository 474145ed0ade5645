"""Fixtures for the magics: `ip`, an InteractiveShell with the extension loaded in a clean environment.

Outputs the magics publish are captured in `ip.published` (bundle, display id, update) instead of
going to a frontend; the shell counts as a live frontend, so display updates are exercised too.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from synapse_nb.notebook.extension import get_state
from tests.support.nb_shell import Published, Shell


@pytest.fixture
def published() -> Published:
    """A publisher that records outputs instead of sending them."""
    return Published()


@pytest.fixture(scope="session")
def _shell(tmp_path_factory: pytest.TempPathFactory) -> InteractiveShell:
    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "nocolor"
    config.InteractiveShell.ipython_dir = str(tmp_path_factory.mktemp("ipython"))
    return InteractiveShell.instance(config=config)


@pytest.fixture(scope="session")
def _migrated_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty history file at the current schema, made once per worker (creating and migrating one costs
    ~0.1 s, paid by every test's teardown otherwise); tests/history/ covers creating and migrating files."""
    import duckdb

    from synapse_nb.history.migrate import migrate

    path = tmp_path_factory.mktemp("history") / "history.duckdb"
    with duckdb.connect(str(path)) as con:
        migrate(con, path=str(path))
    return path


@pytest.fixture
def ip(_shell: InteractiveShell, clean_env: Path, _migrated_history: Path) -> Iterator[Shell]:
    """The shell with synapse_nb loaded over an empty, migrated history file; unloaded (servers closed,
    runs cancelled) after the test."""
    shutil.copyfile(_migrated_history, os.environ["SYNAPSE_DB"])
    before = set(_shell.user_ns)
    assert _shell.extension_manager.load_extension("synapse_nb") is None
    state = get_state(_shell)
    assert state is not None
    published = Published()
    state.port.publish = published
    state.port.live = True
    shell = Shell(_shell, state, published)
    state.port.input = shell.input
    try:
        yield shell
    finally:
        if "synapse_nb" in _shell.extension_manager.loaded:
            _shell.extension_manager.unload_extension("synapse_nb")
        assert get_state(_shell) is None
        _shell.config.pop("SynapseMagics", None)  # %config in one test must not leak into the next
        for name in set(_shell.user_ns) - before:
            del _shell.user_ns[name]


@pytest.fixture
def script(tmp_path: Path) -> Callable[[Any], str]:
    """Write a scripted-model script to a file; returns the model id that plays it."""
    counter = iter(range(1000))

    def write(data: Any) -> str:
        path = tmp_path / f"script{next(counter)}.json"
        path.write_text(json.dumps(data))
        return f"scripted:{path}"

    return write


@pytest.fixture
def apps(ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`ip` with the MCP Apps test server (tests/support/apps_server.py) connected in process as `apps`, widgets on
    list comms, the Views' HTML carrying a stub instead of the ext-apps View library (no browser runs it here)."""
    import comm

    from tests.support import apps_server
    from tests.support.list_comm import ListComm

    monkeypatch.setattr(comm, "create_comm", ListComm)
    stub = tmp_path / "view-lib.js"
    stub.write_text("const App = class {};\nexport{App as App};\n")
    monkeypatch.setenv("SYNAPSE_APPS_VIEW_LIB", str(stub))
    ip.state.runner.run(ip.state.hub.connect_in_process("apps", apps_server.build_server()), timeout=60)
    return ip  # the ip fixture closes the hub (and the server with it)
