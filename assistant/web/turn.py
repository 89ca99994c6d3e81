"""One chat turn: check the question and filters, stream the answer, then its Sources and Trace.

`make_responder` returns the generator Gradio calls for each question. The answer
streams as text with provisional Sources (an `assistant.session.turn.AnswerTurn`); the
final update shows its `Outcome`: the checked Sources and a collapsed "Trace", the
audit record's id on the message. Stopping an answer (the Stop button or a closed tab)
makes Gradio close the generator; its ``finally`` closes the turn, which closes the
upstream HTTP stream. Nothing per user lives on module globals.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from assistant.session import AnswerTurn, Delta, Desk, Failed, Outcome, Problem, Request
from assistant.types import ANONYMOUS, Answer, SearchResult, User
from assistant.users import Directory
from assistant.web.answer_view import (
    FAILED_MESSAGE,
    NO_INDEX_MESSAGE,
    filter_note,
    filter_words,
    problem_words,
)
from assistant.web.changes import ChangeFeed
from assistant.web.conversations import slot_of
from assistant.web.feedback import RECORD_PREFIX, ChatAudit, owner_of
from assistant.web.format import linked_markers, trace_markdown
from assistant.web.identity import user_of
from assistant.web.in_flight import InFlight, browser_of
from assistant.web.messages import (
    answer_messages,
    finished,
    no_match_messages,
    pending_sources,
)
from assistant.web.suggestion_view import Suggest, with_follow_ups
from assistant.web.trace import ChunkNames

__all__ = [
    "FAILED_MESSAGE",
    "NO_INDEX_MESSAGE",
    "Catalog",
    "FilterChoices",
    "Responder",
    "as_list",
    "make_responder",
]

logger = logging.getLogger(__name__)

UPDATE_INTERVAL_S = 0.05

Responder = Callable[..., Iterator[list[gr.ChatMessage]]]
# The current documents and tags a user may read, for the filters.
FilterChoices = tuple[Sequence[tuple[str, str]], Sequence[str]]
Catalog = Callable[[User], FilterChoices]


@dataclass(slots=True)
class _Shown:
    """What the chat adds around an answer and who asked.

    The filters in words, chunk names for the trace, the audit log that records
    the answer, the change list that marks recently updated sources, the user.
    """

    filters: str = ""
    names: ChunkNames | None = None
    no_match_note: str = ""
    audit: ChatAudit | None = None
    changes: ChangeFeed | None = None
    user: User = field(default=ANONYMOUS)
    trace: bool = True
    owner: str = ""
    suggest: Suggest | None = None


def make_responder(
    desk: Desk,
    *,
    names: ChunkNames | None = None,
    directory: Directory | None = None,
    audit: ChatAudit | None = None,
    changes: ChangeFeed | None = None,
    suggest: Suggest | None = None,
    in_flight: InFlight | None = None,
) -> Responder:
    """Return the chat generator Gradio calls with (message, history, sources, tags, k).

    Args:
        desk: Reads each question into a request (refusing what it must) and answers it;
            its settings give the default ``k`` and the UI's own host for links.
        names: Returns "Title > Section" for a chunk id, for the trace.
        directory: Resolves each request's user (None: everyone is anonymous).
        audit: Takes the thumbs on each answer the desk recorded; None takes none.
        changes: Marks sources whose section changed lately ("updated on DATE").
        suggest: Offers follow-up questions after an answer (None offers none).
        in_flight: Keeps each turn as it streams, for a reload to take back (None: not kept).

    The Trace follows an answer for administrators, or for everyone when
    ``settings.ui.trace`` says so.

    Returns:
        A generator function yielding the chat messages of one answer.
    """
    settings = desk.settings

    def respond(
        message: str,
        history: list[dict[str, Any]],
        sources: list[str] | None = None,
        tags: list[str] | None = None,
        k: float | None = None,
        request: gr.Request | None = None,
    ) -> Iterator[list[gr.ChatMessage]]:
        user = user_of(request, directory)
        asked = desk.request(
            message, history=history, k=k, sources=as_list(sources), tags=as_list(tags), user=user
        )
        if isinstance(asked, Problem):
            yield [gr.ChatMessage(content=problem_words(asked))]
            return
        titles = _titles(desk, user)
        shown = _Shown(filters=filter_words(asked.filters, titles), names=names)
        shown.no_match_note = filter_note(asked.filters, titles)
        shown.audit, shown.changes, shown.user = audit, changes, user
        shown.suggest = suggest
        # Retrieval internals are for administrators unless the setting says everyone.
        shown.trace = settings.ui.trace == "everyone" or user.is_admin
        shown.owner = owner_of(user, getattr(request, "session_hash", None))
        updates = _answer(desk, asked, shown=shown)
        if in_flight is None:
            yield from updates
        else:
            key = browser_of(request, slot_of(user))
            yield from in_flight.recorded(key, message, updates)

    return respond


def as_list(value: object) -> list[Any]:
    """Return a filter value as a list: API clients may send one string or nothing."""
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _titles(desk: Desk, user: User) -> dict[str, str]:
    visible = desk.visible(user)
    return dict(visible[0]) if visible else {}


def _answer(desk: Desk, asked: Request, *, shown: _Shown) -> Iterator[list[gr.ChatMessage]]:
    turn = desk.ask(asked, door="ui")
    if isinstance(turn, Problem):
        yield [gr.ChatMessage(content=problem_words(turn))]
        return
    try:
        yield from _stream(turn, asked.question, shown=shown)
    finally:
        turn.close()


def _stream(turn: AnswerTurn, question: str, *, shown: _Shown) -> Iterator[list[gr.ChatMessage]]:
    text, last_update = "", 0.0
    # Shown while the answer streams, so a stopped answer's [n] still point somewhere.
    pending = _pending(turn.result, question)
    for event in turn:
        if isinstance(event, Delta):
            text += event.text
            # Each update makes Gradio diff and send the whole message list; with
            # many users streaming at once, coalescing deltas keeps first tokens fast.
            now = time.perf_counter()
            if now - last_update >= UPDATE_INTERVAL_S:
                last_update = now
                yield [gr.ChatMessage(content=_with_banner(turn.banner, text)), *pending]
        elif isinstance(event, Failed):
            failed = (
                f"{_with_banner(turn.banner, event.partial)}\n\n*{problem_words(event.problem)}*"
            )
            yield [gr.ChatMessage(content=failed), *finished(pending)]
        else:
            # The checked answer drops citation markers that point at no source; its
            # record was written once (the record id rides on the message, for the thumbs).
            yield _finished(event.outcome, shown)


def _finished(outcome: Outcome, shown: _Shown) -> list[gr.ChatMessage]:
    messages = _final_messages(outcome, shown)
    if outcome.record_id and shown.audit is not None:
        shown.audit.own(outcome.record_id, shown.owner)
        messages[0].metadata = {"id": RECORD_PREFIX + outcome.record_id}
    if shown.trace:
        messages.append(_trace_message(outcome, shown))
    # Gradio shows the options of a turn's last message: the follow-ups go there.
    answered = not (outcome.result.no_good_match or outcome.answer.not_covered)
    return with_follow_ups(
        messages, outcome.answer, shown.user, shown.suggest if answered else None
    )


def _final_messages(outcome: Outcome, shown: _Shown) -> list[gr.ChatMessage]:
    answer = outcome.answer
    if outcome.result.no_good_match or answer.not_covered:
        return no_match_messages(outcome.closest, outcome.no_match_reason, shown.no_match_note)
    updated = shown.changes.updated_on if shown.changes else None
    # Each [n] links to its passage (the page opens it in place).
    body = _with_banner(outcome.banner, linked_markers(outcome.shown, answer))
    return answer_messages(answer, body, updated=updated)


def _with_banner(banner: str, text: str) -> str:
    # The label of an offline answer is data; the chat shows it as the first paragraph.
    return f"{banner}\n\n{text}" if banner else text


def _trace_message(outcome: Outcome, shown: _Shown) -> gr.ChatMessage:
    timings = {name: ms / 1000 for name, ms in outcome.door_timings().items()}
    trace = trace_markdown(
        question=outcome.question,
        query=outcome.query,
        lines=outcome.trace,
        timings=timings,
        names=shown.names,
        filters=shown.filters,
        reasoning=outcome.reasoning,
    )
    return gr.ChatMessage(content=trace, metadata={"title": "Trace", "status": "done"})


def _pending(result: SearchResult, question: str) -> list[gr.ChatMessage]:
    if not result.hits or result.no_good_match:
        return []
    return pending_sources(Answer(question, "", result.hits, citations=()))
