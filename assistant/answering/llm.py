"""The chat model: any OpenAI-compatible server, streamed, with user-safe errors.

``OpenAIChat`` works with OpenAI, Azure OpenAI (through ``base_url``), Ollama,
vLLM, llama.cpp's server and LM Studio: all speak ``/v1/chat/completions``.
The client is created on first use, never at import. Every failure of the
openai client becomes an `LLMError` whose message can be shown to a user; the
details go to the log (without prompts, user text or keys).
"""

from __future__ import annotations

import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from assistant import openai_api as oa
from assistant.config import LLMSettings
from assistant.errors import LLMError
from assistant.types import Reasoning
from assistant.words import valid_unicode

if TYPE_CHECKING:
    import httpx2

__all__ = ["LENGTH_NOTE", "TIME_NOTE", "OpenAIChat", "Utf16Joiner", "VisibleText"]

logger = logging.getLogger(__name__)


LENGTH_NOTE = "\n\n*(The answer was cut off at the length limit, ASSISTANT_LLM_MAX_TOKENS.)*"
TIME_NOTE = "\n\n*(The answer was cut off at the time limit, ASSISTANT_LLM_TOTAL_TIMEOUT.)*"
_MALFORMED = "The language model sent a malformed reply, so the answer may be incomplete."
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_UNFINISHED = (
    "The language model stopped before finishing the answer; the question and its sources "
    "may exceed its context window: lower ASSISTANT_CONTEXT_TOKENS or give the server a "
    "larger context."
)
_CONTEXT_WORDS = re.compile(r"context[ _](?:window|length|size)")


class VisibleText:
    """Split ``<think>...</think>`` blocks off a stream of text deltas.

    Tags may be split across deltas, so up to a tag's length of text is held back
    until it is clear whether it starts a tag. An unclosed block hides the rest.
    What the blocks held is kept for `take_thought` (the trace shows it).
    """

    def __init__(self) -> None:
        self._pending = ""
        self._thinking = False
        self._thought: list[str] = []

    def feed(self, delta: str) -> str:
        """Return the visible text that ``delta`` completes."""
        self._pending += delta
        out: list[str] = []
        while True:
            tag = _THINK_CLOSE if self._thinking else _THINK_OPEN
            at = self._pending.find(tag)
            if at >= 0:
                (self._thought if self._thinking else out).append(self._pending[:at])
                self._pending = self._pending[at + len(tag) :]
                self._thinking = not self._thinking
                continue
            keep = _partial_tag_length(self._pending, tag)
            (self._thought if self._thinking else out).append(
                self._pending[: len(self._pending) - keep]
            )
            self._pending = self._pending[len(self._pending) - keep :]
            return "".join(out)

    def finish(self) -> str:
        """Return text held back at the end (none while inside a think block)."""
        if self._thinking:
            self._thought.append(self._pending)
        rest, self._pending = ("" if self._thinking else self._pending), ""
        return rest

    def take_thought(self) -> str:
        """Return the think-block text seen since the last call."""
        thought, self._thought = "".join(self._thought), []
        return thought


class Utf16Joiner:
    r"""Make streamed text valid Unicode: surrogate pairs joined, lone halves replaced.

    A server (or a UTF-16-based proxy) may send an emoji as ``"\ud83d"`` in one
    chunk and ``"\ude00"`` in the next; a high surrogate at a delta's end is held
    back until the next delta shows whether its pair follows.
    """

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, delta: str) -> str:
        """Return the valid text that ``delta`` completes."""
        text, self._pending = self._pending + delta, ""
        if text and "\ud800" <= text[-1] <= "\udbff":
            text, self._pending = text[:-1], text[-1]
        return valid_unicode(text)

    def finish(self) -> str:
        """Return what was held back (a lone half becomes U+FFFD)."""
        rest, self._pending = self._pending, ""
        return valid_unicode(rest)


def _partial_tag_length(text: str, tag: str) -> int:
    """Return the length of the longest suffix of ``text`` that starts ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


class OpenAIChat:
    """A `ChatModel` (and query-rewrite `Completer`) backed by the openai client.

    Args:
        settings: Base URL, model, key and timeout. ``timeout`` bounds connecting
            and every read, so a server that stalls between chunks ends the stream.
        http_client: An ``httpx2.Client`` to use instead of the default one.
        max_retries: Retries of 429 and 5xx answers before any text is streamed.
        temperature: Sampling temperature; low values keep answers close to the sources.
    """

    def __init__(
        self,
        settings: LLMSettings,
        *,
        http_client: httpx2.Client | None = None,
        max_retries: int = 2,
        temperature: float = 0.1,
    ) -> None:
        self._settings = settings
        self._http_client = http_client
        self._max_retries = max_retries
        self._temperature = temperature
        self._client: oa.OpenAI | None = None
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        """Return the model name sent with each request."""
        return self._settings.model

    def stream(self, messages: Sequence[dict[str, str]]) -> Iterator[str]:
        """Yield the answer's text deltas; closing the iterator closes the HTTP response.

        The answer ends with `TIME_NOTE` once ``total_timeout`` seconds have passed
        since the request, or with `LENGTH_NOTE` at ``max_tokens`` (or, for a server
        that ignores it, ``max_chars``). The request and the reading run in a helper
        thread, so a server that stalls cannot hold the answer past its budget.

        Args:
            messages: Chat messages as ``{"role": ..., "content": ...}`` dicts.

        Yields:
            Non-empty text deltas, valid Unicode; the model's reasoning (a
            ``reasoning_content`` field or ``<think>`` blocks) as `Reasoning` deltas.

        Raises:
            LLMError: The request failed, timed out, the connection dropped or the
                server sent something that is not a chat completion stream.
        """
        client = self._get_client()
        logger.info("chat stream: model=%s messages=%d", self.model, len(messages))
        settings = self._settings
        deadline = time.monotonic() + settings.total_timeout

        def open_stream() -> Any:
            return client.chat.completions.create(
                model=self.model,
                messages=_to_params(messages),
                stream=True,
                temperature=self._temperature,
                max_tokens=settings.max_tokens,
            )

        reader = _StreamReader(open_stream)
        try:
            yield from self._deltas(reader, deadline=deadline)
        finally:
            reader.stop()

    def _deltas(self, reader: _StreamReader, *, deadline: float) -> Iterator[str]:
        visible, joiner, finished, size = VisibleText(), Utf16Joiner(), False, 0
        for chunk in reader.chunks(deadline=deadline, translate=self._translate):
            if chunk is None:  # the time budget is spent
                logger.warning("chat stream stopped at the time limit")
                yield TIME_NOTE
                return
            content, reasoning, finish = _delta(chunk)
            text = visible.feed(joiner.feed(content))
            thought = reasoning + visible.take_thought()
            if thought:
                yield Reasoning(valid_unicode(thought))
            if text:
                size += len(text)
                yield text
            finished = finished or finish is not None
            if finish == "length" or size >= self._settings.max_chars:
                yield LENGTH_NOTE
                return
        tail = visible.feed(joiner.finish()) + visible.finish()
        thought = visible.take_thought()
        if thought:
            yield Reasoning(valid_unicode(thought))
        if tail:
            yield tail
        if not finished:
            # llama.cpp's Python server answers 200 and then drops a stream whose prompt
            # does not fit, so an unfinished stream is most likely that.
            logger.warning("chat stream ended without a finish reason")
            raise LLMError(_UNFINISHED)

    def complete(self, messages: Sequence[dict[str, str]], *, max_tokens: int = 96) -> str:
        """Return a short non-streamed completion (used to rewrite follow-up questions).

        Raises:
            LLMError: The request failed.
        """
        client = self._get_client()
        try:
            response = client.chat.completions.create(
                model=self.model,
                messages=_to_params(messages),
                max_tokens=max_tokens,
                temperature=0.0,
            )
        except oa.OpenAIError as exc:
            raise self._translate(exc, mid_stream=False) from exc
        if not response.choices:
            return ""
        # A reasoning model thinks here too: its <think> block is not the rewrite.
        visible = VisibleText()
        text = visible.feed(response.choices[0].message.content or "")
        return text + visible.finish()

    def _get_client(self) -> oa.OpenAI:
        with self._lock:
            if self._client is None:
                self._client = self._make_client()
            return self._client

    def _make_client(self) -> oa.OpenAI:
        settings = self._settings
        client = oa.make_client(
            base_url=settings.base_url,
            api_key=settings.api_key,
            timeout=settings.timeout,
            max_retries=self._max_retries,
            http_client=self._http_client,
        )
        if client is None:
            logger.warning("cannot create the chat client: no key and no base URL")
            raise LLMError(
                "No language model is configured: set ASSISTANT_LLM_API_KEY "
                "or ASSISTANT_LLM_BASE_URL."
            )
        return client

    def _translate(self, exc: oa.OpenAIError, *, mid_stream: bool) -> LLMError:
        message = _user_message(exc, timeout=self._settings.timeout, mid_stream=mid_stream)
        status = getattr(exc, "status_code", None)
        logger.warning(
            "chat model failed: %s status=%s mid_stream=%s",
            type(exc).__name__,
            status,
            mid_stream,
        )
        return LLMError(message)


def _delta(chunk: object) -> tuple[str, str, str | None]:
    """Return a chunk's text, its reasoning and its finish reason.

    Anything of another shape reads as nothing: the SDK builds chunks without
    validating them, so ``choices``, ``delta`` and ``content`` can be missing, null,
    lists or numbers. The final usage chunk has no choices; role-only deltas have no
    content. Reasoning models send their thinking as ``reasoning_content`` (vLLM,
    llama.cpp, DeepSeek), ``reasoning`` (Ollama, newer vLLM) or inside <think> tags
    (`VisibleText`).
    """
    choices = getattr(chunk, "choices", None)
    if not isinstance(choices, list) or not choices:
        return "", "", None
    choice = choices[0]
    delta = getattr(choice, "delta", None)
    content = getattr(delta, "content", None)
    reasoning = getattr(delta, "reasoning_content", None) or getattr(delta, "reasoning", None)
    finish = getattr(choice, "finish_reason", None)
    return (
        content if isinstance(content, str) else "",
        reasoning if isinstance(reasoning, str) else "",
        finish if isinstance(finish, str) else None,
    )


class _StreamReader:
    """Opens and reads one completion stream in a daemon thread, handing chunks over a queue.

    The consumer waits only until its deadline; `stop` asks the thread to close the
    stream, which it does itself after its current read (closing an HTTP response
    from another thread while a read is in flight is not safe).
    """

    def __init__(self, open_stream: Callable[[], Any]) -> None:
        self._open = open_stream
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chat-stream", daemon=True)
        self._started = False

    def chunks(
        self,
        *,
        deadline: float,
        translate: Callable[..., LLMError],
    ) -> Iterator[object]:
        """Yield the stream's chunks, then None if ``deadline`` passes first.

        Raises:
            LLMError: Opening or reading failed (``translate`` words the SDK's errors).
        """
        if not self._started:
            self._started = True
            self._thread.start()
        while True:
            try:
                kind, item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                yield None
                return
            if kind == "end":
                return
            if kind == "chunk":
                yield item
                continue
            if isinstance(item, oa.OpenAIError):
                raise translate(item, mid_stream=kind == "read-error") from item
            if isinstance(item, ValueError | TypeError):
                # Invalid JSON or UTF-8 in an event, or an event of the wrong shape.
                logger.warning("malformed chat stream: %s", type(item).__name__)
                raise LLMError(_MALFORMED) from item
            raise item

    def stop(self) -> None:
        """Ask the thread to close the stream and end (it may be inside a read)."""
        self._stopped.set()

    def _run(self) -> None:
        try:
            stream = self._open()
        except Exception as exc:  # handed to the consumer, which words it
            self._queue.put(("open-error", exc))
            return
        try:
            for chunk in stream:
                if self._stopped.is_set():
                    return
                self._queue.put(("chunk", chunk))
            self._queue.put(("end", None))
        except Exception as exc:  # handed to the consumer, which words it
            self._queue.put(("read-error", exc))
        finally:
            stream.close()


def _user_message(exc: oa.OpenAIError, *, timeout: float, mid_stream: bool) -> str:
    """Return a short message for ``exc`` that reveals no keys, prompts or URLs."""
    if isinstance(exc, oa.APITimeoutError):
        return f"The language model did not respond within {timeout:g} seconds; try again."
    if isinstance(exc, oa.APIConnectionError):
        if mid_stream:
            return "The connection to the language model dropped before the answer was complete."
        return "Cannot reach the language model; check ASSISTANT_LLM_BASE_URL."
    if isinstance(exc, oa.RateLimitError):
        retry_after = exc.response.headers.get("retry-after", "").strip()
        hint = f" Retry after {retry_after} seconds." if retry_after else " Try again shortly."
        return "The language model is rate limited." + hint
    if isinstance(exc, oa.AuthenticationError):
        return "The language model rejected the API key; check ASSISTANT_LLM_API_KEY."
    if isinstance(exc, oa.NotFoundError):
        return "The language model was not found; check ASSISTANT_LLM_MODEL."
    if isinstance(exc, oa.BadRequestError) and _is_context_error(exc):
        return (
            "The question and its sources exceed the model's context window; ask a "
            "shorter question or lower ASSISTANT_CONTEXT_TOKENS."
        )
    if isinstance(exc, oa.APIStatusError):
        if exc.status_code >= 500:
            return f"The language model service failed (HTTP {exc.status_code}); try again."
        return f"The language model refused the request (HTTP {exc.status_code})."
    return "The language model failed; try again."


def _is_context_error(exc: oa.BadRequestError) -> bool:
    # OpenAI says code "context_length_exceeded"; llama.cpp's servers say
    # "exceed_context_size_error" or "Requested tokens (n) exceed context window of m".
    text = f"{exc.code} {exc.type} {exc.message}".lower()
    return "context_length_exceeded" in text or _CONTEXT_WORDS.search(text) is not None


def _to_params(messages: Sequence[dict[str, str]]) -> list[oa.ChatCompletionMessageParam]:
    params: list[oa.ChatCompletionMessageParam] = []
    for message in messages:
        role, content = message["role"], message["content"]
        if role == "system":
            params.append(oa.ChatCompletionSystemMessageParam(role="system", content=content))
        elif role == "assistant":
            params.append(oa.ChatCompletionAssistantMessageParam(role="assistant", content=content))
        else:
            params.append(oa.ChatCompletionUserMessageParam(role="user", content=content))
    return params
