"""A perfect chat model on 127.0.0.1, to measure what the answer pipeline itself loses.

`OracleModel` is a real HTTP server speaking the OpenAI chat-completions protocol
(streamed and not), so the product's own client, prompt, checks and service run
unchanged against it. It knows the question being asked (`OracleCase`, set by the
evaluation before each question) and answers as a model that follows the prompt
perfectly would:

- when a source of the prompt holds a gold phrase, the question's reference answer,
  citing every such source (``... [2][4]``);
- otherwise the prompt's fixed sentence, "The policy documents do not cover this.";
- asked to rewrite a follow-up, the question the follow-up stands for.

``OracleModel(cite=False)`` is the same model writing no markers at all, as the small
local models do: what `assistant.answering.claims` cites for it is measured against
the sources the perfect model would have cited.

Whatever such a model loses on the way to the user (a question refused before the
model was asked, a correct answer withheld or cut by the checks) is lost by our own
pipeline. It says nothing about a real model's skill: it is an upper bound.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from assistant.answering.rewrite import REWRITE_INSTRUCTIONS

__all__ = ["NOT_COVERED", "OracleCall", "OracleCase", "OracleModel", "folded"]

logger = logging.getLogger(__name__)

# Rule 3 of assistant.answering.prompt.SYSTEM_PROMPT, word for word.
NOT_COVERED = "The policy documents do not cover this."
_SOURCE = re.compile(r'<source id="(\d+)">\n(.*?)\n</source>', re.S)
_QUESTION = re.compile(r"\nQuestion: (.*?)\n\nAnswer from the sources", re.S)
_MARKDOWN = re.compile(r"[*_`|]+")
_PIECE_CHARS = 24


@dataclass(frozen=True, slots=True)
class OracleCase:
    """What the perfect model knows about the question being asked.

    Attributes:
        answer: The reference answer ("" when the question cannot be answered).
        gold_phrases: Phrases of which any, found in a source, means the answer reached the prompt.
        standalone: What a follow-up stands for on its own (the reply to a rewrite request).
    """

    answer: str = ""
    gold_phrases: tuple[str, ...] = ()
    standalone: str = ""


@dataclass(frozen=True, slots=True)
class OracleCall:
    """One answer request the oracle received: did the answer reach it, what question it read."""

    reached: bool
    question: str
    cited: tuple[int, ...] = ()


@dataclass(slots=True)
class _State:
    case: OracleCase = field(default_factory=OracleCase)
    calls: list[OracleCall] = field(default_factory=list)
    rewrites: list[str] = field(default_factory=list)


def folded(text: str) -> str:
    """Return ``text`` without emphasis and table marks, case and white space folded."""
    return " ".join(_MARKDOWN.sub(" ", text).split()).casefold()


class OracleModel:
    """The loopback server; use it as a context manager, set `case` before each question."""

    def __init__(self, *, cite: bool = True) -> None:
        self._cite = cite
        self._lock = threading.Lock()
        self._state = _State()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """Return the ``/v1`` URL to give an OpenAI client."""
        if self._server is None:
            raise RuntimeError("the oracle is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def ask_next(self, case: OracleCase) -> None:
        """Answer the next requests as ``case`` says, and forget the calls so far."""
        with self._lock:
            self._state = _State(case=case)

    @property
    def calls(self) -> tuple[OracleCall, ...]:
        """Return the answer requests received since the last `ask_next`."""
        with self._lock:
            return tuple(self._state.calls)

    @property
    def rewrites(self) -> tuple[str, ...]:
        """Return the follow-ups it was asked to rewrite since the last `ask_next`."""
        with self._lock:
            return tuple(self._state.rewrites)

    def reply(self, messages: list[dict[str, Any]]) -> str:
        """Return the perfect model's reply to ``messages`` and record the call."""
        system = str(messages[0].get("content", "")) if messages else ""
        last = str(messages[-1].get("content", "")) if messages else ""
        with self._lock:
            state = self._state
            if system == REWRITE_INSTRUCTIONS:
                state.rewrites.append(last)
                return state.case.standalone or last
            cited = _sources_with_gold(last, state.case.gold_phrases)
            found = _QUESTION.search(last)
            state.calls.append(OracleCall(bool(cited), found[1] if found else "", cited))
            if not cited or not state.case.answer:
                return NOT_COVERED
            if not self._cite:
                return state.case.answer
            return f"{state.case.answer} " + "".join(f"[{n}]" for n in cited)

    def start(self) -> OracleModel:
        """Start serving on a free port of 127.0.0.1."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        logger.info("oracle model serving at %s", self.base_url)
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> OracleModel:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _sources_with_gold(message: str, phrases: tuple[str, ...]) -> tuple[int, ...]:
    wanted = [folded(p) for p in phrases if p.strip()]
    return tuple(
        int(number)
        for number, text in _SOURCE.findall(message)
        if any(phrase in folded(text.replace("&lt;", "<")) for phrase in wanted)
    )


def _handler_for(oracle: OracleModel) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        owner = oracle

    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner: OracleModel

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the evaluation's output clean: requests go to no stream."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.endswith("/chat/completions"):
            self._send(404, "application/json", b'{"error": {"message": "not found"}}')
            return
        text = self.owner.reply(list(body.get("messages") or []))
        model = str(body.get("model", "oracle"))
        if body.get("stream"):
            self._send(200, "text/event-stream", _events(text, model))
        else:
            self._send(200, "application/json", json.dumps(_completion(text, model)).encode())

    def _send(self, status: int, kind: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _events(text: str, model: str) -> bytes:
    """Return the whole server-sent event stream of ``text``, in small deltas, then [DONE]."""
    pieces = [text[i : i + _PIECE_CHARS] for i in range(0, len(text), _PIECE_CHARS)]
    chunks = [_chunk(model, {"role": "assistant", "content": ""})]
    chunks += [_chunk(model, {"content": piece}) for piece in pieces]
    chunks.append(_chunk(model, {}, finish="stop"))
    lines = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


def _chunk(model: str, delta: dict[str, Any], *, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-oracle",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _completion(text: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-oracle",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }
