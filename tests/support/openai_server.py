"""A fake OpenAI-protocol HTTP server for tests: real sockets, real SSE, scripted faults.

Usage::

    with FakeOpenAIServer() as server:
        server.enqueue(Reply(text="Annual leave is 25 days [1]."))
        chat = OpenAIChat(LLMSettings(base_url=server.base_url, api_key="test"))
        "".join(chat.stream([...]))
        server.requests[0]["messages"]        # what the client sent
        server.streams[0].disconnected.wait(5)  # did the client hang up early?

Each ``POST /v1/chat/completions`` takes the next `Reply` from the queue (or
``handler(body)`` when one is given, else ``default``). Streaming requests get
``data: {...}`` chunks over chunked transfer encoding, so a dropped connection
is a protocol error for the client rather than a clean end of the body.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

__all__ = ["FakeOpenAIServer", "Fault", "Reply", "StreamRecord"]

Fault = Literal["none", "rate_limit", "server_error", "drop", "stall", "context_length", "auth"]


@dataclass(frozen=True, slots=True)
class Reply:
    """What the server answers to one chat completion request.

    Attributes:
        text: The assistant's text; streamed in pieces of ``chunk_chars``.
        chunk_chars: Characters per SSE delta.
        delay: Seconds to wait before each delta.
        fault: An error to produce instead of (or in the middle of) the answer.
        fault_after: For ``drop`` and ``stall``: deltas sent before the fault.
        retry_after: ``Retry-After`` header value for ``rate_limit`` ("" for none).
        stall_seconds: How long a ``stall`` stays silent.
        usage_chunk: Send a final usage chunk with empty ``choices`` (as OpenAI does).
        reasoning: Sent first as ``reasoning_content`` deltas, as reasoning models
            served by Ollama, vLLM or llama.cpp do.
        raw: SSE ``data:`` payloads sent byte for byte before ``text`` (invalid JSON,
            invalid UTF-8, odd shapes), each after ``delay``.
        endless: Repeat ``text`` until the client hangs up (a looping model).
    """

    text: str = "Hello from the fake model."
    chunk_chars: int = 5
    delay: float = 0.0
    fault: Fault = "none"
    fault_after: int = 1
    retry_after: str = "0"
    stall_seconds: float = 10.0
    usage_chunk: bool = False
    reasoning: str = ""
    raw: tuple[bytes, ...] = ()
    endless: bool = False


@dataclass(slots=True)
class StreamRecord:
    """What happened to one streamed response, as seen by the server."""

    chunks_sent: int = 0
    completed: threading.Event = field(default_factory=threading.Event)
    disconnected: threading.Event = field(default_factory=threading.Event)
    disconnected_at: float = 0.0


class _ClientGone(Exception):
    """The client closed the connection."""


class FakeOpenAIServer:
    """A threaded HTTP server speaking enough of the OpenAI API for chat tests."""

    def __init__(
        self,
        replies: tuple[Reply, ...] = (),
        *,
        handler: Callable[[dict[str, Any]], Reply] | None = None,
        default: Reply | None = None,
    ) -> None:
        self._queue: deque[Reply] = deque(replies)
        self._handler = handler
        self._default = default or Reply()
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.streams: list[StreamRecord] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """Return the ``/v1`` URL to give an OpenAI client."""
        if self._server is None:
            raise RuntimeError("server not started; use it as a context manager")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def disconnected(self) -> list[threading.Event]:
        """Return one event per streamed response, set when its client hung up early."""
        return [record.disconnected for record in self.streams]

    def enqueue(self, *replies: Reply) -> None:
        """Append replies for the next requests, in order."""
        with self._lock:
            self._queue.extend(replies)

    def start(self) -> FakeOpenAIServer:
        """Start serving on a free port of 127.0.0.1."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _next_reply(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if self._handler is not None:
                return self._handler(body)
            return self._queue.popleft() if self._queue else self._default

    def _new_stream(self) -> StreamRecord:
        record = StreamRecord()
        with self._lock:
            self.streams.append(record)
        return record


def _make_handler(owner: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        server_owner = owner

    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_owner: FakeOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path.endswith("/embeddings"):
            self._embeddings(body)
            return
        if not self.path.endswith("/chat/completions"):
            self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = self.server_owner._next_reply(body, headers)
        if self._fault_before_stream(reply):
            return
        if body.get("stream"):
            self._stream(reply, str(body.get("model", "fake")))
        else:
            self._json(200, _completion(reply.text, str(body.get("model", "fake"))))

    def _fault_before_stream(self, reply: Reply) -> bool:
        if reply.fault == "rate_limit":
            extra = {"Retry-After": reply.retry_after} if reply.retry_after else {}
            self._json(429, _error("Rate limit reached", "rate_limit_exceeded"), extra)
        elif reply.fault == "server_error":
            self._json(500, _error("The server had an error", "server_error"))
        elif reply.fault == "auth":
            self._json(401, _error("Incorrect API key provided", "invalid_api_key"))
        elif reply.fault == "context_length":
            message = "This model's maximum context length is 8192 tokens."
            self._json(400, _error(message, "context_length_exceeded"))
        else:
            return False
        return True

    def _stream(self, reply: Reply, model: str) -> None:
        record = self.server_owner._new_stream()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            self._stream_events(reply, model, record)
        except _ClientGone:
            record.disconnected_at = time.monotonic()
            record.disconnected.set()
        self.close_connection = True

    def _stream_events(self, reply: Reply, model: str, record: StreamRecord) -> None:
        self._event(_chunk(model, {"role": "assistant", "content": ""}))
        for i in range(0, len(reply.reasoning), max(1, reply.chunk_chars)):
            piece = reply.reasoning[i : i + reply.chunk_chars]
            self._event(_chunk(model, {"content": None, "reasoning_content": piece}))
        for payload in reply.raw:
            self._wait(reply.delay)
            self._send(b"data: " + payload + b"\n\n")
        pieces = [
            reply.text[i : i + reply.chunk_chars]
            for i in range(0, len(reply.text), max(1, reply.chunk_chars))
        ]
        while reply.endless and pieces:
            for piece in pieces:
                self._wait(reply.delay)
                self._event(_chunk(model, {"content": piece}))
                record.chunks_sent += 1
        for index, piece in enumerate(pieces):
            if index == reply.fault_after and reply.fault == "drop":
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if index == reply.fault_after and reply.fault == "stall":
                self._wait(reply.stall_seconds)
            self._wait(reply.delay)
            self._event(_chunk(model, {"content": piece}))
            record.chunks_sent += 1
        self._event(_chunk(model, {}, finish="stop"))
        if reply.usage_chunk:
            usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            self._event({**_chunk(model, {}), "choices": [], "usage": usage})
        self._send(b"data: [DONE]\n\n")
        self._write(b"0\r\n\r\n")
        record.completed.set()

    def _wait(self, seconds: float) -> None:
        """Sleep, but notice at once when the client closes the connection."""
        deadline = time.monotonic() + seconds
        while True:
            left = max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
            if readable and not self._peek():
                raise _ClientGone
            if left <= 0:
                return

    def _peek(self) -> bytes:
        try:
            data: bytes = self.connection.recv(1, socket.MSG_PEEK)
            return data
        except OSError:
            return b""

    def _event(self, data: dict[str, Any]) -> None:
        self._send(b"data: " + json.dumps(data).encode() + b"\n\n")

    def _send(self, payload: bytes) -> None:
        self._wait(0)
        self._write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")

    def _write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError as exc:
            raise _ClientGone from exc

    def _json(
        self, status: int, payload: dict[str, Any], extra: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(data)

    def _embeddings(self, body: dict[str, Any]) -> None:
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        data = [
            {"object": "embedding", "index": i, "embedding": _toy_vector(str(text))}
            for i, text in enumerate(texts)
        ]
        usage = {"prompt_tokens": 1, "total_tokens": 1}
        self._json(200, {"object": "list", "data": data, "model": "fake", "usage": usage})


def _toy_vector(text: str) -> list[float]:
    counts = [0.0] * 8
    for word in text.lower().split():
        counts[sum(map(ord, word)) % 8] += 1.0
    norm = sum(c * c for c in counts) ** 0.5 or 1.0
    return [c / norm for c in counts]


def _chunk(model: str, delta: dict[str, Any], *, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _completion(text: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _error(message: str, code: str) -> dict[str, Any]:
    kind = "invalid_request_error" if code == "context_length_exceeded" else code
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
