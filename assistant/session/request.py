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

from assistant.types import MAX_TURN_CHARS, MAX_TURNS, Turn
from assistant.words import valid_unicode

__all__ = ["history_to_turns", "unlinked_markers"]

# A citation marker the chat made a link to the viewer (the title is optional).
_LINKED_MARKER = re.compile(r'\[\\\[(\d{1,3})\\\]\]\(/doc/[^)\s]*(?:\s+"[^"]*")?\)')


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


def _content_text(content: object, *, max_chars: int) -> str:
    if isinstance(content, str):
        return content[:max_chars]
    if not isinstance(content, Sequence) or isinstance(content, bytes):
        return ""
    pieces: list[str] = []
    size = 0
    for part in content[:64]:
        if isinstance(part, str):
            text = part
        elif isinstance(part, Mapping) and part.get("type") == "text":
            value = part.get("text")
            text = value if isinstance(value, str) else ""
        else:
            continue
        pieces.append(text[: max_chars - size])
        size += len(pieces[-1])
        if size >= max_chars:
            break
    return "\n".join(pieces)
