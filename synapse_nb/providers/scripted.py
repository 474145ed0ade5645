"""The `scripted` provider: a deterministic offline model that answers from a script, for demos and tests.

A script is a built-in name ("demo", "analyst"), a path to a JSON file, a JSON string, or a Python list of turns:

    script   := [entry, ...] | {"turns": [turn, ...], "rules": [rule, ...], "fallback": turn}
    entry    := turn | rule
    turn     := "text" | {"text": "...", "tool_calls": [call, ...]} | {"tool": NAME, "arguments": {...}}
    call     := {"name": NAME, "arguments": {...}}
    rule     := {"match": REGEX, "tool_calls"|"tool"+"arguments": ..., "answer": TEMPLATE}
              | {"match": REGEX, "steps": [turn, ...]}

The reply depends only on the conversation it is given. A rule applies when its regex matches the last
user message (case-insensitive) and every tool it names is offered; its steps play in order within that
user turn (a tool step, then the answer), the last step repeating. Otherwise turns play in order over
the whole conversation (the n-th assistant reply plays turn n; the last one repeats), then the fallback;
a script written in the model id itself (`scripted:[...]`, JSON: one cell's script) counts from that cell's
question instead, so a second such cell in a session plays its own first turn.
Keys an entry does not know are an error (`"args"` for `"arguments"` would otherwise be dropped silently).
Tool names resolve among the offered tools: exact, else by the `__NAME` suffix of a qualified MCP name
(preferring the server `demo`), else as a glob; a name that resolves to nothing is sent as written.
Templates fill `{prompt}`, `{result}` (the latest tool results), `{results}` (all this turn), `{tool}`,
`{model}` and the regex groups `{0}`, `{1}`, `{name}`; other braces stay as they are.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..protocols import Completion, ProviderChunk, TextChunk, ToolCallChunk
from ..types import Message, ToolCall, ToolSpec, Usage
from ._script import OFFLINE_ANSWER, Conversation, Reply, Script, ToolOutcome

__all__ = [
    "BUILTIN_SCRIPTS",
    "Conversation",
    "DataScript",
    "OFFLINE_ANSWER",
    "Reply",
    "Script",
    "ScriptedProvider",
    "ToolOutcome",
    "load_script",
]

# ---------------------------------------------------------------------------------------------- data scripts

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _render(value: Any, values: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), value)
    if isinstance(value, Mapping):
        return {k: _render(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_render(v, values) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class _Step:
    text: str
    calls: tuple[tuple[str, Mapping[str, Any]], ...]

    def render(self, conversation: Conversation, values: Mapping[str, str]) -> Reply:
        return Reply(
            text=_render(self.text, values),
            calls=tuple(
                (conversation.find_tool(name) or name, _render(dict(arguments), values))
                for name, arguments in self.calls
            ),
        )


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str]
    steps: tuple[_Step, ...]

    def tools(self) -> set[str]:
        return {name for step in self.steps for name, _ in step.calls}


_TURN_KEYS = frozenset({"text", "tool_calls", "tool", "arguments"})
_RULE_KEYS = _TURN_KEYS | {"match", "answer", "steps"}
_CALL_KEYS = frozenset({"name", "arguments"})
_INSTEAD = {"args": "arguments", "params": "arguments", "parameters": "arguments", "input": "arguments",
            "function": "name", "tool_name": "name", "calls": "tool_calls", "reply": "text", "content": "text"}


def _known(entry: Mapping[str, Any], keys: frozenset[str], where: str) -> None:
    """A key the script format does not know is a ConfigError naming it (and the key meant, when clear)."""
    unknown = sorted(str(k) for k in entry if k not in keys)
    if unknown:
        meant = [f"{k!r} (use {_INSTEAD[k]!r})" if k in _INSTEAD else repr(k) for k in unknown]
        raise ConfigError(f"script {where}: unknown key {', '.join(meant)}; an entry takes {', '.join(sorted(keys))}")


def _calls(entry: Mapping[str, Any], where: str) -> tuple[tuple[str, Mapping[str, Any]], ...]:
    raw: Any = entry.get("tool_calls", ())
    if "tool" in entry:
        raw = [*raw, {"name": entry["tool"], "arguments": entry.get("arguments", {})}]
    if not isinstance(raw, list | tuple):
        raise ConfigError(f"script {where}: tool_calls must be a list of {{name, arguments}}")
    calls: list[tuple[str, Mapping[str, Any]]] = []
    for call in raw:
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            raise ConfigError(f"script {where}: each tool call needs a name, got {call!r}")
        _known(call, _CALL_KEYS, where)
        arguments = call.get("arguments") or {}
        if not isinstance(arguments, Mapping):
            raise ConfigError(f"script {where}: arguments of {call['name']!r} must be an object")
        calls.append((call["name"], dict(arguments)))
    return tuple(calls)


def _step(entry: Any, where: str) -> _Step:
    if isinstance(entry, str):
        return _Step(entry, ())
    if isinstance(entry, Mapping):
        _known(entry, _TURN_KEYS, where)
        text = entry.get("text", "")
        if not isinstance(text, str):
            raise ConfigError(f"script {where}: text must be a string")
        return _Step(text, _calls(entry, where))
    raise ConfigError(f"script {where}: a turn is a string or an object with text/tool_calls, got {entry!r}")


def _rule(entry: Mapping[str, Any], where: str) -> _Rule:
    _known(entry, _RULE_KEYS, where)
    try:
        pattern = re.compile(str(entry["match"]), re.IGNORECASE | re.DOTALL)
    except re.error as exc:
        raise ConfigError(f"script {where}: match is not a valid regex ({exc})") from exc
    if "steps" in entry:
        if not isinstance(entry["steps"], list | tuple) or not entry["steps"]:
            raise ConfigError(f"script {where}: steps must be a non-empty list of turns")
        steps = tuple(_step(s, f"{where} step {i}") for i, s in enumerate(entry["steps"]))
    else:
        calls = _calls(entry, where)
        answer = entry.get("answer", entry.get("text", ""))
        first = _Step(entry.get("text", "") if "answer" in entry else "", calls)
        steps = (first, _Step(str(answer), ())) if calls else (_Step(str(answer), ()),)
    return _Rule(pattern, steps)


class DataScript:
    """A script given as data (JSON or Python lists and dicts): rules, turns in order, and a fallback.

    `per_cell`: the turns count from the last user message (a script written in one cell's model id)."""

    def __init__(self, data: Any, *, model: str = "demo", per_cell: bool = False) -> None:
        self.model = model
        self.per_cell = per_cell  # turns count from the last user message (a cell), not the whole conversation
        if isinstance(data, Mapping):
            unknown = set(data) - {"turns", "rules", "fallback"}
            if unknown:
                raise ConfigError(f"script: unknown keys {sorted(unknown)}; use turns, rules, fallback")
            entries = [*data.get("rules", ()), *data.get("turns", ())]
            fallback = data.get("fallback")
        elif isinstance(data, list | tuple):
            entries, fallback = list(data), None
        else:
            raise ConfigError("a script is a list of turns or an object with turns/rules/fallback")
        rules: list[_Rule] = []
        turns: list[_Step] = []
        for i, entry in enumerate(entries):
            if isinstance(entry, Mapping) and "match" in entry:
                rules.append(_rule(entry, f"entry {i}"))
            else:
                turns.append(_step(entry, f"entry {i}"))
        self.rules = tuple(rules)
        self.turns = tuple(turns)
        self.fallback = _step(fallback, "fallback") if fallback is not None else _Step(OFFLINE_ANSWER, ())

    def reply(self, conversation: Conversation) -> Reply:
        values = {
            "prompt": conversation.prompt,
            "result": "\n\n".join(o.text for o in conversation.latest),
            "results": "\n\n".join(o.text for o in conversation.outcomes),
            "tool": conversation.latest[-1].call.name if conversation.latest else "",
            "model": self.model,
        }
        for rule in self.rules:
            match = rule.pattern.search(conversation.prompt)
            if match is None or not all(conversation.find_tool(name) for name in rule.tools()):
                continue
            groups = {str(i): g or "" for i, g in enumerate((match.group(0), *match.groups()))}
            groups.update({k: v or "" for k, v in match.groupdict().items()})
            step = rule.steps[min(conversation.step, len(rule.steps) - 1)]
            return step.render(conversation, {**values, **groups})
        if self.turns:
            played = conversation.step if self.per_cell else conversation.replies
            return self.turns[min(played, len(self.turns) - 1)].render(conversation, values)
        return self.fallback.render(conversation, values)


BUILTIN_SCRIPTS = ("demo", "analyst")
"""Names a script may be given by."""


def _builtin(name: str) -> Script:
    from ._analyst_script import AnalystScript  # imported late: they build on this module
    from ._demo_script import DemoScript

    builtins: dict[str, Callable[[], Script]] = {"demo": DemoScript, "analyst": AnalystScript}
    return builtins[name]()


def load_script(script: str | Path | Sequence[Any] | Mapping[str, Any], *, model: str = "demo") -> Script:
    """A Script from a built-in name, a JSON file path, a JSON string, or Python data."""
    if isinstance(script, Path):
        return _load_file(script, model)
    if isinstance(script, str):
        if script in BUILTIN_SCRIPTS:
            return _builtin(script)
        if script.lstrip().startswith(("[", "{", '"')):
            try:
                return DataScript(json.loads(script), model=model, per_cell=True)  # a cell's own script
            except json.JSONDecodeError as exc:
                raise ConfigError(f"the script is not valid JSON: {exc}") from exc
        path = Path(script).expanduser()
        if path.suffix == ".json" or path.is_file():
            return _load_file(path, model)
        raise ConfigError(
            f"unknown script {script!r} for the scripted model: use {', '.join(BUILTIN_SCRIPTS)}, "
            "a JSON file path or a JSON string"
        )
    return DataScript(script, model=model)


def _load_file(path: Path, model: str) -> Script:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read script file {path}: {exc.strerror or exc}", path=str(path)) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"script file {path} is not valid JSON: {exc.msg}", path=str(path), line=exc.lineno, column=exc.colno
        ) from exc
    return DataScript(data, model=model)


# ------------------------------------------------------------------------------------------------ provider

_WORD = re.compile(r"\s*\S+")


def text_chunks(text: str, words: int = 3) -> list[str]:
    """The text in pieces of a few words each; joined they give the text back exactly."""
    tokens = _WORD.findall(text)
    rest = text[sum(map(len, tokens)) :]
    chunks = ["".join(tokens[i : i + words]) for i in range(0, len(tokens), max(1, words))]
    if rest:
        chunks = [*chunks[:-1], chunks[-1] + rest] if chunks else [rest]
    return chunks


def estimate_tokens(text: str) -> int:
    """About four characters a token: plausible counts for an offline model."""
    return math.ceil(len(text) / 4)


class ScriptedProvider:
    """A deterministic offline Provider answering from a script (see the module docstring)."""

    name = "scripted"

    def __init__(
        self,
        script: str | Path | Sequence[Any] | Mapping[str, Any] | None = None,
        *,
        model: str = "demo",
        delay: float = 0.0,
        words_per_chunk: int = 3,
    ) -> None:
        self.model = model
        self.delay = delay
        self.words_per_chunk = words_per_chunk
        self.script: Script = load_script(model if script is None else script, model=model)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (), *, system: str | None = None
    ) -> AsyncIterator[ProviderChunk]:
        started = time.perf_counter()
        reply = self.script.reply(Conversation.of(messages, tools))
        calls = tuple(
            ToolCall(id=f"call_{uuid.uuid4().hex[:24]}", name=name, arguments=dict(arguments))
            for name, arguments in reply.calls
        )
        ttft: float | None = None
        for piece in text_chunks(reply.text, self.words_per_chunk):
            await asyncio.sleep(self.delay)
            ttft = ttft if ttft is not None else (time.perf_counter() - started) * 1000
            yield TextChunk(piece)
        for index, call in enumerate(calls):
            await asyncio.sleep(self.delay)
            ttft = ttft if ttft is not None else (time.perf_counter() - started) * 1000
            yield ToolCallChunk(index, id=call.id, name=call.name)
            arguments = json.dumps(call.arguments, ensure_ascii=False)
            half = len(arguments) // 2
            for piece in (arguments[:half], arguments[half:]):
                if piece:
                    yield ToolCallChunk(index, arguments_delta=piece)
        prompt_text = (system or "") + json.dumps([m.to_dict() for m in messages], default=str)
        if tools:
            prompt_text += json.dumps([[t.name, t.description, t.input_schema] for t in tools], default=str)
        output_text = reply.text + "".join(c.name + json.dumps(c.arguments) for c in calls)
        yield Completion(
            message=Message.assistant(reply.text, calls),
            usage=Usage(input_tokens=estimate_tokens(prompt_text), output_tokens=max(1, estimate_tokens(output_text))),
            stop_reason="tool_use" if calls else "end_turn",
            ttft_ms=ttft if ttft is not None else (time.perf_counter() - started) * 1000,
        )

    async def aclose(self) -> None:
        """Nothing to release."""

    def __repr__(self) -> str:
        return f"ScriptedProvider(model={self.model!r})"
