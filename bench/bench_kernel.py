"""Row 10: `%load_ext synapse_nb` in a fresh kernel, and the import time of `synapse_nb` alone.

- 10a a real IPython kernel (this interpreter, through jupyter_client, as a frontend drives it): the
  execute round trip of `%load_ext synapse_nb` (request sent until the reply and the kernel idle),
  against the round trip of an empty cell in the same kernel. A fresh kernel per sample: loading is
  a first-time cost.
- 10b `import synapse_nb` in a fresh interpreter, timed inside it, against `import json`.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

from _common import Measure, Row, Size, bench_dir, fmt_seconds, median

__all__ = ["row_kernel"]

TIMED_IMPORT = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"


def _round_trip(kc: Any, code: str) -> float:
    """Seconds from sending an execute request until its reply arrived and the kernel went idle."""
    t0 = time.perf_counter()
    reply = kc.execute_interactive(code, timeout=60, store_history=False, output_hook=lambda msg: None)
    elapsed = time.perf_counter() - t0
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"{code!r} failed in the kernel: {reply['content'].get('evalue')}")
    return elapsed


def _one_kernel() -> tuple[float, float, float]:
    """(empty cell round trip, %load_ext round trip, kernel start) in a fresh kernel."""
    from jupyter_client.manager import KernelManager

    work = bench_dir()
    # IPC sockets in our scratch folder: local only.
    km = KernelManager(kernel_name="python3", transport="ipc", ip=str(work / "kernel-ipc"))
    t0 = time.perf_counter()
    km.start_kernel(cwd=str(work))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        started = time.perf_counter() - t0
        empty = median([_round_trip(kc, "pass") for _ in range(5)])
        load = _round_trip(kc, "%load_ext synapse_nb")
        _round_trip(kc, "assert get_ipython().find_cell_magic('synapse') is not None")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return empty, load, started


def _import_seconds(module: str) -> float:
    out = subprocess.run([sys.executable, "-c", TIMED_IMPORT.format(module=module)], capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip())


def row_kernel(size: Size) -> list[Row]:
    kernels, imports = size.pick((1, 3), (5, 15))
    samples = [_one_kernel() for _ in range(kernels)]
    empty, load = median([s[0] for s in samples]), median([s[1] for s in samples])
    started = median([s[2] for s in samples])
    load_ok = load < 0.5

    pairs = [(_import_seconds("json"), _import_seconds("synapse_nb")) for _ in range(imports + 1)][1:]
    base, ours = median([p[0] for p in pairs]), median([p[1] for p in pairs])
    import_ok = ours < 0.1
    return [
        Row(
            "10a", "`%load_ext synapse_nb` in a fresh kernel",
            Measure("empty cell round trip", empty), Measure("%load_ext synapse_nb round trip", load),
            "< 0.5 s (absolute)", load_ok,
            note=f"wall time a frontend sees (execute request to reply + idle) in a real kernel of this interpreter "
                 f"(started in {fmt_seconds(started)}); {fmt_seconds(load - empty)} more than an empty cell; "
                 f"median of {kernels} fresh kernel{'s' if kernels != 1 else ''}",
            why="" if load_ok else
                f"loading took {fmt_seconds(load)}: `%load_ext` should import only the notebook layer's light "
                "modules; run `python -X importtime -c 'import synapse_nb.notebook.magics'` to see what else "
                "loads (the mcp SDK, httpx, DuckDB and pandas belong to first use, not to loading)",
        ),
        Row(
            "10b", "`import synapse_nb` alone, in a fresh interpreter",
            Measure("import json", base), Measure("import synapse_nb", ours),
            "< 100 ms (absolute)", import_ok,
            note=f"timed inside a fresh `{sys.executable} -c`; the heavy parts load on first use; "
                 f"median of {imports}",
            why="" if import_ok else
                f"`import synapse_nb` took {fmt_seconds(ours)}; `python -X importtime -c 'import synapse_nb'` shows "
                "which module pulls in a heavy dependency at import time",
        ),
    ]
