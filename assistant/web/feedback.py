"""The chat's feedback hooks without gradio: who may rate an answer, thumbs and reasons.

The desk records each answer (`assistant.session`); the chat puts the record's id in
the answer message's metadata (``{"id": ...}``) and `ChatAudit.own` notes who asked,
so the id travels with the message, also into the browser's saved history. A thumb
on any message of an answer (the text, its sources or its trace) is traced back to
that id by `record_id_at`.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Literal

from assistant.session import AuditLog, utc_now
from assistant.types import ANONYMOUS, Feedback, User
from assistant.words import valid_unicode

__all__ = [
    "MAX_FEEDBACK_CHARS",
    "NO_RECORD",
    "RECORD_PREFIX",
    "ChatAudit",
    "owner_of",
    "record_id_at",
    "user_named",
]

logger = logging.getLogger(__name__)

MAX_FEEDBACK_CHARS = 2000
MAX_OWNED = 100_000  # answers whose owner is remembered (oldest forgotten first)
THANKS_UP = "Thanks: noted as a good answer."
THANKS_DOWN = "Thanks: noted. Tell us what was wrong (optional)."
THANKS_REASON = "Thanks: your feedback is stored with this answer."
WITHDRAWN = "Feedback withdrawn."
NO_RECORD = "This answer was not recorded, so feedback on it cannot be stored."


def user_named(name: str | None) -> User:
    """Return the user a login name stands for; no login is ``ANONYMOUS``."""
    return User(name=name) if name else ANONYMOUS


class ChatAudit:
    """Takes the feedback on the chat's recorded answers into an `AuditLog`.

    Args:
        log: Where feedback goes (written in the background).
    """

    def __init__(self, log: AuditLog) -> None:
        self.log = log
        # Who may rate each answer this process recorded (see `owner_of`): the page
        # sends the history, so a record id on it proves nothing (finding D7).
        self._owners: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def _owns(self, record_id: str, owner: str) -> bool:
        with self._lock:
            return bool(record_id) and self._owners.get(record_id) == owner

    def own(self, record_id: str, owner: str) -> None:
        """Note that only ``owner`` may rate the answer recorded as ``record_id``."""
        if not record_id:
            return
        with self._lock:
            self._owners[record_id] = owner
            while len(self._owners) > MAX_OWNED:
                self._owners.popitem(last=False)

    def rate(
        self, history: object, index: object, liked: object, *, user: User, owner: str = ""
    ) -> tuple[str, str]:
        """Store a thumb on the message at ``index``; return ``(record id, message)``.

        ``liked`` is Gradio's: True, False, or the text of another feedback option
        (stored as a thumbs down with that reason). The record id is "" when the
        message belongs to no answer this process recorded for ``owner``.
        """
        record_id = record_id_at(history, index)
        if not self._owns(record_id, owner):
            return "", NO_RECORD
        rating: Literal["up", "down"]
        if liked is True:
            rating, reason = "up", ""
        elif liked is False:
            rating, reason = "down", ""
        elif liked in ("", None):  # Gradio sends "" when a thumb is clicked off again
            self.log.withdraw(record_id, user=user.name)
            return "", WITHDRAWN
        else:
            rating, reason = "down", _clean(str(liked))
        self.log.feedback(Feedback(record_id, utc_now(), user.name, rating, reason=reason))
        return record_id, THANKS_UP if rating == "up" else THANKS_DOWN

    def explain(
        self, record_id: str, reason: str, correction: str, *, user: User, owner: str = ""
    ) -> str:
        """Store the reason and the right answer given after a thumbs down."""
        if not self._owns(record_id, owner):
            return NO_RECORD
        self.log.feedback(
            Feedback(
                record_id,
                utc_now(),
                user.name,
                "down",
                reason=_clean(reason),
                correction=_clean(correction),
            )
        )
        return THANKS_REASON


def owner_of(user: User, session: str | None) -> str:
    """Return who may rate an answer: the logged-in user, or (anonymous) the session."""
    if user.name and user != ANONYMOUS:
        return f"user:{user.name}"
    return f"session:{session}" if session else "session:?"


def _clean(text: object) -> str:
    return valid_unicode(text.strip())[:MAX_FEEDBACK_CHARS] if isinstance(text, str) else ""


def record_id_at(history: object, index: object) -> str:
    """Return the audit id of the answer the message at ``index`` belongs to, or "".

    Walks back from the message to the first one carrying an id in its
    metadata, stopping at the user's question (an earlier answer is not this one).
    """
    if isinstance(index, Sequence) and not isinstance(index, str) and index:
        index = index[0]
    if not isinstance(history, Sequence) or isinstance(history, str) or not isinstance(index, int):
        return ""
    if not 0 <= index < len(history):
        return ""
    for message in reversed(history[: index + 1]):
        if not isinstance(message, Mapping):
            message = {
                "role": getattr(message, "role", None),
                "metadata": getattr(message, "metadata", None),
            }
        if message.get("role") == "user":
            return ""
        metadata = message.get("metadata")
        found = metadata.get("id") if isinstance(metadata, Mapping) else None
        if isinstance(found, str) and found.startswith(RECORD_PREFIX):
            return found[len(RECORD_PREFIX) :]
    return ""


# Marks a metadata id as ours (Gradio uses ids for nested thoughts too).
RECORD_PREFIX = "audit:"
