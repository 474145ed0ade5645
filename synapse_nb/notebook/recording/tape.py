"""Record and replay in a kernel: `%synapse record PATH|off`, `%synapse replay PATH|off [--live-tools]`,
`SYNAPSE_RECORD` / `SYNAPSE_REPLAY`, and what a turn takes from them.

Recording wraps each turn's provider (providers/replay.py: every model exchange goes to the cassette)
and adds a sink that writes each tool call's outcome. Replaying answers every model request from the
cassette (no network, no key) and, unless `--live-tools`, every tool call too. The cassette format and
the request fingerprint are synapse_nb/cassette.py's; its lines are masked with the secrets the kernel
knows (masking.py, notebook/secrets.py), as the history's are. The kernel's TapeDeck holds what is on; with
neither on, its `tape` is None and nothing of this runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from IPython.core.error import UsageError

from ...errors import SynapseError
from ...events import Event, ToolCallFinished
from ...types import ToolCall, ToolResult
from ..usage import usage_error

if TYPE_CHECKING:
    from ...cassette import CassetteWriter
    from ...cassette_reader import Cassette
    from ...masking import SecretMask
    from ...protocols import Provider, ToolAnswer
    from ..secrets import SecretRegistry

__all__ = [
    "RECORD_VARIABLE", "REPLAY_VARIABLE", "Tape", "TapeDeck", "command", "from_env", "record", "replay", "stop",
]

RECORD_VARIABLE = "SYNAPSE_RECORD"
REPLAY_VARIABLE = "SYNAPSE_REPLAY"

RECORD_USAGE = "%synapse record PATH | off"
REPLAY_USAGE = "%synapse replay PATH [--live-tools] | off"


@dataclass
class Tape:
    """What is on in this kernel: recording to `writer`, or replaying `cassette` (`shown` is the path as
    the user gave it, for messages and the footer)."""

    mode: Literal["record", "replay"]
    shown: str
    mask: SecretMask
    writer: CassetteWriter | None = None
    cassette: Cassette | None = None
    live_tools: bool = False

    @property
    def note(self) -> str:
        """The footer's note on each turn."""
        name = Path(self.shown).name
        if self.mode == "replay":
            return f"replayed from {name}" + (", tools live" if self.live_tools else "")
        return f"recorded to {name}"

    def provider(self, model_id: str | None, live: Provider | None) -> Provider:
        """The provider a turn uses: the replaying one, or `live` wrapped to record."""
        from ...providers.replay import RecordingProvider, replay_provider

        if self.cassette is not None:
            return replay_provider(model_id, self.cassette)
        if live is None or self.writer is None:
            raise RuntimeError("recording needs the live provider")
        return RecordingProvider(live, self.writer)

    def on_event(self, event: Event) -> None:
        """The recording sink of a turn: each tool call's outcome joins the cassette."""
        if self.writer is not None and isinstance(event, ToolCallFinished):
            self.writer.tool(event.call.name, event.call.arguments, event.result, event.error, event.duration_ms)

    def tool_answer(self) -> ToolAnswer | None:
        """What answers a replayed turn's tool calls (None: they run live)."""
        cassette = self.cassette
        if cassette is None or self.live_tools:
            return None

        async def answer(call: ToolCall) -> tuple[ToolResult | None, str | None, float]:
            found = cassette.tool(call.name, call.arguments)
            if found is None:
                return None, (f"ReplayMismatchError: the cassette {cassette.path.name} has no result for {call.name} "
                              "with these arguments (replay with --live-tools to run tools)"), 0.0
            return found.result, found.error, found.duration_ms

        return answer

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class TapeDeck:
    """The kernel's record/replay switch: the Tape that is on (None: neither), its mask kept up to date with
    the kernel's secrets while it is on."""

    def __init__(self, secrets: SecretRegistry) -> None:
        self.secrets = secrets
        self.tape: Tape | None = None
        self._unsubscribe: Callable[[], None] | None = None

    def put(self, tape: Tape | None) -> None:
        """`tape` is on from now on (None: nothing is); the one that was on is closed."""
        self.close()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.tape = tape
        if tape is not None:
            self._unsubscribe = self.secrets.subscribe(tape.mask.add_secret, known=False)  # built with the known

    def close(self) -> None:
        """Close the tape that is on (its cassette is complete on disk); it stays the one on."""
        if self.tape is not None:
            self.tape.close()

    def mask(self) -> SecretMask:
        """A mask holding every secret the kernel knows now, for a new cassette."""
        from ...masking import SecretMask

        return SecretMask(self.secrets.values)


def record(deck: TapeDeck, path: str) -> str:
    """Start recording to `path` (replaced if it exists); stops a replay or recording that was on."""
    from ...cassette import CassetteWriter

    mask = deck.mask()
    try:
        writer = CassetteWriter(path, mask)
    except SynapseError as exc:
        raise usage_error(exc) from None
    stop(deck)
    deck.put(Tape("record", path, mask, writer=writer))
    return f"recording model exchanges and tool results to {path} (%synapse record off stops)"


def replay(deck: TapeDeck, path: str, *, live_tools: bool = False) -> str:
    """Replay `path` from now on; stops a recording or replay that was on."""
    from ...cassette_reader import Cassette

    mask = deck.mask()
    try:
        cassette = Cassette.load(path, mask)
    except SynapseError as exc:
        raise usage_error(exc) from None
    stop(deck)
    deck.put(Tape("replay", path, mask, cassette=cassette, live_tools=live_tools))
    tools = "run live" if live_tools else "answered from the cassette"
    return (f"replaying {path}: {len(cassette.exchanges)} model exchanges, {len(cassette.tools)} tool results; "
            f"no model is called, tool calls are {tools} (%synapse replay off stops)")


def stop(deck: TapeDeck, mode: str | None = None) -> str:
    """Turn recording or replay off (`mode` None: whichever is on)."""
    tape = deck.tape
    if tape is None or (mode is not None and tape.mode != mode):
        return f"{mode or 'record/replay'} is not on"
    deck.put(None)
    if tape.writer is not None:
        held = f"{tape.writer.exchanges} model exchanges, {tape.writer.tools} tool results"
        return f"stopped recording: {tape.shown} holds {held}"
    return "replay is off: models and tools answer live again"


def command(deck: TapeDeck, sub: str, words: list[str]) -> str:
    """`%synapse record ...` / `%synapse replay ...`: the line to print."""
    usage = RECORD_USAGE if sub == "record" else REPLAY_USAGE
    live_tools = sub == "replay" and "--live-tools" in words
    args = [w for w in words if not (live_tools and w == "--live-tools")]
    unknown = [w for w in args if w.startswith("--")]
    if unknown:
        raise UsageError(f"%synapse {sub}: unknown option {unknown[0]}; use {usage}")
    if not args:
        tape = deck.tape
        if tape is not None and tape.mode == sub:
            return f"{sub} is on: {tape.shown} ({tape.note})"
        raise UsageError(f"%synapse {sub}: name the cassette file, e.g. %synapse {sub} cassettes/run.jsonl ({usage})")
    if len(args) > 1:
        raise UsageError(
            f"%synapse {sub}: one cassette file, not {len(args)} words; quote a path with spaces ({usage})"
        )
    if args[0] == "off":
        if live_tools:
            raise UsageError(
                "%synapse replay off: --live-tools goes with a cassette, e.g. %synapse replay PATH --live-tools"
            )
        return stop(deck, sub)
    return record(deck, args[0]) if sub == "record" else replay(deck, args[0], live_tools=live_tools)


def from_env(deck: TapeDeck, env: Mapping[str, str] = os.environ) -> str | None:
    """Apply SYNAPSE_RECORD / SYNAPSE_REPLAY (at `%load_ext`): the line to say, or None when neither is set."""
    recording, replaying = env.get(RECORD_VARIABLE, "").strip(), env.get(REPLAY_VARIABLE, "").strip()
    if recording and replaying:
        raise UsageError(f"set {RECORD_VARIABLE} or {REPLAY_VARIABLE}, not both; neither is on")
    if recording:
        return record(deck, recording)
    if replaying:
        return replay(deck, replaying)
    return None
