"""A question's conversation, read once from what a door received (untrusted).

`history_to_turns` is the one reader of chat messages, whichever door they came through:
role/content dicts (the API's ``messages``, Gradio's history) or objects with those
attributes, content a string or a list of typed parts. Only ``user`` and ``assistant``
turns survive, messages with a metadata title (the chat's sources and trace) are dropped,
the chat's citation links go back to plain ``[n]``, and turns and characters are capped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from assistant.types import MAX_TURN_CHARS, MAX_TURNS, Turn
from assistant.words import valid_unicode

__all__ = [
    "MAX_QUESTION_CHARS",
    "CheckedQuestion",
    "check_question",
    "history_to_turns",
    "message_text",
    "unlinked_markers",
]

# A question is a sentence or two; a longer one is pasted text or an attack, and would be
# searched, traced and echoed back in full. The same limit as a history turn's.
MAX_QUESTION_CHARS = MAX_TURN_CHARS

# A citation marker the chat made a link to the viewer (the title is optional).
_LINKED_MARKER = re.compile(r'\[\\\[(\d{1,3})\\\]\]\(/doc/[^)\s]*(?:\s+"[^"]*")?\)')


@dataclass(frozen=True, slots=True)
class CheckedQuestion:
    """A question as typed, checked once: its text, its length, and what is wrong, if anything.

    ``problem`` is "" (fine), ``empty`` or ``too long``; each door words it its own way.
    """

    text: str
    length: int
    problem: Literal["", "empty", "too long"] = ""


def check_question(raw: object) -> CheckedQuestion:
    """Return ``raw`` stripped and valid Unicode, with what keeps it from being asked.

    Lone surrogates (an API client can send one) become U+FFFD: the model, the
    prompt and Gradio's JSON encoder all refuse them.
    """
    text = valid_unicode(raw.strip()) if isinstance(raw, str) else ""
    if not text:
        return CheckedQuestion("", 0, "empty")
    if len(text) > MAX_QUESTION_CHARS:
        return CheckedQuestion("", len(text), "too long")
    return CheckedQuestion(text, len(text))


def message_text(content: object) -> str:
    """Return the text of one message's content: a string, or its text parts joined."""
    return _content_text(content, max_chars=None)


def unlinked_markers(text: str) -> str:
    """Return ``text`` with the chat's citation links (its ``linked_markers``) as plain ``[n]``."""
    return _LINKED_MARKER.sub(lambda m: f"[{m[1]}]", text)


def history_to_turns(
    history: object,
    *,
    max_turns: int = MAX_TURNS,
    max_chars: int = MAX_TURN_CHARS,
) -> tuple[Turn, ...]:
    """Convert Gradio chat history into the newest conversation turns.

    Accepts message dicts (or objects with ``role``/``content``/``metadata``
    attributes) whose content is a string or a list of typed parts. Messages
    with a metadata title (sources, trace), other roles and non-text content
    are skipped; each text is cut to ``max_chars`` and only the newest
    ``max_turns`` turns are kept, in conversation order.

    Args:
        history: The history as Gradio passes it (untrusted).
        max_turns: How many turns to keep at most.
        max_chars: How many characters of each turn to keep.

    Returns:
        The turns, oldest first.
    """
    if not isinstance(history, Sequence) or isinstance(history, str | bytes):
        return ()
    kept: list[Turn] = []
    for message in reversed(history):
        if len(kept) >= max_turns:
            break
        turn = _to_turn(message, max_chars=max_chars)
        if turn is not None:
            kept.append(turn)
    return tuple(reversed(kept))


def _to_turn(message: object, *, max_chars: int) -> Turn | None:
    if isinstance(message, Mapping):
        role, content, metadata = (message.get(k) for k in ("role", "content", "metadata"))
    else:
        role = getattr(message, "role", None)
        content = getattr(message, "content", None)
        metadata = getattr(message, "metadata", None)
    if isinstance(metadata, Mapping) and metadata.get("title"):
        return None
    # The chat's citation links go back to plain markers: the model reads "[1]", no URLs.
    text = valid_unicode(unlinked_markers(_content_text(content, max_chars=max_chars)).strip())
    if not text:
        return None
    if role == "user":
        return Turn(role="user", text=text[:max_chars])
    if role == "assistant":
        return Turn(role="assistant", text=text[:max_chars])
    return None


def _content_text(content: object, *, max_chars: int | None) -> str:
    if isinstance(content, str):
        return content[:max_chars]
    if not isinstance(content, Sequence) or isinstance(content, bytes):
        return ""
    pieces: list[str] = []
    size = 0
    # A history turn reads its first 64 parts; a question all of them (its length is checked).
    for part in content[:64] if max_chars is not None else content:
        if isinstance(part, str):
            text = part
        elif isinstance(part, Mapping) and part.get("type") == "text":
            value = part.get("text")
            text = value if isinstance(value, str) else ""
        else:
            continue
        pieces.append(text if max_chars is None else text[: max_chars - size])
        size += len(pieces[-1])
        if max_chars is not None and size >= max_chars:
            break
    return "\n".join(pieces)
