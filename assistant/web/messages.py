"""The chat messages of one answer: the answer, its Sources and their stopped state.

An answer is a plain message followed by a collapsible "Sources" message (while
the answer streams, "Sources (answer in progress)"). A stopped answer keeps
what it showed; `mark_stopped` says so and closes the in-progress Sources.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr

from assistant.types import Answer, Hit
from assistant.web.answer_view import no_match_body, sources_collapsed, sources_title
from assistant.web.format import sources_markdown

__all__ = [
    "IN_PROGRESS",
    "STOPPED_NOTE",
    "answer_messages",
    "finished",
    "in_progress",
    "mark_stopped",
    "no_match_messages",
    "pending_sources",
]

STOPPED_NOTE = "*Stopped: the answer above is incomplete.*"
IN_PROGRESS = "Sources (answer in progress)"


def pending_sources(provisional: Answer) -> list[gr.ChatMessage]:
    """Return the Sources shown while an answer streams (its hits, none cited yet)."""
    metadata: Any = {"title": IN_PROGRESS, "status": "done"}
    return [gr.ChatMessage(content=sources_markdown(provisional), metadata=metadata)]


def finished(pending: list[gr.ChatMessage]) -> list[gr.ChatMessage]:
    """Return the provisional Sources retitled: the answer ended early, they still apply."""
    return [
        gr.ChatMessage(content=message.content, metadata={"title": "Sources", "status": "done"})
        for message in pending
    ]


def answer_messages(
    answer: Answer, body: str, *, updated: Callable[[Hit], str] | None = None
) -> list[gr.ChatMessage]:
    """Return the answer and, if it has any, its Sources (collapsed when short and cited)."""
    messages = [gr.ChatMessage(content=body)]
    if not answer.sources:
        return messages
    listing = sources_markdown(answer, updated=updated)
    metadata: Any = {"title": "Sources"}
    if sources_collapsed(answer, body=body, sources_text=listing):
        # Short and cited: a one-line summary, the entries one click away.
        metadata = {"title": sources_title(answer), "status": "done"}
    messages.append(gr.ChatMessage(content=listing, metadata=metadata))
    return messages


def no_match_messages(closest: Sequence[Hit], reason: str, note: str) -> list[gr.ChatMessage]:
    """Return a no-good-match answer: the closest sections listed in it, then the filter note."""
    text = no_match_body(closest, reason)
    if note:
        text += "\n\n" + note
    return [gr.ChatMessage(content=text)]


def mark_stopped(history: object, *, note: str = STOPPED_NOTE) -> list[Any]:
    """Return the chat history with its last answer marked as stopped, sources kept.

    Stopping ends the answer generator before its final update, so the last answer
    text and the provisional Sources stay as they were; this says so (``note``) and
    closes the Sources' "in progress" state.
    """
    if not isinstance(history, list):
        return []
    messages = [dict(m) if isinstance(m, dict) else m for m in history]
    answer_at = _last_answer(messages)
    if answer_at is None:
        return messages
    answer = messages[answer_at]
    content = answer.get("content")
    if isinstance(content, str) and note not in content:
        answer["content"] = f"{content}\n\n{note}"
    elif isinstance(content, list) and note not in str(content):
        # Gradio 6 sends message content as typed parts.
        answer["content"] = [*content, {"type": "text", "text": f"\n\n{note}"}]
    for message in messages[answer_at + 1 :]:
        metadata = message.get("metadata") if isinstance(message, dict) else None
        if isinstance(metadata, dict) and metadata.get("title") == IN_PROGRESS:
            message["metadata"] = {**metadata, "title": "Sources", "status": "done"}
    return messages


def in_progress(history: object) -> bool:
    """Return whether ``history`` holds an answer still marked as in progress (a stopped one)."""
    return isinstance(history, list) and any(
        isinstance(m, dict)
        and isinstance(m.get("metadata"), dict)
        and m["metadata"].get("title") == IN_PROGRESS
        for m in history
    )


def _last_answer(messages: list[Any]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, dict):
            continue
        if message.get("role") == "user":
            return None
        metadata = message.get("metadata")
        if message.get("role") == "assistant" and not (
            isinstance(metadata, dict) and metadata.get("title")
        ):
            return index
    return None
