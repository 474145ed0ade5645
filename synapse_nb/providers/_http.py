"""The HTTP plumbing both adapters share: one POST-and-stream SSE call, retries, error mapping.

Server-sent events are decoded by httpx-sse, over a body that bounds each event: a stream whose event
(or line) grows past `MAX_EVENT_BYTES` without ending is a StreamError, not unbounded memory.

Errors from httpx and from HTTP statuses are mapped here, once, into the ProviderError tree:

    401 / 403                       -> AuthenticationError
    429                             -> retried (honouring retry-after), then RateLimitError
    5xx, 408, 529 / overloaded      -> retried with backoff, then ProviderUnavailableError
    other 4xx                       -> ProviderError (the provider's own message)
    connect / read / write timeout  -> ProviderTimeout
    refused connection              -> ProviderUnavailableError
    stream breaks off, bad SSE/JSON -> StreamError
    an event past MAX_EVENT_BYTES   -> StreamError

Retries happen only before the first chunk reached the caller. Every message is one line, carries the
provider and status, and has secrets masked (synapse_nb.masking: the API key, and every other rule).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import email.utils
import json
import logging
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar, cast

import httpx
from httpx_sse import EventSource, ServerSentEvent

from ..errors import (
    AuthenticationError,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailableError,
    RateLimitError,
    StreamError,
)
from ..masking import SecretMask
from ..protocols import ProviderChunk
from ..types import Message, ToolSpec
from ._tls import tls_context

__all__ = [
    "DEFAULT_TIMEOUT",
    "HttpStreamer",
    "MAX_EVENT_BYTES",
    "RetryPolicy",
    "ServerSentEvent",
    "SseProvider",
    "make_timeout",
    "parse_retry_after",
]

logger = logging.getLogger("synapse_nb.providers")

T = TypeVar("T")
_P = TypeVar("_P", bound="SseProvider")

DEFAULT_TIMEOUT = httpx.Timeout(connect=10.0, read=120.0, write=30.0, pool=10.0)
MAX_ERROR_BODY = 64 * 1024  # bytes of an error body we read; enough for any provider's JSON error
MAX_DETAIL = 300  # characters of provider text quoted in a message
DRAIN_TIMEOUT = 1.0  # seconds we read the tail of a finished stream before dropping the connection
MAX_EVENT_BYTES = 8 * 1024 * 1024
"""The largest server-sent event we take (a whole tool call in one event fits many times over)."""
MAX_SCRUBBED = 64 * 1024  # characters of a message we mask before cutting it to MAX_DETAIL
_BOM = b"\xef\xbb\xbf"
_EVENT_ENDS = (b"\n\n", b"\r\n\r\n", b"\r\r")


def make_timeout(timeout: httpx.Timeout | float | None) -> httpx.Timeout:
    """`None` -> the defaults (connect 10 s, read 120 s); a number -> the read timeout, connect stays 10 s."""
    if timeout is None:
        return DEFAULT_TIMEOUT
    if isinstance(timeout, httpx.Timeout):
        return timeout
    return httpx.Timeout(connect=min(10.0, float(timeout)), read=float(timeout), write=30.0, pool=10.0)


# ---- SSE ------------------------------------------------------------------------------------------------


class _EventBody:
    """What httpx-sse's EventSource reads of a response (`headers`, `aiter_text()`), over the response's body,
    failing once one event grows past `limit` bytes without its blank line.

    Counted on the decoded bytes (after any content-encoding; the request asks for none, so one small
    chunk cannot expand into a large one). A leading BOM is dropped, and the end of the body ends a
    last event whose blank line never came. The text is decoded here, straight from the response's bytes:
    a second httpx.Response around the bounded body would add three generator layers to every event.
    """

    def __init__(self, response: httpx.Response, limit: int, too_large: Callable[[], Exception]) -> None:
        content_type = "text/event-stream"
        if response.charset_encoding:
            content_type += f"; charset={response.charset_encoding}"
        self.headers = httpx.Headers({"content-type": content_type})
        self._response = response
        self._limit = limit
        self._too_large = too_large

    async def aiter_text(self) -> AsyncIterator[str]:
        decoder = codecs.getincrementaldecoder(self._response.encoding or "utf-8")(errors="replace")
        pending = 0  # bytes since the last blank line (the end of the last event)
        previous = b""
        async for chunk in self._response.aiter_bytes():
            if not previous:
                chunk = chunk.removeprefix(_BOM)
                if not chunk:
                    continue
            # A blank line is two line ends in a row: LF LF, CR CR or LF CR (CRLF CRLF holds LF CR).
            # Most chunks end with one (servers write whole events): then nothing is pending.
            if chunk.endswith(_EVENT_ENDS):
                pending = 0
            elif (end := max(chunk.rfind(b"\n\n"), chunk.rfind(b"\r\r"), chunk.rfind(b"\n\r"))) >= 0:
                pending = len(chunk) - end - 2
            elif previous + chunk[:1] in (b"\n\n", b"\r\r", b"\n\r"):
                pending = len(chunk) - 1
            else:
                pending += len(chunk)
            if pending > self._limit:
                raise self._too_large()
            previous = chunk[-1:]
            text = decoder.decode(chunk)
            if text:
                yield text
        yield decoder.decode(b"", final=True) + "\n\n"


def _events(response: httpx.Response, limit: int, too_large: Callable[[], Exception]) -> EventSource:
    """httpx-sse's EventSource over `response`'s body, each event bounded to `limit` bytes."""
    return EventSource(cast(httpx.Response, _EventBody(response, limit, too_large)))


# ---- retries ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounded retries for 429 and 5xx/overload: exponential backoff with jitter, or the server's retry-after.

    A retry-after longer than `max_retry_after` is not waited for: the error is raised at once.
    """

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 30.0

    def backoff(self, retry: int) -> float:
        """The wait before retry number `retry` (0-based) when the server gave no retry-after."""
        ceiling = min(self.max_delay, self.base_delay * 2**retry)
        return float(ceiling / 2 + random.uniform(0, ceiling / 2))


class _Retryable(Exception):
    """Internal: a failure worth retrying; `HttpStreamer.retrying` turns it into `kind` when it gives up."""

    def __init__(
        self, kind: type[RateLimitError | ProviderUnavailableError], message: str, *, provider: str,
        status: int | None, retry_after: float | None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.provider = provider
        self.status = status
        self.retry_after = retry_after

    def give_up(self, note: str) -> ProviderError:
        message = f"{self.message} ({note})"
        if self.kind is RateLimitError:
            return RateLimitError(message, provider=self.provider, status=self.status, retry_after=self.retry_after)
        return ProviderUnavailableError(message, provider=self.provider, status=self.status)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms` or `retry-after` (seconds or an HTTP date); None if absent."""
    ms = headers.get("retry-after-ms")
    if ms:
        with contextlib.suppress(ValueError):
            return max(0.0, float(ms) / 1000)
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    with contextlib.suppress(TypeError, ValueError):
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    return None


# ---- the streamer ----------------------------------------------------------------------------------------


class HttpStreamer:
    """One provider's HTTP side: an AsyncClient, POST-and-stream SSE, retries and error mapping.

    `secrets` (the API key) are masked in every message, as are all of synapse_nb.masking's rules;
    `key_variable` is named when a key is rejected; `max_event_bytes` bounds one server-sent event.
    """

    def __init__(
        self,
        *,
        provider: str,
        base_url: str,
        secrets: Sequence[str] = (),
        key_variable: str | None = None,
        timeout: httpx.Timeout | float | None = None,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        max_event_bytes: int = MAX_EVENT_BYTES,
    ) -> None:
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.key_variable = key_variable
        self.retry = retry or RetryPolicy()
        self.timeout = make_timeout(timeout)
        self.max_event_bytes = max_event_bytes
        self._mask = SecretMask(secrets)
        # The TLS context is shared by every provider (and none is built for plain http): see _tls.py.
        verify = tls_context(self.base_url) if transport is None else True
        self._client = httpx.AsyncClient(timeout=self.timeout, transport=transport, verify=verify)
        self._tails: set[asyncio.Task[None]] = set()  # ended responses read to their end in the background

    async def aclose(self) -> None:
        await self._settle_tails()
        await self._client.aclose()

    async def _settle_tails(self) -> None:
        """Wait until the responses still being read to their end are done (each within DRAIN_TIMEOUT), so their
        connections are back in the pool; tasks of another (closed) event loop are let go."""
        loop = asyncio.get_running_loop()
        self._tails.difference_update([task for task in self._tails if task.done() or task.get_loop() is not loop])
        if self._tails:
            await asyncio.wait(set(self._tails))

    def _finish_later(self, response: httpx.Response, rest: AsyncGenerator[ServerSentEvent, None]) -> None:
        """Read the rest of an ended response and close it in a task: the caller has its last event now, and the
        tail (the server closing the stream, ~0.7 ms on 127.0.0.1) is read while it gets on with the turn."""
        task = asyncio.get_running_loop().create_task(_finish(response, rest))
        self._tails.add(task)
        task.add_done_callback(self._tails.discard)

    def scrub(self, text: str) -> str:
        """`text` as one line, without secrets, cut to a readable length."""
        text = " ".join(self._mask(text[:MAX_SCRUBBED]).split())
        return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 3] + "..."

    # errors

    def stream_error(self, message: str, status: int | None = None) -> StreamError:
        return StreamError(f"{self.provider}: {self.scrub(message)}", provider=self.provider, status=status)

    def _event_too_large(self) -> StreamError:
        return self.stream_error(
            f"the stream sent an event (or a line) longer than {self.max_event_bytes:,} bytes without ending it; "
            "stopped reading: this is not a valid event stream"
        )

    def parse_json(self, data: str) -> Any:
        """One SSE data payload as JSON, or StreamError."""
        try:
            return json.loads(data)
        except ValueError as exc:
            raise self.stream_error(f"the stream sent data that is not JSON: {data!r}") from exc

    def parse_arguments(self, raw: str, tool: str) -> dict[str, Any]:
        """A tool call's streamed arguments as a dict ("" means no arguments), or StreamError."""
        if not raw.strip():
            return {}
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise self.stream_error(f"the model sent arguments for tool {tool!r} that are not JSON: {raw!r}") from exc
        if not isinstance(value, dict):
            raise self.stream_error(f"the model sent arguments for tool {tool!r} that are not a JSON object: {raw!r}")
        return value

    def api_error(
        self, *, status: int | None, error_type: str | None, message: str, retry_after: float | None = None
    ) -> ProviderError | _Retryable:
        """Classify an error the provider reported (HTTP status and/or its error `type`)."""
        p, detail = self.provider, self.scrub(message) or "no details"
        tag = f"HTTP {status}" if status is not None else "in the stream"
        if error_type:
            tag += f" {error_type}"
        if status in (401, 403) or error_type in ("authentication_error", "permission_error", "invalid_api_key"):
            fix = f"; check {self.key_variable}" if self.key_variable else ""
            return AuthenticationError(f"{p} rejected the request ({tag}): {detail}{fix}", provider=p, status=status)
        if error_type == "insufficient_quota":
            return RateLimitError(f"{p} quota exhausted ({tag}): {detail}", provider=p, status=status)
        if status == 429 or error_type in ("rate_limit_error", "rate_limit_exceeded"):
            return _Retryable(
                RateLimitError, f"{p} is rate-limiting requests ({tag}): {detail}", provider=p,
                status=status if status is not None else 429, retry_after=retry_after,
            )
        if (
            status in (408, 529)
            or (status is not None and status >= 500)
            or error_type in ("overloaded_error", "api_error", "server_error")
        ):
            overloaded = status == 529 or error_type == "overloaded_error"
            return _Retryable(
                ProviderUnavailableError, f"{p} is {'overloaded' if overloaded else 'unavailable'} ({tag}): {detail}",
                provider=p, status=status if status is not None else (529 if overloaded else None),
                retry_after=retry_after,
            )
        if status is None:
            return StreamError(f"{p} reported an error ({tag}): {detail}", provider=p)
        hint = "; check the model name and the base URL" if status == 404 else ""
        return ProviderError(f"{p} refused the request ({tag}): {detail}{hint}", provider=p, status=status)

    def raise_api_error(self, *, status: int | None, error_type: str | None, message: str) -> NoReturn:
        raise self.api_error(status=status, error_type=error_type, message=message)

    def _status_error(self, status: int, body: bytes, headers: Mapping[str, str]) -> ProviderError | _Retryable:
        text = body.decode("utf-8", "replace")
        error_type: str | None = None
        message = text
        with contextlib.suppress(ValueError):
            obj = json.loads(text)
            err = obj.get("error") if isinstance(obj, dict) else None
            if isinstance(err, dict):
                error_type = err.get("type") or err.get("code")
                error_type = str(error_type) if error_type else None
                message = str(err.get("message") or text)
            elif isinstance(err, str):
                message = err
        retry_after = parse_retry_after(headers)
        return self.api_error(status=status, error_type=error_type, message=message, retry_after=retry_after)

    @contextlib.contextmanager
    def map_errors(self) -> Iterator[None]:
        """The one boundary where httpx exceptions become ProviderErrors (`raise ... from exc`)."""
        p, url = self.provider, self.base_url
        try:
            yield
        except httpx.TimeoutException as exc:
            which, limit = {
                httpx.ConnectTimeout: ("connect", self.timeout.connect),
                httpx.WriteTimeout: ("write", self.timeout.write),
                httpx.PoolTimeout: ("pool", self.timeout.pool),
            }.get(type(exc), ("read", self.timeout.read))
            raise ProviderTimeout(
                f"{p} did not answer in time ({which} timeout of {limit:g} s at {url}); try again or raise the timeout",
                provider=p,
            ) from exc
        except httpx.ConnectError as exc:
            raise ProviderUnavailableError(
                f"cannot reach {p} at {url}: {self.scrub(str(exc)) or type(exc).__name__}; "
                "is the server running and the base URL right?",
                provider=p,
            ) from exc
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.DecodingError) as exc:
            raise StreamError(
                f"{p}: the response stream broke off: {self.scrub(str(exc)) or type(exc).__name__}", provider=p
            ) from exc
        except httpx.HTTPError as exc:
            detail = self.scrub(str(exc)) or type(exc).__name__
            raise ProviderError(f"{p}: HTTP request failed: {detail}", provider=p) from exc

    # requests

    async def post_sse(
        self, path: str, body: Mapping[str, Any], headers: Mapping[str, str],
        last: Callable[[ServerSentEvent], bool] = lambda event: False,
    ) -> AsyncGenerator[ServerSentEvent, None]:
        """POST `body` as JSON to base_url + path and yield the SSE events of the response (one attempt).

        Events without data (keep-alives) are skipped. After the event `last` recognises, the generator ends
        at once and a task reads the rest of the body (bounded) and closes it: a response read to its end lets
        httpx reuse the connection, and the next request waits for that (see `_settle_tails`).
        """
        await self._settle_tails()
        # Uncompressed: a compressed chunk could expand past the event bound before it is counted.
        headers = {"accept": "text/event-stream", "accept-encoding": "identity", **headers}
        with self.map_errors():
            request = self._client.build_request("POST", self.base_url + path, json=body, headers=headers)
            response = await self._client.send(request, stream=True)
            events: AsyncGenerator[ServerSentEvent, None] | None = None
            handed_over = False
            try:
                if response.status_code >= 300:
                    raise self._status_error(response.status_code, await _read_some(response), response.headers)
                content_type = response.headers.get("content-type", "")
                if content_type and "event-stream" not in content_type:
                    raw = await _read_some(response)
                    with contextlib.suppress(ValueError):
                        obj = json.loads(raw)
                        if isinstance(obj, dict) and "error" in obj:
                            raise self._status_error(response.status_code, raw, response.headers)
                    snippet = raw.decode("utf-8", "replace")
                    raise self.stream_error(
                        f"expected an event stream, got {content_type}: {snippet!r}", response.status_code
                    )
                events = _events(response, self.max_event_bytes, self._event_too_large).aiter_sse()
                async for event in events:
                    if not event.data:
                        continue
                    yield event
                    if last(event):
                        self._finish_later(response, events)
                        handed_over = True  # the task owns them now
                        return
            finally:
                if not handed_over:
                    if events is not None:
                        await events.aclose()
                    await response.aclose()

    async def retrying(self, attempt: Callable[[], AsyncGenerator[T, None]]) -> AsyncGenerator[T, None]:
        """Run `attempt()` and yield its items; on a retryable failure before the first item, wait and rerun."""
        retries = 0
        while True:
            started = False
            try:
                async with contextlib.aclosing(attempt()) as items:
                    async for item in items:
                        started = True
                        yield item
                return
            except _Retryable as failure:
                if started:
                    raise failure.give_up("the stream had already started, so it was not retried") from failure
                wait = failure.retry_after
                if wait is not None and wait > self.retry.max_retry_after:
                    raise failure.give_up(
                        f"retry-after {wait:g} s is longer than the {self.retry.max_retry_after:g} s we wait"
                    ) from failure
                if retries >= self.retry.max_retries:
                    raise failure.give_up(f"still failing after {retries} retries") from failure
                if wait is None:
                    wait = self.retry.backoff(retries)
                retries += 1
                logger.info(
                    "%s: %s; retry %d of %d in %.2f s", self.provider, failure.message, retries,
                    self.retry.max_retries, wait,
                )
                await asyncio.sleep(wait)


async def _finish(response: httpx.Response, rest: AsyncGenerator[ServerSentEvent, None]) -> None:
    """Read the tail of an ended response (at most DRAIN_TIMEOUT), then close it: read to its end, its connection
    goes back to the pool. A stream's end is nobody's news: a tail that fails only costs the connection."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(DRAIN_TIMEOUT):
            async for _ in rest:
                pass
    with contextlib.suppress(Exception):
        await rest.aclose()
    with contextlib.suppress(Exception):
        await response.aclose()


async def _read_some(response: httpx.Response) -> bytes:
    """At most MAX_ERROR_BODY bytes of a response body."""
    data = b""
    async for piece in response.aiter_bytes():
        data += piece
        if len(data) >= MAX_ERROR_BODY:
            break
    return data[:MAX_ERROR_BODY]


class SseProvider:
    """What the SSE adapters share: the HttpStreamer, closing, and `stream` as retried attempts.

    A subclass builds the request (`request_body`) and turns one attempt's SSE events into chunks
    (`_attempt`); retrying, TTFT's start and closing live here once.
    """

    name: str
    model: str
    _http: HttpStreamer

    async def __aenter__(self: _P) -> _P:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    def request_body(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (), *, system: str | None = None
    ) -> dict[str, Any]:
        raise NotImplementedError

    def _attempt(self, body: Mapping[str, Any], started: float) -> AsyncGenerator[ProviderChunk, None]:
        raise NotImplementedError

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (), *, system: str | None = None
    ) -> AsyncGenerator[ProviderChunk, None]:
        """Yield text and tool-call pieces as they arrive, then one Completion (TTFT counted from this call)."""
        body = self.request_body(messages, tools, system=system)
        started = time.perf_counter()
        async with contextlib.aclosing(self._http.retrying(lambda: self._attempt(body, started))) as chunks:
            async for chunk in chunks:
                yield chunk

