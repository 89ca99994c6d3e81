"""The API's HTTP server: Starlette routes over a `ChatService`, served by uvicorn.

The only module of the API that imports starlette and uvicorn. `create_app` is the
factory each uvicorn worker process calls: it builds its own index reader,
retriever and assistant from the environment, so N workers answer on N cores
with nothing shared but the index on disk. `build_api` wires any `ChatService`
(tests give fakes) and `serve` runs uvicorn.

Answers are produced in worker threads (retrieval and the offline answerer are
CPU-bound, synchronous code); a gate bounds how many run at once per process and
how many wait, and answers 429 beyond that. Nothing here runs on a timer: an idle
worker sleeps in its event loop.

Each question is one `assistant.session.turn.AnswerTurn`: its finished answer is
queued for the audit log once (the chat's record shape) under the caller the API
resolved: the key's user, or
``anonymous`` on loopback without a key. Each worker has its own background
writer; the database being locked or unwritable costs a logged warning only.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from assistant.api.keys import KeyStore, open_key_store
from assistant.api.protocol import (
    MAX_MESSAGES,
    ChatRequest,
    chunk,
    completion,
    completion_id,
    error_body,
    parse_chat_request,
    source_entries,
    sources_text,
    usage,
    usage_chunk,
)
from assistant.api.reply import ReplyText
from assistant.config import Settings
from assistant.errors import AssistantError, RequestError
from assistant.session import (
    MAX_K,
    MAX_QUESTION_CHARS,
    AnswerTurn,
    Delta,
    Desk,
    Finished,
    Outcome,
    Problem,
    open_desk,
)
from assistant.session import Request as Asked
from assistant.tokens import Tokenizer, get_tokenizer
from assistant.types import ANONYMOUS, MAX_TURN_CHARS, User

__all__ = ["Gate", "build_api", "create_app", "serve"]

logger = logging.getLogger(__name__)

OWNER = "policy-assistant"
WORKER_HEADER = "X-Assistant-Worker"
NO_INDEX_MESSAGE = (
    "There is no search index yet: an administrator must run `python ingest.py`. "
    "The API answers from the next request on, with no restart."
)
_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
# The largest request we answer: MAX_MESSAGES messages of MAX_TURN_CHARS ASCII
# characters and their JSON, twice over for escapes and other fields. A larger body
# is refused from its Content-Length, or as soon as that many bytes have come.
MAX_BODY_BYTES = 2 * (MAX_MESSAGES * (MAX_TURN_CHARS + 64))


class Gate:
    """At most ``slots`` answers at once; at most ``queue`` more wait; the rest get 429."""

    def __init__(self, slots: int, queue: int) -> None:
        self._free = slots
        self._queue = queue
        self._waiters: list[asyncio.Future[None]] = []

    async def enter(self) -> bool:
        """Take a slot, waiting in line if allowed; return False when overloaded."""
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return True
        if len(self._waiters) >= self._queue:
            return False
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter  # leave() handed its slot over to us
        except asyncio.CancelledError:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
            elif not waiter.cancelled():
                self.leave()  # the slot came just as the caller gave up
            raise
        return True

    def leave(self) -> None:
        """Free a slot, or hand it to the first waiter."""
        while self._waiters:
            waiter = self._waiters.pop(0)
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1


def _error(status: int, message: str, *, kind: str, code: str, param: str = "") -> JSONResponse:
    headers = {"Retry-After": "1"} if status in (429, 503) else None
    return JSONResponse(
        error_body(message, kind=kind, code=code, param=param), status_code=status, headers=headers
    )


def _problem(problem: Problem) -> JSONResponse:
    """Return the HTTP answer to a question the desk would not (or could not) answer."""
    if problem.kind == "no index":
        return _error(503, NO_INDEX_MESSAGE, kind="server_error", code="index_not_found")
    if problem.kind in ("store down", "failed"):
        # Store and model errors name paths and hosts: the client gets the kind only.
        message = f"The assistant could not answer ({problem.value}); see the server log."
        return _error(500, message, kind="server_error", code="answer_failed")
    code, param, message = _REFUSALS[problem.kind]
    if problem.kind in ("unknown filter", "ambiguous filter"):
        param = "sources" if problem.field == "source" else "tags"
        message = _filter_message(problem)
    return _error(400, message.format(length=problem.length), kind=_INVALID, code=code, param=param)


_INVALID = "invalid_request_error"
_REFUSALS = {
    "empty": ("invalid_messages", "messages", "the user's question has no text"),
    "too long": (
        "context_length_exceeded",
        "messages",
        "the question is {length:,} characters long; the limit is " + f"{MAX_QUESTION_CHARS:,}",
    ),
    "bad k": ("invalid_option", "k", f"assistant.k must be an integer 1-{MAX_K}"),
    "unknown filter": ("unknown_filter", "", ""),
    "ambiguous filter": ("unknown_filter", "", ""),
}


def _filter_message(problem: Problem) -> str:
    noun = "document" if problem.field == "source" else "tag"
    field = "sources" if problem.field == "source" else "tags"
    close = " or ".join(repr(c) for c in problem.close)
    if problem.kind == "ambiguous filter":
        return f"assistant.{field}: {problem.value!r} fits several documents: {close}"
    hint = f"; did you mean {close}?" if close else ""
    return f"assistant.{field}: no {noun} {problem.value!r} in the index{hint}"


class _Api:
    """The routes' state: one desk, the keys, the gate, the settings."""

    def __init__(self, desk: Desk, *, keys: KeyStore, tokenizer: Tokenizer) -> None:
        self.desk = desk
        settings = desk.settings
        self.settings = settings
        self.keys = keys
        self.tokenizer = tokenizer
        self.models = (settings.store.collection,)
        self.gate = Gate(settings.api.concurrency, settings.api.queue)
        self.reading = 0  # bodies being read now (see `_bounded_body`)
        self.created = int(time.time())

    def authenticate(self, request: Request) -> User | JSONResponse:
        """Return the caller's user, or the 401 to send."""
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        token = token.strip()
        if scheme.lower() == "bearer" and token:
            user = self.keys.lookup(token)
            if user is not None:
                return user
        if self.settings.api.anonymous_loopback and _loopback(request):
            # Clients such as the openai library always send some key; on loopback
            # with anonymous calls enabled a key that matches nothing is no key.
            return ANONYMOUS if _from_this_host(request, self.settings) else _cross_site()
        if not self.keys.configured():
            # The problem itself names a server path: it is in the server's log.
            broken = " (the keys file is not valid; see the server log)"
            problem = broken if self.keys.problem else ""
            return _error(
                401,
                "The API is off: no API key is configured"
                f"{problem}. Create one with `python -m assistant keys add --user NAME`.",
                kind="invalid_request_error",
                code="api_disabled",
            )
        if not token:
            return _error(
                401,
                "You didn't provide an API key: send 'Authorization: Bearer KEY'.",
                kind="invalid_request_error",
                code="missing_api_key",
            )
        return _error(
            401, "Incorrect API key provided.", kind="invalid_request_error", code="invalid_api_key"
        )

    def count(self, request: ChatRequest) -> int:
        """Return the prompt tokens we report: the question and the history kept."""
        texts = [request.question, *(turn.text for turn in request.turns)]  # as sent
        return sum(self.tokenizer.count(text) for text in texts)


def _loopback(request: Request) -> bool:
    host = request.client.host if request.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _from_this_host(request: Request, settings: Settings) -> bool:
    """Return whether a keyless loopback call comes from a program, not a web page.

    A browser adds ``Origin`` to every cross-site POST (and to ``no-cors`` ones),
    and a page reached through DNS rebinding sends its own host name as ``Host``.
    """
    if "origin" in request.headers:
        return False
    port = settings.api.port
    names = {settings.api.host, "127.0.0.1", "localhost", "[::1]"}
    allowed = {f"{name}:{port}".lower() for name in names}
    return request.headers.get("host", "").strip().lower() in allowed


def _cross_site() -> JSONResponse:
    return _error(
        403,
        "Calls without a key are taken from programs on this host only: this one came "
        "from a web page (an Origin header) or through another host name.",
        kind="invalid_request_error",
        code="cross_site_request",
    )


def _json_body(request: Request) -> bool:
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return kind == "application/json"


async def _parsed_chat(api: _Api, request: Request) -> ChatRequest | Response:
    """Return the chat request of a JSON body within the size limit, or the error to send."""
    if not _json_body(request):
        message = "Send the body as JSON, with 'Content-Type: application/json'."
        return _error(415, message, kind="invalid_request_error", code="unsupported_media_type")
    raw = await _bounded_body(api, request)
    if isinstance(raw, Response):
        return raw
    try:
        body = json.loads(raw)
        return parse_chat_request(body, models=api.models)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply
        message = "The body is not valid JSON (or is nested too deeply)."
        return _error(400, message, kind="invalid_request_error", code="invalid_json")
    except RequestError as exc:
        status = 404 if exc.code == "model_not_found" else 400
        return _error(
            status, str(exc), kind="invalid_request_error", code=exc.code, param=exc.param
        )


def build_api(
    desk: Desk, *, keys: KeyStore | None = None, tokenizer: Tokenizer | None = None
) -> Starlette:
    """Return the ASGI app serving ``/v1/models`` and ``/v1/chat/completions``.

    Args:
        desk: Checks and answers questions (shared by every request of this process) and
            records each finished answer; its settings give the collection (the model
            id), the API limits, the public URL and the keys file.
        keys: The keys (default: the file named by the settings).
        tokenizer: Counts ``usage`` tokens (default: the project's tiktoken encoding).
    """
    settings = desk.settings
    api = _Api(
        desk,
        keys=keys or open_key_store(settings),
        tokenizer=tokenizer or get_tokenizer(settings.chunking.encoding),
    )

    async def list_models(request: Request) -> Response:
        user = api.authenticate(request)
        if isinstance(user, Response):
            return user
        data = [_model(api, name) for name in api.models]
        return _json({"object": "list", "data": data})

    async def get_model(request: Request) -> Response:
        user = api.authenticate(request)
        if isinstance(user, Response):
            return user
        name = request.path_params["model"]
        if name not in api.models:
            return _error(
                404,
                f"The model {name[:100]!r} does not exist.",
                kind="invalid_request_error",
                code="model_not_found",
                param="model",
            )
        return _json(_model(api, name))

    async def chat(request: Request) -> Response:
        user = api.authenticate(request)
        if isinstance(user, Response):
            return user
        parsed = await _parsed_chat(api, request)
        if isinstance(parsed, Response):
            return parsed
        # In a thread: resolving the filters reads the index snapshot.
        asked = await run_in_threadpool(
            api.desk.request,
            parsed.question,
            history=parsed.turns,
            k=parsed.k,
            sources=parsed.sources,
            tags=parsed.tags,
            user=user,
        )
        if isinstance(asked, Problem):
            return _problem(asked)
        return await _answer(api, parsed, asked)

    async def health(request: Request) -> Response:
        return _json({"status": "ok"})

    routes = [
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/v1/models/{model:path}", get_model, methods=["GET"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/health", health, methods=["GET"]),
    ]
    app = Starlette(routes=routes)
    app.add_middleware(_WorkerHeader)
    return app


class _WorkerHeader:
    """Names the worker process on every response, so a client sees who answered."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Any]) -> None:
        self.app = app
        self.header = (WORKER_HEADER.lower().encode(), str(os.getpid()).encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_header(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), self.header]
            await send(message)

        await self.app(scope, receive, send_with_header)


def _too_large() -> JSONResponse:
    message = f"The request body is larger than {MAX_BODY_BYTES:,} bytes."
    return _error(413, message, kind="invalid_request_error", code="request_too_large")


async def _bounded_body(api: _Api, request: Request) -> bytes | Response:
    """Read the body, refusing one over `MAX_BODY_BYTES` before holding it whole.

    At most as many bodies are read at once as the gate admits (slots and queue),
    so uploads alone cannot take more than that many times the limit.
    """
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return _too_large()
    if api.reading >= api.settings.api.concurrency + api.settings.api.queue:
        message = "This worker is busy reading other requests; retry shortly."
        return _error(429, message, kind="rate_limit_error", code="rate_limit_exceeded")
    api.reading += 1
    try:
        parts, size = [], 0
        async for part in request.stream():
            size += len(part)
            if size > MAX_BODY_BYTES:
                return _too_large()
            parts.append(part)
        return b"".join(parts)
    finally:
        api.reading -= 1


def _json(data: object, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status)


def _model(api: _Api, name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": api.created, "owned_by": OWNER}


async def _answer(api: _Api, request: ChatRequest, asked: Asked) -> Response:
    if not await api.gate.enter():
        return _error(
            429,
            "The assistant is answering as many questions as it can; retry in a moment.",
            kind="rate_limit_error",
            code="rate_limit_exceeded",
        )
    try:
        turn = await run_in_threadpool(api.desk.ask, asked, door="api")
    except BaseException:
        api.gate.leave()
        raise
    if isinstance(turn, Problem):
        api.gate.leave()
        return _problem(turn)
    if request.stream:
        return _GatedStream(_events(api, request, turn), release=_releaser(api, turn))
    try:
        # In a thread: the record looks up document versions in the index snapshot.
        outcome = await run_in_threadpool(turn.run)
    finally:
        api.gate.leave()
    reply = ReplyText(sources=len(outcome.answer.sources))
    text = reply.feed(outcome.shown) + reply.finish()
    entries = source_entries(
        outcome.answer, public_url=api.settings.api.public_url, numbers=reply.numbers()
    )
    if request.append_sources:
        text += sources_text(entries)
    used = usage(api.count(request), api.tokenizer.count(text))
    body = completion(
        cid=completion_id(),
        model=request.model,
        text=text,
        used=used,
        sources=entries,
        mode=outcome.mode,
    )
    return _json(body)


def _releaser(api: _Api, turn: AnswerTurn) -> Callable[[], None]:
    def release() -> None:
        turn.close()
        api.gate.leave()

    return release


class _GatedStream(StreamingResponse):
    """An SSE response that frees its gate slot however it ends (done, dropped, cancelled)."""

    def __init__(self, events: AsyncIterator[str], *, release: Callable[[], None]) -> None:
        super().__init__(events, media_type="text/event-stream", headers=_SSE_HEADERS)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


def _sse(data: object) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n"


async def _events(api: _Api, request: ChatRequest, turn: AnswerTurn) -> AsyncIterator[str]:
    cid, created, model = completion_id(), int(time.time()), request.model

    def event(delta: dict[str, str], **kwargs: Any) -> str:
        return _sse(chunk(cid=cid, model=model, created=created, delta=delta, **kwargs))

    yield event({"role": "assistant", "content": ""})
    sent: list[str] = []  # the plain, renumbered text the client got
    reply = ReplyText(sources=len(turn.result.hits))
    outcome: Outcome | None = None
    failure = ""
    try:
        # In a thread: finishing records the answer, looking up versions in the snapshot.
        async for happened in iterate_in_threadpool(turn):
            if isinstance(happened, Delta):
                if shown := reply.feed(happened.text):
                    sent.append(shown)
                    yield event({"content": shown})
            elif isinstance(happened, Finished):
                outcome = happened.outcome
            else:  # as in the chat, an answer that failed part way is not recorded
                kind = happened.problem.value
                failure = f"Sorry, the assistant could not finish the answer ({kind})."
    finally:
        turn.close()
    tail = reply.finish()
    note = outcome.error if outcome else failure
    if note:
        tail += f"\n\n*{note}*"
    answer = outcome.answer if outcome else turn.unchecked_answer()
    entries = source_entries(
        answer, public_url=api.settings.api.public_url, numbers=reply.numbers()
    )
    if request.append_sources:
        tail += sources_text(entries)
    if tail:
        yield event({"content": tail})
    extra: dict[str, Any] = {"sources": entries, "mode": turn.mode}
    if outcome and answer.text.strip() and answer.text != outcome.streamed:
        # The citation check ran after the deltas left: it may have removed markers to
        # missing sources or marked unsupported sentences. Clients that can, show this.
        extra["checked_content"] = reply.renumbered(answer.text)
    yield event({}, finish="stop", extra=extra)
    if request.include_usage:
        used = usage(api.count(request), api.tokenizer.count("".join(sent) + tail))
        yield _sse(usage_chunk(cid=cid, model=model, created=created, used=used))
    yield "data: [DONE]\n\n"


def create_app() -> Starlette:
    """Build the API for one worker process from the environment (uvicorn's factory).

    Raises:
        AssistantError: A setting is invalid or the embedding model cannot be loaded.
    """
    settings = Settings.from_env(os.environ)
    desk = open_desk(settings)
    try:
        # Load the model now, not on this worker's first question (a second or two).
        if desk.embedder is not None:
            desk.embedder.embed(["warm-up"])
    except AssistantError as exc:
        logger.warning("the embedding model failed to load: %s", exc)
    keys = open_key_store(settings)
    if not keys.configured() and not settings.api.anonymous_loopback:
        logger.warning("no API key in %s: every request gets 401", keys.path)
    logger.info("API worker %d ready", os.getpid())
    return build_api(desk, keys=keys)


def serve(settings: Settings, *, log_level: str = "warning") -> None:
    """Run uvicorn with ``settings.api.workers`` processes until interrupted.

    Each worker calls `create_app`, which reads the settings from the environment:
    the caller puts every command-line override there first.
    """
    uvicorn.run(
        "assistant.api.server:create_app",
        factory=True,
        host=settings.api.host,
        port=settings.api.port,
        workers=settings.api.workers,
        log_level=log_level,
        proxy_headers=False,  # the loopback rule must see the real peer, not a header
        server_header=False,
        timeout_graceful_shutdown=5,
    )
