"""Answers to what a server asks of the client (elicitation, sampling, roots) and what it tells (logs, updates).

The hub never talks to a user or a model itself: a `ClientHandlers` of async callables is injected
(the notebook layer answers elicitation through stdin or a widget and sampling through the
kernel's model; the conformance driver answers by script). `ServerHooks` is one server's side of
it: it turns the SDK's client callbacks into those plain values, applies the server's policy from
its config entry (`elicitation`, `sampling`, `roots`, `log_level`) and keeps its log ring.

Without handlers: elicitation is declined and sampling is refused with a clear error. Roots are offered
only to a server whose entry has `roots` (the client declares the roots capability to no other): servers
such as the reference filesystem server replace the folders of their own command line with the client's
roots, so offering the working directory unasked would take those folders away.

A question may end without the user: the server completes a URL flow (`notifications/elicitation/complete`
with its id: the server is answered "accept") or cancels its request (`notifications/cancelled`, which the
SDK applies by cancelling the callback). Either way `on_withdrawn` tells the UI first, so it can say so.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import mcp.types as mt
from mcp.client.session import ClientRequestContext, IncomingMessage, MessageHandlerFnT
from pydantic import FileUrl

from ..config import ServerConfig
from ..errors import SynapseError
from ..server_config import DEFAULT_LOG_LEVEL
from .deadline import Deadlines
from .elicitation import ElicitationAnswer, ElicitationError, ElicitationForm, UrlElicitation, parse_form
from .logs import LogEntry, LogLevel, LogRing, check_level, level_at_least
from .sampling import SamplingReply, SamplingRequest, sampling_request, sdk_result

__all__ = [
    "ApproveSampling",
    "ClientHandlers",
    "ElicitHandler",
    "SampleHandler",
    "ServerHooks",
    "Withdrawal",
]

logger = logging.getLogger("synapse_nb.mcp")

ElicitHandler = Callable[[ElicitationForm | UrlElicitation], Awaitable[ElicitationAnswer]]
"""Show a form (fill it in: `form.answer(values)`) or a URL (`url.consent()`), or decline / cancel."""
SampleHandler = Callable[[SamplingRequest], Awaitable[SamplingReply]]
"""Run the request through a model and return its reply."""
ApproveSampling = Callable[[SamplingRequest], Awaitable[bool]]
"""Ask the user whether a server may use the model for this request (policy "ask")."""
Emit = Callable[[str, Mapping[str, Any]], None]
Withdrawal = Literal["completed", "cancelled"]
"""Why a question closed without the user: the server said the URL flow is done, or cancelled its request."""

_DENIED = -32001  # sampling refused by the user or the config: an application error, not a protocol one
_LOG_EVENT_LEVEL = "warning"
"""Server log messages at this level or above are also reported as server events (and recorded)."""


@dataclass(frozen=True, slots=True)
class ClientHandlers:
    """What the hub's owner injects to answer servers; every field is optional.

    `on_resource_updated(server, uri)` and `on_log(server, entry)` are called on the event loop and
    must not block or raise (a raising one is logged and ignored). `on_withdrawn(request, why)` is told,
    the same way, that a question still open was closed by the server (before the `elicit` call asking
    it is cancelled), so the UI can say so.
    """

    elicit: ElicitHandler | None = None
    sample: SampleHandler | None = None
    approve_sampling: ApproveSampling | None = None
    on_resource_updated: Callable[[str, str], None] | None = None
    on_log: Callable[[str, LogEntry], None] | None = None
    on_withdrawn: Callable[[ElicitationForm | UrlElicitation, Withdrawal], None] | None = None


class ServerHooks:
    """One server's client-side callbacks, policy, roots and log ring; lives as long as its connection."""

    def __init__(self, config: ServerConfig, handlers: ClientHandlers, emit: Emit, *, cwd: Path | None = None) -> None:
        self.config = config
        self.handlers = handlers
        self.log_ring = LogRing()
        self.log_level: LogLevel | None = check_level(config.log_level) if config.log_level else None
        self.asked_level: LogLevel = self.log_level or DEFAULT_LOG_LEVEL  # what a 2026-07-28 connection asked
        base = Path.cwd() if cwd is None else cwd
        self.roots: tuple[Path, ...] = _paths(config.roots or (), base)
        self.offers_roots = bool(self.roots)  # fixed per connection: the capability is declared at initialize
        self.deadlines = Deadlines()
        self.closing = False  # set by the connection once its session is ending: cancels then are not the server's
        self._completions: dict[str, asyncio.Future[None]] = {}  # elicitation id -> the URL question waiting on it
        self._completed: deque[str] = deque(maxlen=64)  # ids completed before (or without) their question
        self._emit = emit
        self._base = base

    @property
    def name(self) -> str:
        return self.config.name

    def client_kwargs(self, message_handler: MessageHandlerFnT) -> dict[str, Any]:
        """Keyword arguments for `mcp.Client(...)`: the callbacks (which declare the capabilities)."""

        async def on_message(message: IncomingMessage) -> None:
            self._notice(message)
            await message_handler(message)

        self.closing = False  # a new session
        self.asked_level = self.log_level or DEFAULT_LOG_LEVEL  # a 2026-07-28 server logs only what is asked

        return {
            "elicitation_callback": self._elicit,
            "sampling_callback": self._sample,
            "list_roots_callback": self._list_roots if self.offers_roots else None,
            "logging_callback": self._log,
            "log_level": self.asked_level,  # read on 2026-07-28 connections only (the SDK's Client.log_level)
            "message_handler": on_message,
        }

    def set_roots(self, paths: Sequence[str | Path]) -> tuple[Path, ...]:
        """Replace the roots (relative paths are taken from the working directory); returns them resolved.

        A connection that did not offer roots cannot start now: the hub reconnects the server for that."""
        self.roots = _paths(paths, self._base)
        return self.roots

    def resolve(self, paths: Sequence[str | Path]) -> tuple[Path, ...]:
        """`paths` as roots: resolved from the working directory, duplicates dropped."""
        return _paths(paths, self._base)

    # --- elicitation -----------------------------------------------------------------------------

    async def _elicit(self, context: ClientRequestContext, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        request: ElicitationForm | UrlElicitation
        if isinstance(params, mt.ElicitRequestURLParams):
            request = UrlElicitation(self.name, params.message, params.url, params.elicitation_id)
        else:
            request = parse_form(self.name, params.message, params.requested_schema)
        mode = "url" if isinstance(request, UrlElicitation) else "form"
        try:
            answer, by_server = await self._answer(request)
        except asyncio.CancelledError:
            if not self.closing:  # the SDK cancels a request the server cancelled (notifications/cancelled)
                self._emit("elicitation", {"mode": mode, "message": request.message[:500], "action": "cancel",
                                           "by": "server"})
            raise
        detail = {"mode": mode, "message": request.message[:500], "action": answer.action}
        self._emit("elicitation", {**detail, "by": "server"} if by_server else detail)
        return mt.ElicitResult(action=answer.action, content=dict(answer.content) if answer.content else None)

    async def _answer(self, request: ElicitationForm | UrlElicitation) -> tuple[ElicitationAnswer, bool]:
        """The user's answer, and whether the server closed the question itself (completed a URL flow)."""
        handler = self.handlers.elicit
        if handler is None or self.config.elicitation == "decline":
            return ElicitationAnswer.decline(), False
        if isinstance(request, UrlElicitation) and request.elicitation_id in self._completed:
            return request.consent(), True  # the server said it is done before we got to ask
        try:
            with self.deadlines.asking():
                answer = await self._ask(handler, request)
            if answer is None:  # only a URL flow completes
                return (request.consent() if isinstance(request, UrlElicitation) else ElicitationAnswer.cancel()), True
            if answer.action == "accept" and isinstance(request, ElicitationForm):
                answer = request.answer(answer.content)  # defaults (SEP-1034) and types, whatever the UI sent
            elif answer.action == "accept" and isinstance(request, UrlElicitation):
                answer = request.consent()
        except ElicitationError as exc:
            logger.warning("MCP server %r: elicitation answer does not fit the form (%s); cancelled", self.name, exc)
            return ElicitationAnswer.cancel(), False
        except Exception:  # a UI failure must answer the server, not break the session
            logger.exception("MCP server %r: the elicitation handler failed; cancelled", self.name)
            return ElicitationAnswer.cancel(), False
        return answer, False

    async def _ask(self, handler: ElicitHandler, request: ElicitationForm | UrlElicitation) -> ElicitationAnswer | None:
        """Run the handler in a task of its own, so that the server can close the question under it:
        None when the server completed the URL flow first (`notifications/elicitation/complete`); when
        the server cancels the request (the SDK then cancels this callback), the UI is told why before
        its wait is cancelled."""
        loop = asyncio.get_running_loop()
        asking: asyncio.Future[ElicitationAnswer] = asyncio.ensure_future(handler(request))
        completed: asyncio.Future[None] | None = None
        key = request.elicitation_id if isinstance(request, UrlElicitation) else None
        if key is not None:
            completed = self._completions[key] = loop.create_future()
        waiting: set[asyncio.Future[Any]] = {asking} if completed is None else {asking, completed}
        try:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if not asking.done():
                if not self.closing:
                    self._withdrawn(request, "cancelled")
                asking.cancel()
            raise
        finally:
            if key is not None:
                self._completions.pop(key, None)
        if asking.done():
            return asking.result()
        self._withdrawn(request, "completed")
        asking.cancel()
        await asyncio.wait({asking})  # its UI closes before the call goes on
        return None

    def _withdrawn(self, request: ElicitationForm | UrlElicitation, why: Withdrawal) -> None:
        if self.handlers.on_withdrawn is not None:
            try:
                self.handlers.on_withdrawn(request, why)
            except Exception:  # same contract as the other notification listeners
                logger.exception("MCP server %r: the on_withdrawn handler failed", self.name)

    async def url_required(self, required: list[mt.ElicitRequestURLParams]) -> bool:
        """A call failed with "URL elicitation required": show each URL; True when the user completed every one."""
        for params in required:
            request = UrlElicitation(self.name, params.message, params.url, params.elicitation_id)
            answer, by_server = await self._answer(request)
            self._emit("elicitation", {"mode": "url", "message": request.message[:500], "action": answer.action,
                                       "required": True, **({"by": "server"} if by_server else {})})
            if answer.action != "accept":
                return False
        return True

    # --- sampling --------------------------------------------------------------------------------

    async def _sample(
        self, context: ClientRequestContext, params: mt.CreateMessageRequestParams
    ) -> mt.CreateMessageResult | mt.ErrorData:
        request = sampling_request(self.name, params)
        problem = await self._sampling_refusal(request)
        if problem is None:
            assert self.handlers.sample is not None
            try:
                reply = await self.handlers.sample(request)
            except SynapseError as exc:
                problem = f"the model failed: {exc}"
            except Exception as exc:  # the server gets an error answer; the traceback goes to the log
                logger.exception("MCP server %r: the sampling handler failed", self.name)
                problem = f"the model failed: {type(exc).__name__}"
            else:
                self._emit("sampling", {"model": reply.model, "max_tokens": request.max_tokens,
                                        "stop_reason": reply.stop_reason})
                return sdk_result(reply)
        self._emit("sampling", {"refused": problem})
        return mt.ErrorData(code=_DENIED, message=problem)

    async def _sampling_refusal(self, request: SamplingRequest) -> str | None:
        policy = self.config.sampling or "ask"
        if policy == "deny":
            return f'sampling is denied for MCP server {self.name!r} by its config ("sampling": "deny")'
        if self.handlers.sample is None:
            return "this client has no model to answer sampling requests"
        if policy == "auto":
            return None
        approve = self.handlers.approve_sampling
        if approve is None:
            return 'nobody can approve sampling here; set "sampling": "auto" for this server to allow it'
        try:
            with self.deadlines.asking():
                approved = await approve(request)
        except Exception:  # same boundary as the sampling handler itself
            logger.exception("MCP server %r: the sampling approval handler failed", self.name)
            approved = False
        return None if approved else "the user declined the sampling request"

    # --- roots, logs, notifications --------------------------------------------------------------

    async def _list_roots(self, context: ClientRequestContext) -> mt.ListRootsResult:
        return mt.ListRootsResult(roots=[mt.Root(uri=FileUrl(p.as_uri()), name=p.name or str(p)) for p in self.roots])

    async def _log(self, params: mt.LoggingMessageNotificationParams) -> None:
        entry = LogEntry(level=params.level, data=params.data, logger=params.logger)
        self.log_ring.add(entry)
        if level_at_least(entry.level, _LOG_EVENT_LEVEL):
            self._emit("log", {"level": entry.level, "logger": entry.logger, "message": entry.text[:1000]})
        if self.handlers.on_log is not None:
            _safely(self.handlers.on_log, self.name, entry)

    def _notice(self, message: IncomingMessage) -> None:
        if isinstance(message, mt.ResourceUpdatedNotification):
            if self.handlers.on_resource_updated is not None:
                _safely(self.handlers.on_resource_updated, self.name, message.params.uri)
        elif isinstance(message, mt.ElicitCompleteNotification):
            key = message.params.elicitation_id
            self._emit("elicitation_complete", {"elicitation_id": key})
            waiting = self._completions.get(key)
            if waiting is None:
                self._completed.append(key)
            elif not waiting.done():
                waiting.set_result(None)


def _paths(paths: Sequence[str | Path], base: Path) -> tuple[Path, ...]:
    resolved = [(base / Path(p).expanduser()).resolve() for p in paths]
    return tuple(dict.fromkeys(resolved))


def _safely(fn: Callable[[str, Any], None], server: str, value: Any) -> None:
    try:
        fn(server, value)
    except Exception:  # a listener must not break the session (like protocols.EventSink)
        logger.exception("a client handler failed on a notification from MCP server %r", server)
