"""`make bench`: run every benchmark row, print the table, write bench/results.md.

    .venv/bin/python bench/run.py [--small] [--only 1,4,9] [--out bench/results.md]

Each row runs in a fresh worker process (`--worker N`), with its own scratch folder, history file and
no user configuration or API keys: rows cannot disturb each other (nest_asyncio2's process-wide patch,
background flusher threads, child servers), and a crashed row is reported as failed while the others
still run. `--small` runs every row once in a tiny size (make test does this, so they cannot rot).
Exit status: 0 when every row ran (targets met or not), 1 when a row failed to run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

from _common import REPO, Measure, Row, Size, table

HERE = Path(__file__).resolve().parent

# row number -> (title, module, function); a function returns the row's lines (e.g. 4a, 4b, 4c)
ROWS: dict[int, tuple[str, str, str]] = {
    1: ("tool call through the hub vs bare mcp.Client", "bench_hub", "row_hub"),
    2: ("a whole-cell magic (awaited cell) vs the async path", "bench_hub", "row_bridge"),
    3: ("history recording on vs off", "bench_hub", "row_history"),
    4: ("8 concurrent tool calls in one reply", "bench_agent", "row_concurrency"),
    5: ("connecting 5 servers from a config file", "bench_connect", "row_connect"),
    6: ("tool discovery after connect", "bench_connect", "row_discovery"),
    7: ("agent loop overhead per iteration", "bench_agent", "row_overhead"),
    8: ("streaming: first token, 10,000-token throughput, idle after the last token", "bench_stream", "row_stream"),
    9: ("history at scale", "bench_store", "row_store"),
    10: ("%load_ext in a fresh kernel, import time", "bench_kernel", "row_kernel"),
    11: ("connecting the four reference servers from a config file", "bench_connect", "row_reference"),
    12: ("first 10 MB tool result through the hub vs the bare SDK", "bench_hub", "row_first_call"),
    13: ("the Iceberg lake: publishing, a GROUP BY over it, five kernels at once", "bench_lake", "row_lake"),
    14: ("a 20-turn notebook replayed vs recorded against a 200 ms model", "bench_replay", "row_replay"),
    15: ("OpenTelemetry tracing on vs off, collector unreachable", "bench_otel", "row_otel"),
    16: ("prompt caching: share of a 10-iteration turn's prompt read from the cache", "bench_cost", "row_prompt_cache"),
    17: ("a %%synapse answer as a frontend sees it (ZMQ, real kernel)", "bench_frontend", "row_frontend"),
    18: ("an MCP tool call vs the bare SDK and langchain-mcp-adapters", "bench_peers", "row_peers"),
    19: ("%%synapse vs jupyter-ai's %%ai in real kernels", "bench_ai_peer", "row_ai_peer"),
    20: ("the first %mcp connect in a real kernel vs the bare SDK", "bench_first_connect", "row_first_connect"),
    21: ("%mcp call in a real kernel: vs the awaited call, and the first call vs the bare SDK", "bench_kernel_call",
         "row_kernel_call"),
    22: ("a tool call run as an MCP task vs a plain call of the same tool", "bench_tasks", "row_tasks"),
    23: ("a %%synapse turn over a 50,000-row database result: held by the kernel vs inline", "bench_held", "row_held"),
    24: ("ten real servers connected: the first request's tool definitions, tool search vs every tool",
         "bench_tool_search", "row_tool_search"),
}

# Rows that need longer than the default (small, full): 13 starts PostgreSQL, moto and five publisher processes
ROW_TIMEOUTS: dict[int, tuple[float, float]] = {13: (600.0, 900.0)}

PACKAGES = ("synapse_nb", "mcp", "httpx", "duckdb", "pandas", "pyarrow", "ipython", "ipykernel", "jupyter_client",
            "nest-asyncio2", "anyio")
STRIPPED_ENV = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY", "OLLAMA_API_KEY", "SYNAPSE_MODEL",
                "SYNAPSE_MCP_CONFIG", "MCP_URL", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "DEEPSEEK_BASE_URL",
                "OLLAMA_BASE_URL")


def _worker(number: int, small: bool, out: Path) -> int:
    """Run one row in this process and write its lines as JSON."""
    _, module, function = ROWS[number]
    fn: Callable[[Size], list[Row]] = getattr(importlib.import_module(module), function)
    rows = fn(Size(small=small))
    out.write_text(json.dumps([r.to_json() for r in rows]))
    return 0


def _worker_env(scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in STRIPPED_ENV}
    env.update({
        "SYNAPSE_BENCH_TMP": str(scratch),
        "SYNAPSE_DB": str(scratch / "history.duckdb"),
        "XDG_DATA_HOME": str(scratch / "data"),
        "XDG_CONFIG_HOME": str(scratch / "config"),
        "IPYTHONDIR": str(scratch / "ipython"),
        "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    })
    return env


def _failed(number: int, reason: str) -> Row:
    title = ROWS[number][0]
    return Row(str(number), title, None, Measure("did not run", float("nan")), "—", False,
               note=f"the benchmark failed: {reason}", why=f"the benchmark itself failed: {reason}")


def run_row(number: int, small: bool, root: Path, timeout: float) -> tuple[list[Row], bool]:
    """Run one row in a worker process: (its lines, whether it ran)."""
    scratch = root / f"row{number}"
    scratch.mkdir(parents=True, exist_ok=True)
    out = scratch / "rows.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(number), "--json", str(out)]
    if small:
        cmd.append("--small")
    try:
        proc = subprocess.run(cmd, env=_worker_env(scratch), cwd=scratch, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return [_failed(number, f"no result within {timeout:.0f} s")], False
    if proc.returncode != 0 or not out.exists():
        lines = [ln for ln in (proc.stderr or "").strip().splitlines() if ln.strip()]
        sys.stderr.write(f"row {number} failed (exit {proc.returncode}):\n" + "\n".join(lines[-25:]) + "\n")
        return [_failed(number, lines[-1] if lines else f"exit status {proc.returncode}")], False
    return [Row.from_json(d) for d in json.loads(out.read_text())], True


# ---- results.md --------------------------------------------------------------------------------------------


def _versions() -> str:
    found = []
    for name in PACKAGES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(found)


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _load() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def machine(load_before: str, load_after: str) -> list[str]:
    return [
        f"- CPU: {_cpu()}, {os.cpu_count()} cores; load average (1, 5, 15 min) {load_before} at the start, "
        f"{load_after} at the end",
        f"- {platform.platform()}; Python {platform.python_version()} ({sys.executable})",
        f"- {_versions()}",
    ]


def report(rows: Sequence[Row], *, small: bool, seconds: float, load_before: str, load_after: str) -> str:
    date = dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    mode = "small run (`--small`: tiny sizes, for the test suite; numbers are not meaningful)" if small else "full run"
    missed = [r for r in rows if r.met is False]
    met = sum(r.met is True for r in rows)
    out = [
        "# synapse_nb benchmarks",
        "",
        f"Generated by `make bench` (`.venv/bin/python bench/run.py`) on {date}: {mode}, {seconds:.0f} s.",
        "Each row compares a measurement with a baseline measured in the same run on the same machine; times are",
        "medians of repeated runs (warm-ups excluded), baseline and measurement alternating round by round;",
        "ratio = measured / baseline. The code of each row is in `bench/` (see `bench/run.py` for the map);",
        "rerun some rows with `.venv/bin/python bench/run.py --only 1,3 --out /tmp/rows.md`. On a busy machine",
        "(see the load average below) a row within a few % of its target can land on either side from run to run.",
        "",
        "## Machine",
        "",
        *machine(load_before, load_after),
        "",
        f"## Results: {met} of {sum(r.met is not None for r in rows)} targets met",
        "",
        table(rows),
        "",
        "## Notes",
        "",
        *[f"- **{r.id}** {r.note}" for r in rows if r.note],
        "",
        "## Why targets were missed",
        "",
    ]
    if missed:
        out += [f"- **{r.id} {r.name}**: {r.why or 'no explanation recorded'}" for r in missed]
    else:
        out.append("Every target was met in this run.")
    findings = [r for r in rows if r.finding]
    if findings:
        out += ["", "## Other findings", "", *[f"- **{r.id}** {r.finding}" for r in findings]]
    return "\n".join(out) + "\n"


def _parse_only(text: str | None) -> list[int]:
    if not text:
        return list(ROWS)
    numbers = []
    for word in text.replace(" ", "").split(","):
        if not word.isdigit() or int(word) not in ROWS:
            raise SystemExit(f"--only: {word!r} is not a row number (1-{max(ROWS)})")
        numbers.append(int(word))
    return numbers


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="every row once in a tiny size (seconds, not minutes)")
    parser.add_argument("--only", help="comma-separated row numbers, e.g. 1,4,9")
    parser.add_argument("--out", type=Path, help="where to write the Markdown report (default: bench/results.md for "
                        "a full run, a temporary file for --only, so that some rows never replace the full table)")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        if args.json is None:
            parser.error("--worker needs --json")
        return _worker(args.worker, args.small, args.json)

    numbers = _parse_only(args.only)
    if args.out is None:
        args.out = HERE / "results.md" if args.only is None else \
            Path(tempfile.gettempdir()) / f"synapse-bench-rows-{'-'.join(map(str, numbers))}.md"
    timeout = 300.0  # a bound against a row that hangs: a small row of 20 s took 110 s beside other jobs on 2 cores
    load_before, started = _load(), time.perf_counter()
    rows: list[Row] = []
    all_ran = True
    with tempfile.TemporaryDirectory(prefix="synapse-bench-") as tmp:
        for number in numbers:
            t0 = time.perf_counter()
            print(f"row {number}: {ROWS[number][0]} ...", end=" ", flush=True)
            longer = ROW_TIMEOUTS.get(number)
            lines, ran = run_row(number, args.small, Path(tmp), longer[not args.small] if longer else timeout)
            all_ran &= ran
            rows += lines
            verdicts = ", ".join(f"{r.id} {r.verdict}" for r in lines)
            print(f"{time.perf_counter() - t0:.1f} s ({verdicts})", flush=True)
    seconds = time.perf_counter() - started
    text = report(rows, small=args.small, seconds=seconds, load_before=load_before, load_after=_load())
    print()
    print(table(rows))
    missed = [r.id for r in rows if r.met is False]
    print(f"\n{sum(r.met is True for r in rows)} targets met, {len(missed)} missed"
          + (f" ({', '.join(missed)}); see {args.out}" if missed else "") + f"; {seconds:.0f} s in all")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    return 0 if all_ran else 1


if __name__ == "__main__":
    sys.exit(main())
