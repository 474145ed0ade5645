"""The benchmark harness every bench module shares: Row and Measure, sizes, interleaved timing, the table.

A row compares a measurement with a baseline measured in the same run on the same machine, as medians
of repeated runs (warm-ups excluded). Baseline and measurement alternate round by round (A B, B A, ...)
so that load from other programs falls on both alike; a 2-core machine shared with test runs is noisy.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

REPO = Path(__file__).resolve().parents[1]
SUPPORT = REPO / "tests" / "support"
if str(REPO) not in sys.path:  # the package from this checkout, and its tests' real parts we reuse (tests.support)
    sys.path.insert(0, str(REPO))

__all__ = [
    "DEMO_ARGS",
    "REPO",
    "Measure",
    "Row",
    "Size",
    "ainterleaved",
    "bench_dir",
    "fmt_rate",
    "fmt_seconds",
    "interleaved",
    "median",
    "table",
]

T = TypeVar("T")

DEMO_ARGS = (str(SUPPORT / "tools_server.py"),)
"""How to start the demo MCP server with the test tools (tests/support/tools_server.py), this interpreter, stdio."""


@dataclass(frozen=True)
class Measure:
    """One side of a row: what was timed, and its median seconds.

    A row that measures something other than time (e.g. tokens) puts the quantity in `seconds` (the
    ratio is still measured / baseline) and how to show it in `shown`.
    """

    label: str
    seconds: float
    shown: str = ""


@dataclass(frozen=True)
class Row:
    """One line of the results table. `ratio` is measured / baseline time (lower is better).

    `met` is None for a row without a target of its own (informational). `why` says, for a missed
    target, what causes it and whose fix it is; it goes into the "why missed" section of results.md.
    `finding` is something the row measured that is worth fixing even where its target is met.
    """

    id: str
    name: str
    baseline: Measure | None
    measured: Measure
    target: str
    met: bool | None
    note: str = ""
    why: str = ""
    finding: str = ""
    ratio: float | None = field(default=None)

    def __post_init__(self) -> None:
        if self.ratio is None and self.baseline is not None and self.baseline.seconds > 0:
            object.__setattr__(self, "ratio", self.measured.seconds / self.baseline.seconds)

    @property
    def verdict(self) -> str:
        return "—" if self.met is None else ("met" if self.met else "MISSED")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Row:
        base = d.get("baseline")
        return cls(
            id=str(d["id"]), name=str(d["name"]), baseline=Measure(**base) if base else None,
            measured=Measure(**d["measured"]), target=str(d["target"]), met=d.get("met"),
            note=str(d.get("note", "")), why=str(d.get("why", "")), finding=str(d.get("finding", "")),
            ratio=d.get("ratio"),
        )


@dataclass(frozen=True)
class Size:
    """Full run (`make bench`) or the tiny one `make test` runs so that the benchmarks cannot rot."""

    small: bool = False

    def pick(self, small: T, full: T) -> T:
        return small if self.small else full


def bench_dir() -> Path:
    """A scratch folder for this row (run.py gives each worker its own, and removes it)."""
    path = Path(os.environ.get("SYNAPSE_BENCH_TMP") or "/tmp/synapse-bench")
    path.mkdir(parents=True, exist_ok=True)
    return path


# ---- timing ------------------------------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def paired_ratio(measured: Sequence[float], baseline: Sequence[float]) -> float:
    """The median of each round's measured / baseline: a round's two runs are a second apart, so a slowdown of the
    whole machine for a while (a neighbour on the host) cancels out, as it does not in the ratio of two medians
    taken over minutes."""
    return median([m / b for m, b in zip(measured, baseline, strict=True)])


def _order(names: Sequence[str], round_no: int) -> Sequence[str]:
    return names if round_no % 2 == 0 else list(reversed(names))


def interleaved(
    arms: Mapping[str, Callable[[], object]], rounds: int, *, warmup: int = 1, per: int = 1
) -> dict[str, list[float]]:
    """Seconds per run of each arm (divided by `per`), the arms alternating A B, B A ...; warm-ups dropped."""
    names = list(arms)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(warmup + rounds):
        for name in _order(names, r):
            t0 = time.perf_counter()
            arms[name]()
            elapsed = (time.perf_counter() - t0) / per
            if r >= warmup:
                samples[name].append(elapsed)
    return samples


async def ainterleaved(
    arms: Mapping[str, Callable[[], Awaitable[object]]], rounds: int, *, warmup: int = 1, per: int = 1,
    between: Callable[[], Awaitable[object]] | None = None,
) -> dict[str, list[float]]:
    """`interleaved` for coroutines; `between()` runs untimed after each arm (e.g. let a flusher finish)."""
    names = list(arms)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(warmup + rounds):
        for name in _order(names, r):
            t0 = time.perf_counter()
            await arms[name]()
            elapsed = (time.perf_counter() - t0) / per
            if r >= warmup:
                samples[name].append(elapsed)
            if between is not None:
                await between()
    return samples


def run_async(coro: Awaitable[T]) -> T:
    """asyncio.run for a row function (a fresh loop per row)."""

    async def main() -> T:
        return await coro

    return asyncio.run(main())


# ---- formatting --------------------------------------------------------------------------------------------


def fmt_seconds(seconds: float) -> str:
    """A duration with a unit that keeps three significant digits readable."""
    if seconds != seconds:  # NaN: not measured
        return "n/a"
    if abs(seconds) < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if abs(seconds) < 1:
        return f"{seconds * 1e3:.2f} ms" if abs(seconds) < 0.01 else f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def fmt_rate(count: float, seconds: float, unit: str) -> str:
    return f"{count / seconds:,.0f} {unit}/s" if seconds > 0 else f"∞ {unit}/s"


HEADER = ("#", "benchmark", "baseline", "measured", "ratio", "target", "result")


def _shown(measure: Measure) -> str:
    return measure.shown or fmt_seconds(measure.seconds)


def _cells(row: Row) -> tuple[str, ...]:
    base = f"{row.baseline.label}: {_shown(row.baseline)}" if row.baseline else "—"
    measured = f"{row.measured.label}: {_shown(row.measured)}"
    ratio = f"{row.ratio:.2f}x" if row.ratio is not None else "—"
    return (row.id, row.name, base, measured, ratio, row.target, row.verdict)


def table(rows: Sequence[Row], *, markdown: bool = True) -> str:
    """The results as a Markdown table (also readable in a terminal)."""
    lines = [_cells(r) for r in rows]
    if not markdown:
        widths = [max(len(c[i]) for c in [HEADER, *lines]) for i in range(len(HEADER))]

        def line(cells: Sequence[str]) -> str:
            return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

        return "\n".join([line(HEADER), line(["-" * w for w in widths]), *map(line, lines)])
    out = ["| " + " | ".join(HEADER) + " |", "|---|---|---|---|---:|---|---|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |" for cells in lines]
    return "\n".join(out)
