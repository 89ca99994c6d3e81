"""The turn a browser is waiting for, kept on the server so a reload does not lose it.

The chat's conversations live in the browser and are saved when an answer's event
ends; a reload (or a closed tab) before then used to lose the question and the answer
so far (issue 39). `InFlight` keeps, per browser and user, the question and every
update of its answer as it streams (`recorded` wraps the responder's updates). The
next page load of that browser takes it back (`take`): the finished answer as it was,
or the answer so far with a note that it was interrupted, and the chat saves it as
part of the conversation, so it is also under Previous conversations.

A browser is told apart by the ``pa_browser`` cookie the page's head script sets (a
random id; `layout.HEAD`). Entries are bounded in number and age, and kept only in
this process's memory: nothing is written to disk.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from assistant.web.messages import mark_stopped

__all__ = ["BROWSER_COOKIE", "INTERRUPTED_NOTE", "InFlight", "browser_of"]

BROWSER_COOKIE = "pa_browser"
INTERRUPTED_NOTE = "*Interrupted: the page was reloaded while this answer was written.*"
NOT_STARTED_NOTE = (
    "*Interrupted: the page was reloaded before the answer came. Ask again to get it.*"
)
_MAX_ENTRIES = 2_000
_MAX_AGE_S = 3_600.0

Key = tuple[str, str]


@dataclass(slots=True)
class _Entry:
    question: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False
    at: float = field(default_factory=time.monotonic)


class InFlight:
    """The last turn of each browser and user until the page saves it or loads it back."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()

    def recorded(
        self, key: Key | None, question: str, updates: Iterator[list[gr.ChatMessage]]
    ) -> Generator[list[gr.ChatMessage], None, None]:
        """Yield ``updates`` unchanged, keeping each under ``key`` (None keeps nothing)."""
        if key is None:
            yield from updates
            return
        self._begin(key, question)
        for messages in updates:
            self._update(key, messages)
            yield messages
        self._finish(key)

    def take(self, key: Key | None) -> list[dict[str, Any]]:
        """Return the kept turn as chat messages and forget it; [] when there is none."""
        if key is None:
            return []
        with self._lock:
            self._expire()
            entry = self._entries.pop(key, None)
        if entry is None:
            return []
        question = {"role": "user", "content": entry.question}
        if not entry.messages:
            return [question, {"role": "assistant", "content": NOT_STARTED_NOTE}]
        turn = [question, *entry.messages]
        return turn if entry.done else mark_stopped(turn, note=INTERRUPTED_NOTE)

    def forget(self, key: Key | None) -> None:
        """Drop the kept turn: the page has saved it."""
        if key is not None:
            with self._lock:
                self._entries.pop(key, None)

    def _begin(self, key: Key, question: str) -> None:
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = _Entry(question)
            self._expire()

    def _update(self, key: Key, messages: Sequence[gr.ChatMessage]) -> None:
        kept = [_as_dict(message) for message in messages]
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                entry.messages = kept

    def _finish(self, key: Key) -> None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                entry.done = True

    def _expire(self) -> None:
        oldest = time.monotonic() - _MAX_AGE_S
        while self._entries and (
            len(self._entries) > _MAX_ENTRIES or next(iter(self._entries.values())).at < oldest
        ):
            self._entries.popitem(last=False)


def browser_of(request: gr.Request | None, slot: str) -> Key | None:
    """Return the key of a request's browser and user, or None without the cookie."""
    if request is None:
        return None
    cookies = getattr(request, "cookies", None) or {}
    browser = cookies.get(BROWSER_COOKIE) if hasattr(cookies, "get") else None
    if not isinstance(browser, str) or not 8 <= len(browser) <= 64:
        return None
    return browser, slot


def _as_dict(message: gr.ChatMessage) -> dict[str, Any]:
    kept: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.metadata:
        kept["metadata"] = dict(message.metadata)
    return kept
