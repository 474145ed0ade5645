"""Rows 1-3: a tool call through McpHub vs the bare SDK, the sync bridge a magic uses, and history recording.

All three call the demo server's `echo` tool over stdio, sequentially, in blocks that alternate with
their baseline on the same hub and server process (see _common.py); every figure is per call.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from _common import DEMO_ARGS, Measure, Row, Size, ainterleaved, bench_dir, fmt_seconds, median, paired_ratio, run_async

from synapse_nb.events import Event, ToolCallFinished, ToolCallStarted, utcnow
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.types import ToolCall

__all__ = ["row_bridge", "row_first_call", "row_history", "row_hub"]

ARGS = {"text": "hello from the benchmark"}


def _blocks(size: Size) -> tuple[int, int]:
    """(calls per block, timed blocks per side): ten times the issue's 500 sequential calls, as 100 blocks
    of 50 that alternate with the baseline's (short blocks put bursts of load from other programs on both
    sides alike)."""
    return size.pick((20, 2), (50, 100))


def _overhead(base: float, measured: float) -> float:
    return measured / base - 1


# ---- row 1 -------------------------------------------------------------------------------------------------


async def _sdk_client(hub: McpHub, server: str) -> Any:
    """The hub's own `mcp.Client` for `server` (the benchmark's way in; not an API for anything else)."""

    async def grab(client: Any) -> Any:
        return client

    return await hub._conn(server).request(grab, "benchmark", None)


async def _hub_vs_bare(size: Size) -> Row:
    n, rounds = _blocks(size)
    async with McpHub() as hub:
        await hub.connect("demo", command=sys.executable, args=DEMO_ARGS)
        # The same client, session and server process on both sides: the difference is the hub's layer
        # alone (two server processes differ by more than 10% on a busy machine, whoever calls them).
        client = await _sdk_client(hub, "demo")
        cpu = {"bare": 0.0, "hub": 0.0}  # this thread's CPU seconds per side

        async def sdk() -> None:
            c0 = time.thread_time()
            for _ in range(n):
                result = await client.call_tool("echo", ARGS)
                assert not result.is_error
            cpu["bare"] += time.thread_time() - c0

        async def ours() -> None:
            c0 = time.thread_time()
            for _ in range(n):
                result = await hub.call("demo__echo", ARGS)
                assert not result.is_error
            cpu["hub"] += time.thread_time() - c0

        s = await ainterleaved({"bare": sdk, "hub": ours}, rounds, per=n)
    base, hub_s = median(s["bare"]), median(s["hub"])
    over = _overhead(base, hub_s)
    extra_cpu = (cpu["hub"] - cpu["bare"]) / (n * (rounds + 1))
    return Row(
        "1", "tool call round trip: McpHub.call vs bare mcp.Client.call_tool",
        Measure("mcp.Client.call_tool", base), Measure("McpHub.call", hub_s),
        "overhead < 10%", over < 0.10,
        note=f"overhead {over:+.1%} ({fmt_seconds(hub_s - base)} per call; CPU in this process "
             f"{fmt_seconds(extra_cpu)} more per call); the demo server's `echo` over stdio, the same server and "
             f"SDK client on both sides; "
             f"{n * rounds:,} sequential calls per side in blocks of {n} alternating with the other side; median "
             f"per call over the {rounds} blocks",
        why=(
            "" if over < 0.10 else
            f"the hub adds {fmt_seconds(hub_s - base)} per call ({fmt_seconds(extra_cpu)} of CPU) to a "
            f"{fmt_seconds(base)} round trip. It is the hop itself: each call is queued to the connection's owner "
            "task, which starts it as a child task of its anyio task group inside a cancel scope (the timeout) "
            "and answers through a future: two more event-loop iterations and a task per call than calling the "
            "SDK in place (mcp_client/connection.py `request`/`_serve`/`_run`); the hub's lookups and the "
            "result conversion are a few µs. The hop keeps every SDK context inside the owner task, which "
            "interrupts and nest_asyncio re-entry rely on (DESIGN section 3); its cost is fixed "
            f"per call: {(hub_s - base) / base:.0%} of this sub-millisecond local echo, "
            f"{(hub_s - base) / 0.01:.1%} of a 10 ms tool. Rerun with `--only 1` on a quiet machine: on this "
            "shared 2-core one the row moves by several % from run to run."
        ),
    )


def row_hub(size: Size) -> list[Row]:
    return [run_async(_hub_vs_bare(size))]


# ---- row 2 -------------------------------------------------------------------------------------------------


async def _bridge(size: Size) -> Row:
    """`%mcp call` as a whole cell runs it: the awaited command (notebook/kernel/awaited.py) on the running loop.

    Then, for the record, the nested bridge a magic called from code takes (`commands.mcp_call.call_async` through
    the runner, called synchronously while the loop runs), measured last because it applies nest_asyncio2 to
    the process."""
    import _asyncio

    from synapse_nb.notebook.commands import mcp_call
    from synapse_nb.notebook.commands.args import CallTarget
    from synapse_nb.notebook.kernel.runner import Runner
    from synapse_nb.notebook.magics import SynapseMagics
    from synapse_nb.notebook.state import SynapseState

    n, rounds = _blocks(size)
    runner = Runner(asyncio.get_running_loop())
    state = SynapseState(None, runner=runner)
    magics = SynapseMagics(None, state)
    hub = state.hub
    await hub.connect("demo", command=sys.executable, args=DEMO_ARGS)
    target = CallTarget("demo", "echo")

    def nested_call() -> object:
        """What `%mcp call` does, called from code: find the tool, then the call through the runner's bridge."""
        spec = mcp_call.find_tool(hub, state.registry, state.kernel, state.secret_registry, target)
        return state.runner.run(mcp_call.call_async(spec, ARGS, manual=state.manual, port=state.port, apps=state.apps))
    line = f"call demo.echo text='{ARGS['text']}'"
    cpu: dict[str, float] = {}  # this thread's CPU seconds per side

    def per_call(name: str, once: Callable[[], object]) -> Callable[[], Awaitable[None]]:
        """A block of `n` calls of `once()` (awaited when it returns an awaitable), its CPU time noted."""

        async def block() -> None:
            c0 = time.thread_time()
            for _ in range(n):
                value = once()
                if asyncio.iscoroutine(value):
                    value = await value
                result = getattr(value, "result", value)
                assert not getattr(result, "is_error", True)
            cpu[name] = cpu.get(name, 0.0) + time.thread_time() - c0

        return block

    def kernels_sigint(signum: int, frame: object) -> None:
        """What SIGINT runs in a kernel (a function: ipykernel's own while it awaits a cell, Python's default
        one otherwise), instead of asyncio.run's handler: that one holds the main Task, whose repr the `signal`
        module formats each time the runner swaps handlers (~40 µs a call, which no kernel pays)."""

    outside = signal.signal(signal.SIGINT, kernels_sigint)
    try:
        arms = {
            # The async path of the same work the magic does (the hub call, recorded as a manual call).
            "await": per_call("await", lambda: state.manual.call("demo__echo", ARGS)),
            # What the transformed cell awaits: parse the line, the command, the runner's SIGINT guard.
            "magic": per_call("magic", lambda: magics.run_awaited("mcp", line)),
        }
        s = await ainterleaved(arms, rounds, per=n)
        unpatched = asyncio.Task is _asyncio.Task
        # The nested bridge (a magic called from code while the loop runs): applies nest_asyncio2, whose
        # pure-Python Task then runs both sides, so it gets its own baseline.
        nested_arms = {
            "await2": per_call("await2", lambda: state.manual.call("demo__echo", ARGS)),
            "nested": per_call("nested", nested_call),
        }
        nested = await ainterleaved(nested_arms, max(2, rounds // 4), per=n)
    finally:
        signal.signal(signal.SIGINT, outside)
        await state.hub.aclose()
        await state.models.aclose()
    base, awaited = median(s["await"]), median(s["magic"])
    over = paired_ratio(s["magic"], s["await"]) - 1
    nested_over = _overhead(median(nested["await2"]), median(nested["nested"]))
    calls = n * (rounds + 1)
    extra = (cpu["magic"] - cpu["await"]) / calls
    note = (f"overhead {over:+.1%} ({fmt_seconds(awaited - base)} per call; CPU {fmt_seconds(extra)} per call); "
            f"`SynapseMagics.run_awaited('mcp', 'call demo.echo ...')`, what a whole-cell `%mcp call` awaits after "
            f"the input transformer, on the running loop (asyncio.Task still the C Task: {unpatched}), SIGINT "
            f"handled by a function as in a kernel; per call, the median of {rounds} rounds' paired "
            f"ratios, blocks of {n} alternating (the ratio of the two medians: {awaited / base:.3f}x). For the "
            f"record, the nested bridge a magic called from code takes (Runner.run re-entering the loop with "
            f"nest_asyncio2): {nested_over:+.1%} against the "
            "same awaited call, both sides then on nest_asyncio2's pure-Python Task")
    return Row(
        "2", "the same call as a whole-cell `%mcp call` (awaited cell) vs awaited directly",
        Measure("await state.call_tool", base), Measure("%mcp call, awaited cell", awaited),
        "overhead < 10%", over < 0.10, note=note, ratio=1 + over,
        why="" if over < 0.10 else (
            f"each call through the magic costs {fmt_seconds(awaited - base)} more ({fmt_seconds(extra)} of CPU): "
            "parsing the line, the live output's timer, the call's history record and the SIGINT handler swap "
            "(notebook/kernel/runner.py), against a call of ~4 ms. Where a user waits, a cell's round trip in a real "
            "kernel, the same comparison is row 21a. On this shared 2-core machine the row moves by several % "
            "between runs: rerun with `--only 2`."
        ),
    )


def row_bridge(size: Size) -> list[Row]:
    return [run_async(_bridge(size))]


# ---- row 3 -------------------------------------------------------------------------------------------------


def _recorded_call(hub: McpHub, sink: Callable[[Event], None]) -> Callable[[], Awaitable[None]]:
    """One tool call with the two events the agent emits around it, sent to `sink`."""
    counter = iter(range(10**9))

    async def call() -> None:
        tc = ToolCall(f"call_{next(counter)}", "demo__echo", ARGS)
        started = ToolCallStarted(session_id="bench", call=tc, server="demo", tool="echo", approval="auto",
                                  message_id="m")
        sink(started)
        result = await hub.call("demo__echo", ARGS)
        sink(ToolCallFinished(session_id="bench", call=tc, server="demo", tool="echo", approval="auto",
                              started_at=started.at, duration_ms=result.duration_ms, result=result, message_id="m"))

    return call


def _ingest_cost(store: Any, samples: int) -> tuple[float, float]:
    """(wall, CPU) seconds of one ingest of a single event: the fixed price of every flusher cycle."""
    from synapse_nb.history.store import HistoryStore

    assert isinstance(store, HistoryStore)
    walls, cpus = [], []
    for i in range(samples):
        tc = ToolCall(f"probe_{i}", "demo__echo", ARGS)
        store.record(ToolCallFinished(session_id="bench", call=tc, server="demo", tool="echo", approval="auto",
                                      started_at=utcnow(), duration_ms=1.0, error="probe"))
        t0, c0 = time.perf_counter(), time.process_time()
        store.flush()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return median(walls), median(cpus)


async def _history_on_off(size: Size) -> Row:
    from synapse_nb.history import store as store_module
    from synapse_nb.history.store import HistoryStore

    # Many short rounds (400 calls, ~1.5 s a run), compared within each round: this machine's speed drifts by
    # more than the 5% measured here over the minutes a row takes.
    n, rounds = size.pick((40, 2), (400, 30))
    path = Path(bench_dir()) / "row3.duckdb"
    store = HistoryStore.open(path, strict=True)
    in_record = [0.0, 0]  # seconds spent inside record(), calls

    def record(event: Event) -> None:
        t0 = time.perf_counter()
        store.record(event)
        in_record[0] += time.perf_counter() - t0
        in_record[1] += 1

    def off(event: Event) -> None:
        """The same events, built and dropped."""

    async with McpHub() as hub:
        await hub.connect("demo", command=sys.executable, args=DEMO_ARGS)
        with_store, without = _recorded_call(hub, record), _recorded_call(hub, off)

        async def on_arm() -> None:
            for _ in range(n):
                await with_store()

        async def off_arm() -> None:
            for _ in range(n):
                await without()

        async def settle() -> None:
            # The flusher ingests once events stop for QUIET (never inside a burst of calls, nor at a cell's end,
            # which is where it would cost a user); here that is between runs, so it is done untimed, as the
            # kernel does it while the user reads.
            await asyncio.to_thread(store.flush)

        s = await ainterleaved({"off": off_arm, "on": on_arm}, rounds, per=n, between=settle)
    rows = len(store.history().sql("SELECT tool_call_id FROM tool_calls"))
    ingest_wall, ingest_cpu = _ingest_cost(store, size.pick(2, 5))
    store.close()
    base, on = median(s["off"]), median(s["on"])
    ratio = paired_ratio(s["on"], s["off"])
    over = ratio - 1
    direct = in_record[0] / in_record[1] * 2  # two events per call
    return Row(
        "3", "history recording on vs off, per tool call",
        Measure("no history sink", base), Measure("HistoryStore.record sink", on),
        "< 5% extra", over < 0.05, ratio=ratio,
        note=f"{over:+.1%} ({fmt_seconds(base * over)} per call), the median of {rounds} rounds' on/off ratios "
             f"(runs of {n:,} calls, adjacent in time; the ratio of the two medians is {on / base:.2f}x): "
             "ToolCallStarted/Finished recorded around each hub call to the demo server's `echo`; record() itself "
             f"took {fmt_seconds(direct)} per call; the flusher ingests once the calls stop (QUIET), one ingest "
             f"costing {fmt_seconds(ingest_cpu)} of CPU however few events it carries; {rows:,} tool calls recorded",
        why=(
            "" if over < 0.05 else
            f"recording costs {fmt_seconds(base * over)} per call against a {fmt_seconds(base)} round trip. "
            f"Measured in this run: record() itself takes {fmt_seconds(direct)} per call ({direct / base:.1%}; "
            "mapping, JSON, redaction and one write for the two events, history/store.py `record`/`_line`: the "
            "write is what lets an event survive a SIGKILL as soon as record() returns). Ingests (a fixed "
            f"{fmt_seconds(ingest_cpu)} of CPU, {fmt_seconds(ingest_wall)} wall) wait until no event came for "
            f"QUIET ({store_module.QUIET:g} s), so they are not in the timed runs. The rest is this machine's "
            "drift between the rounds: rerun with `--only 3`."
        ),
    )


def row_history(size: Size) -> list[Row]:
    return [run_async(_history_on_off(size))]


# ---- row 12 ------------------------------------------------------------------------------------------------

# A fresh interpreter connects the demo server and times its first call of `large` (10 MB of text): through
# McpHub, or through the bare SDK client. The first call is where one-time costs show (a lazy import, a
# thread competing for the GIL); later calls are row 1's business.
_FIRST_CALL = """
import asyncio, json, sys, time
ARGS = sys.argv[2:]  # the demo server with the test tools (DEMO_ARGS)

async def hub():
    from synapse_nb.mcp_client.hub import McpHub
    async with McpHub() as hub:
        await hub.connect("demo", command=sys.executable, args=ARGS)
        t0 = time.perf_counter()
        result = await hub.call("demo__large", {"kb": 10240})
        return time.perf_counter() - t0, len(result.text)

async def bare():
    from mcp import Client, StdioServerParameters
    async with Client(StdioServerParameters(command=sys.executable, args=ARGS), cache=None) as client:
        t0 = time.perf_counter()
        result = await client.call_tool("large", {"kb": 10240})
        return time.perf_counter() - t0, len(result.content[0].text)

seconds, size = asyncio.run(hub() if sys.argv[1] == "hub" else bare())
print(json.dumps({"seconds": seconds, "size": size}))
"""


async def _first_call_row(size: Size) -> Row:
    rounds, warmup = size.pick((1, 0), (7, 1))
    times: dict[str, list[float]] = {"bare": [], "hub": []}

    def arm(side: str) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            proc = await asyncio.create_subprocess_exec(sys.executable, "-c", _FIRST_CALL, side, *DEMO_ARGS,
                                                        stdout=asyncio.subprocess.PIPE,
                                                        stderr=asyncio.subprocess.DEVNULL)
            out, _ = await proc.communicate()
            result = json.loads(out)
            if result["size"] != 10 * 1024 * 1024:
                raise RuntimeError(f"{side}: the result had {result['size']} characters, not 10 MB")
            times[side].append(result["seconds"])

        return run

    await ainterleaved({"bare": arm("bare"), "hub": arm("hub")}, rounds, warmup=warmup)
    base, measured = median(times["bare"][warmup:]), median(times["hub"][warmup:])
    ok = measured < 1.2 * base
    return Row(
        "12", "first tool call after connect, a 10 MB result: McpHub.call vs bare mcp.Client.call_tool",
        Measure("bare mcp.Client, first call", base), Measure("McpHub.call, first call", measured), "< 1.2x", ok,
        note=f"the demo server's `large` (10 MB of text) over stdio, the first call in a fresh interpreter right "
             f"after connect, each side its own interpreter and server; median of {rounds}. Most of either side is "
             "the SDK's stdio reader re-splitting its growing line buffer on every 64 KB chunk",
        why="" if ok else
            f"the hub's first call took {measured / base:.2f}x the bare SDK's: look for one-time work on or beside "
            "the loop during the first call (a lazy import, a thread holding the GIL: "
            "tasks.validation_ready)",
    )


def row_first_call(size: Size) -> list[Row]:
    return [run_async(_first_call_row(size))]
