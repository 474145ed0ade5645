"""What a session's model calls cost: pricing each call, the budget check before the next one, and how many
prompt tokens each tool result added (for cost by tool and server).

`SessionSpend` is fed by the session's events, as a stage before the sinks (agent/emitter.py): it follows
the messages added, and completes each LlmCallFinished of the agent with its cost (`usage.cost_usd`,
`price_source`, `input_cost_usd`) and `tool_result_tokens`, so every sink (history, display, spans) and the
turn's result see the priced call. The loop only asks it `check` before each model call.

Budget check. Before each model call the agent projects the next call and stops the turn (status
`budget_exceeded`, BudgetExceededError, the transcript so far kept) when spent + projection would pass
a limit. The projection is deliberately high:

- prompt tokens: the previous call's prompt + its output + ceil(characters of the messages added since
  / 3); for the first call of the session in this kernel, ceil(characters of the system prompt, the
  tool schemas and the transcript / 3). Three characters per token is fewer than the ~4 of English
  text and JSON, so the estimate errs high. Every prompt token is priced as uncached input.
- output tokens: the largest output of any call of this session so far (0 before the first call).

Limits: `turn_usd` (`%%synapse --budget USD`), `session_usd` (`SynapseMagics.session_budget`: what
this kernel's calls in the session cost, this turn included), and `max_tokens` (`--max-tokens N`: the
turn's prompt + output tokens over all its model calls, cached prompt tokens included, as the provider
reports them). A USD limit for a model without a known price stops the turn before its first call,
with a line saying so: it cannot be enforced, and is not silently ignored. A call replayed from a
cassette costs 0 (pricing.REPLAYED), so USD limits never stop a replay; `max_tokens` counts the
recorded tokens, so a replay stops where its recording did.

Tool attribution. Between two calls of a session the prompt grows by what came back: the reply of
the first (its output tokens) and the messages added after it. The growth the provider measured,
prompt(k) - prompt(k-1) - output(k-1), is split among those new messages by their length in
characters; a tool result's share is the tokens it added to every later request of the session.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import BudgetExceededError, ConfigError
from ..events import Event, LlmCallFinished, MessageAdded
from ..pricing import REPLAYED, Price, price_for, usd
from ..types import Message, ToolSpec, Usage

__all__ = ["CHARS_PER_TOKEN", "Budget", "SessionSpend", "costed", "project_tokens"]

logger = logging.getLogger("synapse_nb.agent")

CHARS_PER_TOKEN = 3
"""Characters per token assumed by the projection (fewer than usual, so it errs high)."""


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits for a turn (None: no limit); see the module docstring for exactly what each counts."""

    turn_usd: float | None = None
    session_usd: float | None = None
    max_tokens: int | None = None

    @property
    def in_usd(self) -> bool:
        return self.turn_usd is not None or self.session_usd is not None

    @property
    def empty(self) -> bool:
        return not self.in_usd and self.max_tokens is None


def costed(event: LlmCallFinished, price: Price | None) -> LlmCallFinished:
    """A model call with its cost at `price` (None: unknown): its usage's cost, the price's source, and what its
    prompt cost. The agent's calls are costed by their session's spend (SessionSpend.priced), a server's sampling
    call by whoever made it (notebook/questions/answers.py)."""
    usage = dataclasses.replace(event.usage, cost_usd=None if price is None else price.cost(event.usage))
    return dataclasses.replace(
        event, usage=usage, price_source=price.source if price is not None else None,
        input_cost_usd=price.input_cost(usage) if price is not None else None,
    )


def _chars(message: Message) -> int:
    n = len(message.content)
    for call in message.tool_calls:
        n += len(call.name) + len(json.dumps(dict(call.arguments)))
    return n


def project_tokens(chars: int) -> int:
    """Prompt tokens projected for `chars` characters."""
    return math.ceil(chars / CHARS_PER_TOKEN)


@dataclass(slots=True)
class SessionSpend:
    """One session's spending as this kernel saw it: the last call, the largest output, and the cost.

    Called with each event of the session (a stage: it returns the event the sinks get): a message joins
    `added` (the transcript's messages since the last measured call), an LlmCallFinished of the agent is
    priced and accounted. A session resumed from the history starts with none of its messages here: its
    first call is measured whole (no attribution, as for any first call of a session in this kernel).
    """

    last_input: int | None = None
    last_output: int = 0
    max_output: int = 0
    cost_usd: float | None = 0.0
    added: list[Message] = field(default_factory=list, repr=False)  # transcript messages since the last measured call
    _warned_prices: bool = field(default=False, repr=False)

    def __call__(self, event: Event) -> Event:
        """`event`, priced when it is a model call of the agent (a server's sampling call is priced by whoever
        made it); the messages of the session are followed."""
        if isinstance(event, MessageAdded):
            if event.message.role != "system":  # the system prompt is sent apart from the transcript
                self.added.append(event.message)
        elif isinstance(event, LlmCallFinished) and event.origin is None:
            return self.priced(event)
        return event

    def priced(self, event: LlmCallFinished) -> LlmCallFinished:
        """The call with its cost (a cassette's answer costs 0; no price: cost None) and the tokens each tool
        result first sent in it added to the prompt; the session's spend accounts it."""
        event = costed(event, self.price(event.provider, event.model, replayed=event.replayed))
        return dataclasses.replace(event, tool_result_tokens=self.record(event.usage))

    def price(self, provider: str, model: str, *, replayed: bool = False) -> Price | None:
        """The model's price (REPLAYED, 0, for a call answered from a cassette); a bad prices file is logged
        once and leaves the cost unknown."""
        if replayed:
            return REPLAYED
        try:
            return price_for(provider, model)
        except ConfigError as exc:
            if not self._warned_prices:
                self._warned_prices = True
                logger.warning("%s; costs are unknown until it is fixed", exc)
            return None

    def projected(
        self, messages: Sequence[Message], system: str | None, tools: Sequence[ToolSpec]
    ) -> tuple[int, int]:
        """(prompt tokens, output tokens) projected for the next call."""
        if self.last_input is None:
            chars = len(system or "") + sum(_chars(m) for m in messages)
            chars += sum(len(t.name) + len(t.description) + len(json.dumps(dict(t.input_schema))) for t in tools)
            return project_tokens(chars), self.max_output
        added = sum(_chars(m) for m in self.added)
        return self.last_input + self.last_output + project_tokens(added), self.max_output

    def check(
        self, budget: Budget, *, turn: Usage, model: tuple[str, str], messages: Sequence[Message],
        system: str | None, tools: Sequence[ToolSpec], replayed: bool = False,
    ) -> None:
        """BudgetExceededError when the next call could pass a limit of `budget` (`turn`: spent so far;
        `replayed`: the next call is answered from a cassette, so it costs nothing)."""
        if budget.empty:
            return
        inp, out = self.projected(messages, system, tools)
        if budget.max_tokens is not None:
            spent = turn.total_tokens
            if spent + inp + out > budget.max_tokens:
                raise BudgetExceededError(
                    f"stopped before the next model call: this turn used {spent:,} tokens and the next call "
                    f"could use up to ~{inp + out:,} more, past --max-tokens {budget.max_tokens:,}; "
                    "the transcript so far is kept",
                    limit=budget.max_tokens, spent=spent, unit="tokens",
                )
        if not budget.in_usd:
            return
        price = self.price(*model, replayed=replayed)
        if price is None:
            raise BudgetExceededError(
                f"cost unknown for {model[0]}:{model[1]} (no price), so the USD budget cannot be enforced and "
                "the turn did not start a model call; add its price to ~/.config/synapse/prices.json "
                "(or the file SYNAPSE_PRICES names) or drop the budget",
                limit=budget.turn_usd if budget.turn_usd is not None else budget.session_usd or 0.0,
                spent=0.0, unit="USD",
            )
        bound = price.cost(Usage(inp, out))
        limits = (("--budget", budget.turn_usd, turn.cost_usd), ("session_budget", budget.session_usd, self.cost_usd))
        for name, limit, spent_usd in limits:
            if limit is None:
                continue
            spent_now = spent_usd or 0.0
            if spent_now + bound > limit:
                where = "this turn" if name == "--budget" else "this session"
                raise BudgetExceededError(
                    f"stopped before the next model call: {where} spent {usd(spent_now)} and the next call could "
                    f"cost up to {usd(bound)}, past {name} {usd(limit)}; the transcript so far is kept",
                    limit=limit, spent=spent_now, unit="USD",
                )

    def record(self, usage: Usage) -> dict[str, int]:
        """Account one finished call, whose request carried the messages `added` since the last measured one;
        the tokens each tool result first sent in it added to the prompt ({tool_call_id: tokens}; empty for
        the session's first call here)."""
        tokens: dict[str, int] = {}
        new = [m for m in self.added if m.role != "assistant"]
        if self.last_input is not None and new and usage.input_tokens:
            growth = max(0, usage.input_tokens - self.last_input - self.last_output)
            weights = [max(1, _chars(m)) for m in new]
            total = sum(weights)
            for m, w in zip(new, weights, strict=True):
                if m.role == "tool" and m.tool_call_id:
                    tokens[m.tool_call_id] = tokens.get(m.tool_call_id, 0) + round(growth * w / total)
        if usage.input_tokens or usage.output_tokens:  # a call that failed measured nothing
            self.last_input, self.last_output = usage.input_tokens, usage.output_tokens
            self.max_output = max(self.max_output, usage.output_tokens)
            self.added = []
        self.cost_usd = None if self.cost_usd is None or usage.cost_usd is None else self.cost_usd + usage.cost_usd
        return tokens
