"""Conversations kept in the browser across reloads, per user (no gradio here).

The chat keeps one JSON value in the browser's local storage (a ``gr.BrowserState``
in `assistant.web.conversations_ui`): ``{"version": 1, "slots": {SLOT: {"current": ID or None,
"conversations": [{"id", "title", "updated", "messages"}, ...]}}}``, newest first.
A slot is one user's: `slot_of` hashes the user name, so the names of the people
who used a browser are not spelled out in it. Every function here reads and writes
only the slot it is given; the UI passes the slot of the user the server resolved
for the request (never one the page names), so two users of one browser each see
their own conversations and a page never files one user's conversation under
another's name.

Messages keep what the chat needs to show them again and to take feedback on
them: role, text, and the metadata title, status and audit id (the record id
rides on the answer message, so a thumb on a restored answer reaches its record).
Gradio encrypts the stored value with a key it sends to the page: this hides it
from a casual look at local storage, not from the browser's owner.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from assistant.types import User
from assistant.words import valid_unicode

__all__ = [
    "MAX_CONVERSATIONS",
    "clean_messages",
    "cleared",
    "opened",
    "previous_choices",
    "restored",
    "saved",
    "slot_of",
    "started_new",
]

VERSION = 1
MAX_CONVERSATIONS = 20
# Local storage holds about 5 MB per site (as UTF-16); one user's slot stays well under.
MAX_SLOT_CHARS = 1_000_000
TITLE_CHARS = 60
_KEPT_METADATA = ("title", "status", "id")

Store = dict[str, Any]
Messages = list[dict[str, Any]]


def slot_of(user: User) -> str:
    """Return the storage slot of ``user`` (a hash of the name; "anonymous" without a login)."""
    digest = hashlib.sha256(("policy-assistant conversations\0" + user.name).encode())
    return "u-" + digest.hexdigest()[:24]


def _slots(store: object) -> dict[str, Any]:
    if isinstance(store, Mapping) and store.get("version") == VERSION:
        slots = store.get("slots")
        if isinstance(slots, Mapping):
            return dict(slots)
    return {}


def _entry(store: object, slot: str) -> tuple[str | None, list[dict[str, Any]]]:
    """Return ``(current id, conversations)`` of ``slot``, dropping anything malformed."""
    entry = _slots(store).get(slot)
    if not isinstance(entry, Mapping):
        return None, []
    conversations = [
        dict(c)
        for c in entry.get("conversations") or []
        if isinstance(c, Mapping)
        and isinstance(c.get("id"), str)
        and isinstance(c.get("messages"), list)
    ]
    current = entry.get("current")
    ids = {c["id"] for c in conversations}
    return (current if isinstance(current, str) and current in ids else None), conversations


def _with(store: object, slot: str, current: str | None, conversations: list[Any]) -> Store:
    slots = _slots(store)
    slots[slot] = {"current": current, "conversations": _bounded(conversations, current)}
    return {"version": VERSION, "slots": slots}


def _bounded(conversations: list[dict[str, Any]], current: str | None) -> list[dict[str, Any]]:
    """Keep the newest `MAX_CONVERSATIONS` that fit `MAX_SLOT_CHARS` (the current one first)."""
    ordered = sorted(conversations, key=lambda c: (c["id"] != current, -_updated(c)))
    kept: list[dict[str, Any]] = []
    size = 0
    for conversation in ordered[:MAX_CONVERSATIONS]:
        size += len(json.dumps(conversation, ensure_ascii=False))
        if kept and size > MAX_SLOT_CHARS:
            break
        kept.append(conversation)
    return sorted(kept, key=lambda c: -_updated(c))


def _updated(conversation: Mapping[str, Any]) -> float:
    value = conversation.get("updated")
    return float(value) if isinstance(value, int | float) else 0.0


def clean_messages(history: object) -> Messages:
    """Return the chat history as stored: role, text content, the metadata the chat uses."""
    if not isinstance(history, Sequence) or isinstance(history, str):
        return []
    kept = []
    for message in history:
        if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
            continue
        text = _text(message.get("content"))
        if text is None:
            continue
        metadata = message.get("metadata")
        meta = (
            {k: str(metadata[k]) for k in _KEPT_METADATA if metadata.get(k)}
            if isinstance(metadata, Mapping)
            else {}
        )
        kept.append({"role": message["role"], "content": text, "metadata": meta or None})
    return kept


def _text(content: object) -> str | None:
    if isinstance(content, str):
        return valid_unicode(content)
    if isinstance(content, list):  # Gradio 6's typed parts
        parts = [p.get("text") for p in content if isinstance(p, Mapping)]
        texts = [p for p in parts if isinstance(p, str)]
        return valid_unicode("".join(texts)) if texts else None
    return None


def _title(messages: Messages) -> str:
    question = next((m["content"] for m in messages if m["role"] == "user"), "")
    line = " ".join(question.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


def opened(store: object, slot: str) -> tuple[str | None, Messages]:
    """Return the id and messages of the conversation ``slot`` had open (None, [] if none)."""
    current, conversations = _entry(store, slot)
    found = next((c for c in conversations if c["id"] == current), None)
    return (current, clean_messages(found["messages"])) if found else (None, [])


def previous_choices(store: object, slot: str, current: object) -> list[tuple[str, str]]:
    """Return ``(label, id)`` of the slot's conversations other than ``current``, newest first."""
    _, conversations = _entry(store, slot)
    return [
        (str(c.get("title") or "(untitled)"), c["id"])
        for c in conversations
        if c["id"] != current and c["messages"]
    ]


def saved(
    store: object, slot: str, current: object, history: object, *, now: float
) -> tuple[Store, str]:
    """Store ``history`` as the slot's conversation ``current``; return the store and its id.

    The page, not the store, says which conversation it shows (``current``; None
    or unknown: a new one), so a stale copy of the store never files a history
    under another conversation. Call it with a non-empty history only.
    """
    messages = clean_messages(history)
    _, conversations = _entry(store, slot)
    if not isinstance(current, str) or current not in {c["id"] for c in conversations}:
        current = uuid.uuid4().hex
        conversations.append({"id": current})
    for conversation in conversations:
        if conversation["id"] == current:
            conversation.update(messages=messages, title=_title(messages), updated=now)
    return _with(store, slot, current, conversations), current


def started_new(store: object, slot: str) -> Store:
    """Return ``store`` with no open conversation; the one open stays in the list."""
    _, conversations = _entry(store, slot)
    return _with(store, slot, None, conversations)


def cleared(store: object, slot: str, current: object) -> Store:
    """Return ``store`` without the conversation ``current`` (the chat's Clear)."""
    _, conversations = _entry(store, slot)
    return _with(store, slot, None, [c for c in conversations if c["id"] != current])


def restored(store: object, slot: str, wanted: object) -> tuple[Store, str, Messages] | None:
    """Open the slot's conversation ``wanted``; return the store, its id and its messages.

    None when the slot holds no such conversation (another user's, or one trimmed away).
    """
    _, conversations = _entry(store, slot)
    found = next((c for c in conversations if c["id"] == wanted), None)
    if found is None:
        return None
    return (
        _with(store, slot, found["id"], conversations),
        found["id"],
        clean_messages(found["messages"]),
    )
