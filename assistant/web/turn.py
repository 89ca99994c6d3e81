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

from assistant.config import Settings
from assistant.errors import AssistantError, IndexNotFoundError, StoreError
from assistant.protocols import ChatService
from assistant.session.request import MAX_QUESTION_CHARS, check_question
from assistant.session.turn import AnswerTurn, Outcome, start_turn
from assistant.types import ANONYMOUS, Answer, SearchFilters, SearchResult, Turn, User
from assistant.users import Directory
from assistant.web.answer_view import filter_note, filter_words
from assistant.web.changes import ChangeFeed
from assistant.web.conversations import slot_of
from assistant.web.feedback import RECORD_PREFIX, ChatAudit, owner_of
from assistant.web.format import (
    escape_markdown,
    history_to_turns,
    linked_markers,
    trace_markdown,
)
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
from assistant.words import valid_unicode

__all__ = [
    "FAILED_MESSAGE",
    "MAX_QUESTION_CHARS",
    "NO_INDEX_MESSAGE",
    "Catalog",
    "FilterChoices",
    "Responder",
    "as_list",
    "make_responder",
]

logger = logging.getLogger(__name__)

NO_INDEX_MESSAGE = (
    "There is no search index yet. Run `python ingest.py` to index the policy documents; "
    "the chat uses the new index from the next question on, with no restart."
)
FAILED_MESSAGE = "Sorry, the assistant could not answer: {reason}"
UNKNOWN_FILTER_MESSAGE = (
    "These filter values are not in the index: {values}. Choose documents and tags from "
    "the Filters lists (reload the page to see newly indexed documents)."
)
UPDATE_INTERVAL_S = 0.05

TOO_LONG_MESSAGE = (
    "Your question is {length:,} characters long; please shorten it to at most "
    f"{MAX_QUESTION_CHARS:,} characters."
)

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
    service: ChatService,
    *,
    settings: Settings,
    catalog: Catalog | None = None,
    names: ChunkNames | None = None,
    directory: Directory | None = None,
    audit: ChatAudit | None = None,
    changes: ChangeFeed | None = None,
    suggest: Suggest | None = None,
    in_flight: InFlight | None = None,
) -> Responder:
    """Return the chat generator Gradio calls with (message, history, sources, tags, k).

    Args:
        service: Answers questions.
        settings: Supplies the default ``k`` and the UI's own host for links.
        catalog: Returns the current ``(sources, tags)`` a user may read; filter values
            outside it are refused with a message. None accepts any value.
        names: Returns "Title > Section" for a chunk id, for the trace.
        directory: Resolves each request's user (None: everyone is anonymous).
        audit: Records each answer (and gives its message the record id); None records nothing.
        changes: Marks sources whose section changed lately ("updated on DATE").
        suggest: Offers follow-up questions after an answer (None offers none).
        in_flight: Keeps each turn as it streams, for a reload to take back (None: not kept).

    The Trace follows an answer for administrators, or for everyone when
    ``settings.ui.trace`` says so.

    Returns:
        A generator function yielding the chat messages of one answer.
    """

    def respond(
        message: str,
        history: list[dict[str, Any]],
        sources: list[str] | None = None,
        tags: list[str] | None = None,
        k: float | None = None,
        request: gr.Request | None = None,
    ) -> Iterator[list[gr.ChatMessage]]:
        question, refusal = _checked_question(message)
        if refusal:
            yield [gr.ChatMessage(content=refusal)]
            return
        user = user_of(request, directory)
        wanted_sources, wanted_tags = as_list(sources), as_list(tags)
        unknown = _unknown_filters(catalog, user, wanted_sources, wanted_tags)
        if unknown:
            yield [gr.ChatMessage(content=UNKNOWN_FILTER_MESSAGE.format(values=unknown))]
            return
        filters = SearchFilters(sources=tuple(wanted_sources), tags=tuple(wanted_tags))
        titles = _titles(catalog, user)
        shown = _Shown(filters=filter_words(filters, titles), names=names)
        shown.no_match_note = filter_note(filters, titles)
        shown.audit, shown.changes, shown.user = audit, changes, user
        shown.suggest = suggest
        # Retrieval internals are for administrators unless the setting says everyone.
        shown.trace = settings.ui.trace == "everyone" or user.is_admin
        shown.owner = owner_of(user, getattr(request, "session_hash", None))
        top_k = _clamp_k(k, default=settings.retrieval.top_k)
        turns = history_to_turns(history)
        updates = _answer(service, question, turns, k=top_k, filters=filters, shown=shown)
        if in_flight is None:
            yield from updates
        else:
            key = browser_of(request, slot_of(user))
            yield from in_flight.recorded(key, question, updates)

    return respond


def _checked_question(message: object) -> tuple[str, str]:
    """Return ``(question, "")`` or ``("", why it is refused)``."""
    checked = check_question(message)
    if checked.problem == "empty":
        return "", "Please type a question."
    if checked.problem == "too long":
        return "", TOO_LONG_MESSAGE.format(length=checked.length)
    return checked.text, ""


def as_list(value: object) -> list[Any]:
    """Return a filter value as a list: API clients may send one string or nothing."""
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _unknown_filters(
    catalog: Catalog | None, user: User, sources: list[Any], tags: list[Any]
) -> str:
    """Return the filter values ``user`` cannot pick now, escaped and joined, or "".

    A document the user may not read is as unknown as one never indexed.
    """
    if catalog is None:
        return ""
    try:
        known_sources, known_tags = catalog(user)
    except AssistantError:
        return ""  # no index: the service says so
    names = {source for source, _ in known_sources}
    unknown = [v for v in sources if not isinstance(v, str) or v not in names]
    unknown += [v for v in tags if not isinstance(v, str) or v not in set(known_tags)]
    return ", ".join(escape_markdown(valid_unicode(str(value))) for value in unknown[:5])


def _titles(catalog: Catalog | None, user: User) -> dict[str, str]:
    if catalog is None:
        return {}
    try:
        sources, _ = catalog(user)
    except AssistantError:
        return {}
    return dict(sources)


def _clamp_k(k: float | None, *, default: int) -> int:
    if k is None:
        return default
    return min(max(int(k), 1), 10)


def _answer(
    service: ChatService,
    question: str,
    turns: Sequence[Turn],
    *,
    k: int,
    filters: SearchFilters,
    shown: _Shown,
) -> Iterator[list[gr.ChatMessage]]:
    audit = shown.audit.turn_audit() if shown.audit else None
    started = time.perf_counter()  # the first token counts from the question, search included
    try:
        turn = start_turn(
            service, question, turns, k=k, filters=filters, user=shown.user, audit=audit
        )
    except IndexNotFoundError:
        logger.warning("chat asked before an index exists")
        yield [gr.ChatMessage(content=NO_INDEX_MESSAGE)]
        return
    except AssistantError as exc:
        logger.warning("chat failed before streaming: %s", exc, exc_info=True)
        yield [gr.ChatMessage(content=FAILED_MESSAGE.format(reason=_short(exc)))]
        return
    try:
        yield from _stream(turn, question, started=started, shown=shown)
    finally:
        turn.close()


def _stream(
    turn: AnswerTurn, question: str, *, started: float, shown: _Shown
) -> Iterator[list[gr.ChatMessage]]:
    text, first, last_update = "", 0.0, 0.0
    # Shown while the answer streams, so a stopped answer's [n] still point somewhere.
    pending = _pending(turn.result, question)
    try:
        for delta in turn:
            now = time.perf_counter()
            first = first or now - started
            text += delta
            # Each update makes Gradio diff and send the whole message list; with
            # many users streaming at once, coalescing deltas keeps first tokens fast.
            if now - last_update >= UPDATE_INTERVAL_S:
                last_update = now
                yield [gr.ChatMessage(content=text), *pending]
        timings = {"first token": first, "total": time.perf_counter() - started}
        # The checked answer drops citation markers that point at no source; the
        # record is written here, once (the record id rides on the message, for the thumbs).
        outcome = turn.finish(timings_ms={name: s * 1000 for name, s in timings.items()})
    except AssistantError as exc:
        logger.warning("chat failed while streaming: %s", exc, exc_info=True)
        failed = f"{text}\n\n*{FAILED_MESSAGE.format(reason=_short(exc))}*"
        yield [gr.ChatMessage(content=failed), *finished(pending)]
        return
    messages = _final_messages(outcome, shown)
    if outcome.record_id and shown.audit is not None:
        shown.audit.own(outcome.record_id, shown.owner)
        messages[0].metadata = {"id": RECORD_PREFIX + outcome.record_id}
    if shown.trace:
        messages.append(_trace_message(outcome, shown, timings))
    # Gradio shows the options of a turn's last message: the follow-ups go there.
    answered = not (outcome.result.no_good_match or outcome.answer.not_covered)
    yield with_follow_ups(messages, outcome.answer, shown.user, shown.suggest if answered else None)


def _final_messages(outcome: Outcome, shown: _Shown) -> list[gr.ChatMessage]:
    answer, body = outcome.answer, outcome.shown
    if outcome.result.no_good_match or answer.not_covered:
        return no_match_messages(answer, body, shown.no_match_note)
    updated = shown.changes.updated_on if shown.changes else None
    # Each [n] links to its passage (the page opens it in place).
    return answer_messages(answer, linked_markers(body, answer), updated=updated)


def _trace_message(outcome: Outcome, shown: _Shown, timings: dict[str, float]) -> gr.ChatMessage:
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


STORE_DOWN_REASON = (
    "the document index cannot be reached right now. Try again in a minute; "
    "if it persists, tell the administrator (the server log has the details)."
)


def _short(exc: AssistantError) -> str:
    if isinstance(exc, StoreError):  # its message names the store's host or path (D12)
        return STORE_DOWN_REASON
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 300 else text[:300] + "…"
