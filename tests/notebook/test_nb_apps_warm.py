"""What the first MCP Apps View needs is warmed in the background once `%load_ext` has run (issue 36, item 8):
after the MCP client's preload thread, never beside it, and `%load_ext` itself stays quiet
(tests/notebook/test_nb_extension.py checks it imports nothing heavy)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from synapse_nb.notebook.apps.warm import WARMED

pytestmark = pytest.mark.process


def test_load_ext_warms_the_views_modules_and_code_after_the_mcp_preload() -> None:
    code = textwrap.dedent(
        """
        import json, sys, threading
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "synapse_nb")
        [warm] = [t for t in threading.enumerate() if t.name == "synapse-apps-warm"]
        [preload] = [t for t in threading.enumerate() if t.name == "synapse-mcp-preload"] or [None]
        warm.join(timeout=240)
        from synapse_nb.notebook.apps.bundle import bundle_code
        print(json.dumps({
            "alive": warm.is_alive(),
            "preload_done": preload is None or not preload.is_alive(),
            "modules": sorted(m for m in sys.argv[1:] if m in sys.modules),
            "code_read": bundle_code.cache_info().currsize == 1,
        }))
        """
    )
    out = subprocess.run([sys.executable, "-c", code, *WARMED], capture_output=True, text=True, timeout=300,
                         check=True)
    assert out.stderr == ""
    *noise, last = out.stdout.strip().splitlines()
    assert noise == []  # warming printed nothing
    report = json.loads(last)
    assert report == {"alive": False, "preload_done": True, "modules": sorted(WARMED), "code_read": True}
