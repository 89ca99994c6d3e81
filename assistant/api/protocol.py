"""The OpenAI chat-completions wire format: requests in, completions and chunks out.

Pure functions, no server: `parse_chat_request` turns an untrusted JSON body into a
`ChatRequest` (or raises `RequestError`), and the builders return the exact JSON
objects OpenAI sends (``chat.completion``, ``chat.completion.chunk``, ``error``),
plus our documented extras: ``sources`` (structured citations) on the completion
and on the final chunk.

Conversation history comes from ``messages`` and is untrusted: only ``user`` and
``assistant`` turns are kept (``system`` and ``developer`` messages are ignored,
so a client can never replace our instructions), capped as the chat UI caps them,
and our own appended source list is cut off earlier assistant turns.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assistant.errors import RequestError
from assistant.session import SourceEntry, history_to_turns, inert_text, message_text
from assistant.session import source_entries as _source_entries
from assistant.types import HEADING_SEPARATOR, Answer, Turn
from assistant.words import valid_unicode

__all__ = [
    "SOURCES_HEADING",
    "ChatRequest",
    "chunk",
    "completion",
    "completion_id",
    "error_body",
    "parse_chat_request",
    "source_entries",
    "sources_text",
    "usage",
    "usage_chunk",
]

MAX_MESSAGES = 1000
SOURCES_HEADING = "\n\n**Sources**\n\n"


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One ``POST /v1/chat/completions`` in its wire shape.

    The question, ``k`` and the filters are as sent: the desk checks them, as it does
    for every door.
    """

    model: str
    question: str
    turns: tuple[Turn, ...]
    stream: bool = False
    include_usage: bool = False
    append_sources: bool = True
    k: object = None
    sources: tuple[str, ...] = field(default=())
    tags: tuple[str, ...] = field(default=())


def parse_chat_request(body: object, *, models: Sequence[str]) -> ChatRequest:
    """Validate a request body; the model defaults to the first of ``models``.

    Raises:
        RequestError: The body is not a chat request we can answer (code says why;
            ``model_not_found`` for a model we do not serve).
    """
    if not isinstance(body, Mapping):
        raise RequestError("the request body must be a JSON object", code="invalid_body")
    model = body.get("model", models[0])
    if not isinstance(model, str) or model not in models:
        raise RequestError(
            f"the model {str(model)[:100]!r} does not exist; GET /v1/models lists ours",
            code="model_not_found",
            param="model",
        )
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or len(messages) > MAX_MESSAGES:
        raise RequestError(
            f"messages must be a non-empty list of at most {MAX_MESSAGES} messages",
            code="invalid_messages",
            param="messages",
        )
    question = _question(messages[-1])
    options = _options(body)
    return ChatRequest(
        model=model,
        question=question,
        turns=history_to_turns([_without_our_sources(m) for m in messages[:-1]]),
        stream=_flag(body, "stream", default=False),
        include_usage=_include_usage(body),
        append_sources=_flag(options, "append_sources", default=True, prefix="assistant."),
        k=options.get("k"),
        sources=_strings(options, "sources"),
        tags=_strings(options, "tags"),
    )


def _question(last: object) -> str:
    if not isinstance(last, Mapping) or last.get("role") != "user":
        raise RequestError(
            "the last message must be the user's question (role 'user')",
            code="invalid_messages",
            param="messages",
        )
    return message_text(last.get("content"))


def _without_our_sources(message: object) -> object:
    # An earlier answer of ours comes back with its source list; the rewriter and the
    # prompt need only what was said.
    if isinstance(message, Mapping) and message.get("role") == "assistant":
        content = message.get("content")
        if isinstance(content, str) and SOURCES_HEADING in content:
            return {"role": "assistant", "content": content.split(SOURCES_HEADING, 1)[0]}
    return message


def _options(body: Mapping[str, Any]) -> Mapping[str, Any]:
    options = body.get("assistant", {})
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise RequestError("assistant must be an object", code="invalid_option", param="assistant")
    return options


def _flag(body: Mapping[str, Any], name: str, *, default: bool, prefix: str = "") -> bool:
    value = body.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        message = f"{prefix}{name} must be true or false"
        raise RequestError(message, code="invalid_option", param=name)
    return value


def _include_usage(body: Mapping[str, Any]) -> bool:
    options = body.get("stream_options") or {}
    if not isinstance(options, Mapping):
        raise RequestError(
            "stream_options must be an object", code="invalid_option", param="stream_options"
        )
    return _flag(options, "include_usage", default=False, prefix="stream_options.")


def _strings(options: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = options.get(name, [])
    strings = isinstance(value, list) and all(isinstance(v, str) for v in value)
    if not strings or len(value) > 100:
        raise RequestError(
            f"assistant.{name} must be a list of strings", code="invalid_option", param=name
        )
    return tuple(valid_unicode(v) for v in value)


def completion_id() -> str:
    """Return a fresh ``chatcmpl-...`` id, shared by every chunk of one answer."""
    return "chatcmpl-" + uuid.uuid4().hex


def source_entries(
    answer: Answer, *, public_url: str, numbers: Mapping[int, int] | None = None
) -> list[dict[str, Any]]:
    """Return the ``sources`` field: every source of the answer, numbered as the text shows.

    ``numbers`` maps a source's number to the number the reply shows
    (`assistant.api.reply.ReplyText.numbers`); the list is in that order. ``url`` is the
    absolute viewer link when the chat UI's public URL is configured, else null; ``path``
    is the viewer path on the chat UI's server, highlighting the cited passage.
    """
    shown = numbers or {}
    entries = [
        _entry(entry, number=shown.get(entry.number, entry.number), public_url=public_url)
        for entry in _source_entries(answer)
    ]
    return sorted(entries, key=lambda entry: int(entry["n"]))


def _entry(entry: SourceEntry, *, number: int, public_url: str) -> dict[str, Any]:
    hit, path = entry.hit, entry.path
    return {
        "n": number,
        "title": hit.title or hit.chunk.source,
        "section": hit.chunk.breadcrumb,
        "source": hit.chunk.source,
        "chunk_id": hit.chunk.chunk_id,
        "page": hit.chunk.page or None,
        "effective_date": hit.effective_date or None,
        "score": round(hit.score, 4),
        "cited": entry.cited,
        "path": path,
        "url": public_url + path if public_url else None,
    }


def sources_text(entries: Sequence[Mapping[str, Any]]) -> str:
    """Return the numbered source list appended to an answer ("" when nothing is cited).

    Document text (titles, headings) is plain, with no image, link or tag a Markdown
    client would act on.
    """
    lines = []
    for entry in entries:
        if not entry["cited"]:
            continue
        # The title leads the line; the section shows the headings under it.
        path = str(entry["section"]).split(HEADING_SEPARATOR)
        facts = [inert_text(" / ".join(path[1:] or path))]
        if entry["page"]:
            facts.append(f"page {entry['page']}")
        if entry["effective_date"]:
            facts.append(f"effective {inert_text(str(entry['effective_date']))}")
        if entry["url"]:
            facts.append(f"[open section]({entry['url']})")
        title = inert_text(str(entry["title"]))
        lines.append(f"- [{entry['n']}] {title} — {' · '.join(facts)}")
    return SOURCES_HEADING + "\n".join(lines) if lines else ""


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    """Return OpenAI's ``usage`` object."""
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def completion(
    *,
    cid: str,
    model: str,
    text: str,
    used: dict[str, int],
    sources: list[dict[str, Any]],
    mode: str,
) -> dict[str, Any]:
    """Return a whole ``chat.completion`` object, with our ``sources`` and ``mode`` extras."""
    return {
        "id": cid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": used,
        "sources": sources,
        "mode": mode,
    }


def chunk(
    *,
    cid: str,
    model: str,
    created: int,
    delta: dict[str, str],
    finish: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Return one ``chat.completion.chunk``; the final one carries ``extra`` (our sources)."""
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        **(extra or {}),
    }


def usage_chunk(*, cid: str, model: str, created: int, used: dict[str, int]) -> dict[str, Any]:
    """Return the closing usage chunk (empty ``choices``) sent when ``include_usage`` asks."""
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [],
        "usage": used,
    }


def error_body(message: str, *, kind: str, code: str, param: str = "") -> dict[str, Any]:
    """Return OpenAI's error object: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": kind, "param": param or None, "code": code}}
