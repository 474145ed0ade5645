"""A real local HTTP server speaking the OpenAI Chat Completions and Anthropic Messages wire formats.

Tests queue scripted replies; the server answers each request with the next one, rendered in the wire
format of the path that was called, streamed as SSE with one chunked write (and flush) per event, and
it records every request so tests can assert what a client sent.

    with LlmServer() as server:
        server.queue(text("Hello"), tool_calls(call("demo__query", {"sql": "select 1"})), error(429, retry_after=0.2))
        provider = OpenAIProvider("gpt-test", api_key="k", base_url=server.openai_base_url)
        ...
        server.requests[0].body["tools"]

Replies (llm_replies.py, re-exported here) are wire-neutral: `text`, `tool_calls`, `error`,
`stream_error`, `raw_sse`, `raw_body`; modifiers
`.gated(gate)` (hold the stream after the first content event until the test opens the gate),
`.cut()` (drop the connection half way), `.held(gate)` (hold before the status line: slow first byte),
`.lingering(gate)` (hold the body's end after the last event: a server slow to close) and
`.cached(read, write)` (report prompt tokens read from / written to the provider's cache).
With `LlmServer(prompt_cache=PromptCache())` (llm_cache.py) the server counts each answer's prompt
tokens itself and reports cached tokens as the providers do: the prefixes it has seen (OpenAI), or
those ending at `cache_control` breakpoints (Anthropic).
When nothing is queued, `server.responder` (a function of the request) answers, else a 400 that says so.
`LlmServer(latency=0.2)` (or `--latency 0.2`) waits that long before answering each model request, like
a model's time to first byte (the replay benchmark records against it).

Standalone, for kernel end-to-end tests:
    python tests/support/llm_server.py --port 0 --script replies.json [--log requests.jsonl] [--cycle]
prints `LLM_SERVER_URL=http://127.0.0.1:PORT` once listening; the script is a JSON list of replies
such as {"text": "hi"}, {"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}], "text": ""},
{"error": 429, "retry_after": 0.2}.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import itertools
import json
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

if not __package__:  # run by path, as a server: its imports name the tests package of this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support.llm_cache import PromptCache
from tests.support.llm_replies import (
    Call,
    Frame,
    Gate,
    Reply,
    Wire,
    call,
    error,
    error_body,
    raw_body,
    raw_sse,
    render,
    reply_from_dict,
    stream_error,
    text,
    tool_calls,
)

__all__ = [
    "Call",
    "Gate",
    "LlmServer",
    "PromptCache",
    "RecordedRequest",
    "Reply",
    "call",
    "error",
    "raw_body",
    "raw_sse",
    "reply_from_dict",
    "stream_error",
    "text",
    "tool_calls",
]

# ---- the server ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the server received it; `at` is time.monotonic() on arrival."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    wire: Wire | None
    at: float
    client: str = ""  # "host:port" of the connection it came on (a reused connection keeps its port)
    raw: bytes = b""  # the body exactly as sent (byte-level checks, e.g. a stable prompt prefix)


def _wire_of(path: str) -> Wire | None:
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/v1/messages"):
        return "anthropic"
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HttpServer
    timeout = 30  # idle keep-alive connections end instead of holding a thread

    def setup(self) -> None:
        super().setup()
        # Each SSE event is its own small write; without this, Nagle + delayed ACK add ~40 ms per response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        wire = _wire_of(self.path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        host, port = self.client_address[:2]
        request = RecordedRequest(
            self.command, self.path, headers, body, wire, time.monotonic(), f"{host}:{port}", raw
        )
        owner = self.server.owner
        reply = owner._take(request)
        if wire is not None and owner.latency > 0:
            time.sleep(owner.latency)  # the simulated model's time to first byte, not synchronisation
        if wire is None:
            self._send_json(404, {"error": {"message": f"llm_server: no endpoint {self.path}", "type": "not_found"}})
            return
        if reply is None:
            message = f"llm_server: no reply queued for {self.command} {self.path} (request #{len(owner.requests)})"
            self._send_json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})
            return
        if reply.hold is not None:
            reply.hold.hold()
        model = str(body.get("model", "test-model")) if isinstance(body, dict) else "test-model"
        if owner.prompt_cache is not None and reply.kind == "answer" and isinstance(body, dict):
            total, read, write = owner.prompt_cache.account(wire, body)
            reply = dataclasses.replace(reply, usage=(total, reply.usage[1]), cache=(read, write))
        if reply.kind == "error":
            self._send_bytes(reply.status, error_body(reply, wire), "application/json", dict(reply.headers))
        elif reply.kind == "raw_body":
            self._send_bytes(reply.status, reply.body, reply.content_type, {})
        elif reply.kind == "raw_sse":
            self._stream(reply, [(f.encode(), True) for f in reply.frames])
        else:
            self._stream(reply, render(reply, wire, model))

    def _send_json(self, status: int, obj: Any) -> None:
        self._send_bytes(status, json.dumps(obj).encode(), "application/json", {})

    def _send_bytes(self, status: int, data: bytes, content_type: str, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _stream(self, reply: Reply, frames: list[Frame]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        first_content = next((n + 1 for n, (_, content) in enumerate(frames) if content), 1)
        gate_after = reply.gate_after if reply.gate_after is not None else first_content
        cut_after = reply.cut_after if reply.cut_after is not None else first_content
        for n, (data, content) in enumerate(frames):
            if reply.pace and content and n > first_content - 1:
                time.sleep(reply.pace)
            if reply.gate is not None and n == gate_after:
                reply.gate.hold()
            if reply.cut_stream and n == cut_after:
                # Half a chunk, then the connection drops: the client sees a body that ends mid-chunk.
                self.wfile.write(f"{len(data):x}\r\n".encode() + data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
            if n == first_content - 1:
                self.server.owner.first_content_at = time.perf_counter()  # type: ignore[attr-defined]
        self.server.owner.last_event_at = time.perf_counter()  # type: ignore[attr-defined]
        if reply.linger is not None:
            reply.linger.hold()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: LlmServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout tests) makes writes fail; that is expected, not a server bug.
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class LlmServer:
    """The server: start with `with LlmServer() as server:` (or start()/stop()); thread-safe queue and log."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, *, latency: float = 0.0,
        prompt_cache: PromptCache | None = None,
    ) -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("llm_server only listens on the loopback address")
        self._host = host
        self._port = port
        self.latency = latency  # seconds before each model request is answered
        self.prompt_cache = prompt_cache
        self._lock = threading.Condition()
        self._queue: collections.deque[Reply] = collections.deque()
        self._requests: list[RecordedRequest] = []
        self._gates: list[Gate] = []
        self._httpd: _HttpServer | None = None
        self._thread: threading.Thread | None = None
        self.responder: Callable[[RecordedRequest], Reply | None] | None = None
        self.on_request: Callable[[RecordedRequest], None] | None = None
        self.last_event_at: float | None = None  # perf_counter() when the last SSE event of a stream was sent
        self.first_content_at: float | None = None  # perf_counter() when a stream's first content event was sent

    # lifecycle
    def start(self) -> LlmServer:
        httpd = _HttpServer((self._host, self._port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), name="llm_server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._lock:
            for gate in self._gates:
                gate.open()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> LlmServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # addresses
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("llm_server is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """What OPENAI_BASE_URL (or DEEPSEEK_/OLLAMA_BASE_URL) should be: requests go to {this}/chat/completions."""
        return f"{self.base_url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """What ANTHROPIC_BASE_URL should be: requests go to {this}/v1/messages."""
        return self.base_url

    # script and log
    def queue(self, *replies: Reply) -> None:
        with self._lock:
            for r in replies:
                self._queue.append(r)
                self._gates += [g for g in (r.gate, r.hold, r.linger) if g is not None]

    @property
    def pending(self) -> int:
        """Replies queued and not yet served."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[RecordedRequest]:
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._requests) >= n, timeout):
                raise TimeoutError(f"llm_server got {len(self._requests)} requests, expected {n}")
            return list(self._requests)

    def clear(self) -> None:
        with self._lock:
            self._queue.clear()
            self._requests.clear()

    def _take(self, request: RecordedRequest) -> Reply | None:
        with self._lock:
            self._requests.append(request)
            self._lock.notify_all()
            reply = self._queue.popleft() if self._queue and request.wire is not None else None
        if self.on_request is not None:
            self.on_request(request)
        if reply is None and request.wire is not None and self.responder is not None:
            reply = self.responder(request)
            if reply is not None:
                with self._lock:
                    self._gates += [g for g in (reply.gate, reply.hold, reply.linger) if g is not None]
        return reply


def _iter_script(path: Path) -> Iterator[Reply]:
    items = json.loads(path.read_text())
    if not isinstance(items, list):
        raise SystemExit(f"{path}: the script must be a JSON list of replies")
    for item in items:
        yield reply_from_dict(item)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Local OpenAI/Anthropic-compatible LLM server for tests.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", type=Path, help="JSON list of replies, served in order")
    parser.add_argument("--cycle", action="store_true", help="start the script again when it runs out")
    parser.add_argument("--log", type=Path, help="append every request as one JSON line to this file")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds to wait before answering each request")
    parser.add_argument("--prompt-cache", action="store_true", help="count prompt tokens and report cached ones")
    args = parser.parse_args(argv)
    script = list(_iter_script(args.script)) if args.script else []
    server = LlmServer(port=args.port, latency=args.latency, prompt_cache=PromptCache() if args.prompt_cache else None)
    if args.cycle and script:
        cycle = itertools.cycle(script)
        server.responder = lambda _request: next(cycle)
    else:
        server.queue(*script)
    if args.log:
        log_path: Path = args.log

        def log(request: RecordedRequest) -> None:
            with log_path.open("a") as f:
                row = {**dataclasses.asdict(request), "headers": dict(request.headers)}
                row.pop("raw", None)  # bytes; `body` holds the same request as JSON
                f.write(json.dumps(row) + "\n")

        server.on_request = log
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with server:
        print(f"LLM_SERVER_URL={server.base_url}", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
