"""Follow-up questions after an answer, from the headings next to the sections it cites.

Staff who asked about a section often want the one beside it ("Interest" then
"Repayment"). `follow_ups` offers up to three: the cited section's siblings nearest
to it in its document, then its subsections, each turned into a question as the
landing page's examples are (`examples.section_question`) and kept only when a
search as the asking user finds a good match in that same document, so every
suggestion is answerable from the corpus and names nothing the user may not read.
No model is asked: the same in offline and model mode (issue 30, item 11).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from assistant.errors import AssistantError
from assistant.protocols import Searcher
from assistant.types import ANONYMOUS, Answer, Chunk, Hit, IndexSnapshot, User
from assistant.web.examples import section_question

__all__ = ["MAX_FOLLOW_UPS", "Suggest", "follow_ups", "neighbour_paths", "suggester"]

logger = logging.getLogger(__name__)

MAX_FOLLOW_UPS = 3
# Each candidate costs one search after the answer; this caps the cost.
MAX_TRIES = 6

Path = tuple[str, ...]
Suggest = Callable[[Answer, User], tuple[str, ...]]


def suggester(snapshot_of: Callable[[], IndexSnapshot], searcher: Searcher) -> Suggest:
    """Return `follow_ups` over the index as it is when each answer finishes."""

    def suggest(answer: Answer, user: User) -> tuple[str, ...]:
        if not answer.citations:
            return ()
        try:
            snapshot = snapshot_of()
        except AssistantError as exc:
            logger.warning("no follow-up questions: %s", exc)
            return ()
        return follow_ups(answer, snapshot, searcher, user=user)

    return suggest


def neighbour_paths(chunks: Iterable[Chunk], source: str, cited: Path) -> list[Path]:
    """Return the heading paths next to ``cited`` in ``source``, nearest first.

    Siblings (same parent heading) by distance in the document, the next one
    before the previous one at equal distance; then the cited section's subsections.
    """
    order: list[Path] = []
    for chunk in sorted((c for c in chunks if c.source == source), key=lambda c: c.ordinal):
        if chunk.heading_path not in order:
            order.append(chunk.heading_path)
    if cited not in order or len(cited) < 2:
        return []
    at = order.index(cited)
    siblings = [
        (abs(i - at), i < at, path)
        for i, path in enumerate(order)
        if len(path) == len(cited) and path[:-1] == cited[:-1] and path != cited
    ]
    children = [p for p in order if len(p) == len(cited) + 1 and p[: len(cited)] == cited]
    return [path for _, _, path in sorted(siblings)] + children


def follow_ups(
    answer: Answer,
    snapshot: IndexSnapshot,
    searcher: Searcher,
    *,
    user: User = ANONYMOUS,
    limit: int = MAX_FOLLOW_UPS,
) -> tuple[str, ...]:
    """Return up to ``limit`` follow-up questions the corpus answers, nearest sections first.

    Args:
        answer: The finished answer; its cited sources say where to look.
        snapshot: The loaded index (every section's heading path, document titles).
        searcher: Checks each candidate, searching as ``user``.
        user: Who asked; a suggestion must find a good match among what they may read.
        limit: How many to return at most.
    """
    cited = [c.hit for c in answer.citations]
    cited_paths = {(h.chunk.source, h.chunk.heading_path) for h in cited}
    asked = {_normal(answer.question)}
    kept: list[str] = []
    tries = 0
    for question, source in _candidates(snapshot, cited, cited_paths):
        if len(kept) >= limit or tries >= MAX_TRIES:
            break
        if _normal(question) in asked:
            continue
        asked.add(_normal(question))
        tries += 1
        if _answers(searcher, question, source, user):
            kept.append(question)
    return tuple(kept)


def _candidates(
    snapshot: IndexSnapshot, cited: Sequence[Hit], cited_paths: set[tuple[str, Path]]
) -> Iterable[tuple[str, str]]:
    for hit in cited:
        chunk = hit.chunk
        meta = snapshot.docs.get(chunk.source)
        title = meta.title if meta else ""
        for path in neighbour_paths(snapshot.chunks, chunk.source, chunk.heading_path):
            if (chunk.source, path) in cited_paths:
                continue
            question = section_question(path, title)
            if question:
                yield question, chunk.source


def _answers(searcher: Searcher, question: str, source: str, user: User) -> bool:
    try:
        result = searcher.search(question, k=3, user=user)
    except AssistantError as exc:
        logger.warning("cannot check the follow-up %r: %s", question, exc)
        return False
    return not result.no_good_match and bool(result.hits) and result.hits[0].chunk.source == source


def _normal(question: str) -> str:
    return " ".join(question.lower().strip(" ?").split())
