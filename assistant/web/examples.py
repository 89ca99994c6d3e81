"""Example questions for the landing page, drawn from the loaded corpus.

Hard-coded examples only fit the corpus they were written for: on another one the
landing page offered questions the index cannot answer. The default therefore comes
from the index itself: FAQ entries (question headings) first, else section headings
turned into questions, each kept only when searching it finds a good match in the
document it came from. ``ASSISTANT_EXAMPLES`` replaces them with configured questions.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence

from assistant.errors import AssistantError
from assistant.protocols import Searcher
from assistant.types import Chunk, IndexSnapshot

__all__ = ["DISABLED", "MAX_EXAMPLES", "corpus_examples", "pick_examples", "section_question"]

logger = logging.getLogger(__name__)

MAX_EXAMPLES = 4
DISABLED = "none"
# Each candidate costs one search at start-up; this caps the cost on a large corpus.
MAX_TRIES = 16
MAX_CHARS = 90
FAQ_PER_DOCUMENT = 2
# Headings every policy has; as questions they say nothing about this corpus.
_GENERIC = frozenset(
    [
        "purpose",
        "scope",
        "introduction",
        "overview",
        "summary",
        "definitions",
        "definition",
        "contents",
        "background",
        "policy",
        "general",
        "references",
        "contact",
        "contacts",
        "appendix",
        "annex",
        "version",
        "history",
        "revision",
        "history",
        "review",
        "related",
        "documents",
        "responsibilities",
        "table",
        "of",
        "contents",
        "notes",
        "about",
        "faq",
        "frequently",
        "asked",
        "questions",
        "section",
        "sections",
        "other",
        "misc",
        "miscellaneous",
        "examples",
        "example",
        "details",
        "more",
        "information",
        "resources",
        "links",
        "note",
    ]
)
# A title ending in one of these names a document, so "the <title>" reads as English
# ("the Staff Leave Policy"); any other title ("How We Work") is no noun to say "the" to.
_DOCUMENT_NOUNS = frozenset(
    {
        "policy",
        "policies",
        "procedure",
        "procedures",
        "handbook",
        "guide",
        "guidelines",
        "terms",
        "statement",
        "plan",
        "schedule",
        "charter",
        "code",
        "agreement",
        "notice",
        "rules",
        "standard",
        "standards",
        "faq",
        "manual",
        "regulations",
        "framework",
    }
)
_GENERIC_PHRASES = frozenset({"version history", "revision history", "table of contents"})
# Words that already make a noun phrase definite or countable ("our role of ..." needs no "the").
_DETERMINERS = frozenset(
    {"the", "a", "an", "our", "your", "this", "these", "that", "those", "each", "all", "any"}
)
_JOINERS = frozenset({"and", "of", "the", "a", "an", "to", "for", "in", "on", "with"})
# "1.2 ", "A. ", "iv) " before a heading's words.
_ENUMERATION = re.compile(r"^(?:[\d.]+|[A-Z]\.|[ivxIVX]+\))\s+")
_WORDS = re.compile(r"[A-Za-z][A-Za-z'-]*")


def pick_examples(
    configured: Sequence[str], snapshot: IndexSnapshot | None, searcher: Searcher | None
) -> tuple[str, ...]:
    """Return the configured examples, or ones drawn from the corpus when none are set."""
    if configured:
        return () if [q.lower() for q in configured] == [DISABLED] else tuple(configured)
    if snapshot is None or searcher is None:
        return ()
    return corpus_examples(snapshot, searcher)


def corpus_examples(
    snapshot: IndexSnapshot, searcher: Searcher, *, limit: int = MAX_EXAMPLES
) -> tuple[str, ...]:
    """Return up to ``limit`` questions the corpus answers, from different documents first.

    Args:
        snapshot: The loaded index (chunks and document titles).
        searcher: Checks each candidate: it must find a good match in its own document.
        limit: How many to return at most.
    """
    kept: list[str] = []
    tries = 0
    for question, source in _candidates(snapshot):
        if len(kept) >= limit or tries >= MAX_TRIES:
            break
        tries += 1
        if _answers(searcher, question, source):
            kept.append(question)
    logger.info("example questions from the corpus: %d of %d tried", len(kept), tries)
    return tuple(kept)


def _answers(searcher: Searcher, question: str, source: str) -> bool:
    try:
        result = searcher.search(question, k=3)
    except AssistantError as exc:
        logger.warning("cannot check the example %r: %s", question, exc)
        return False
    return not result.no_good_match and bool(result.hits) and result.hits[0].chunk.source == source


def _candidates(snapshot: IndexSnapshot) -> Iterable[tuple[str, str]]:
    """Yield ``(question, source)``: FAQ questions, then headings, one document at a time."""
    faq: dict[str, list[str]] = {}
    headings: dict[str, list[str]] = {}
    for chunk in snapshot.chunks:
        title = snapshot.docs[chunk.source].title if chunk.source in snapshot.docs else ""
        for kind, question in _questions_of(chunk, title):
            bucket = (faq if kind == "faq" else headings).setdefault(chunk.source, [])
            if question not in bucket:
                bucket.append(question)
    # FAQ questions read most naturally, but one FAQ document must not fill the page.
    yield from _round_robin(
        {source: questions[:FAQ_PER_DOCUMENT] for source, questions in faq.items()}
    )
    yield from _round_robin(headings)


def _questions_of(chunk: Chunk, title: str) -> Iterable[tuple[str, str]]:
    for heading in chunk.heading_path[1:]:
        text = _ENUMERATION.sub("", " ".join(heading.split()))
        # "What is this?" needs its heading path to make sense; four words rarely do.
        if text.endswith("?") and len(_WORDS.findall(text)) >= 4 and len(text) <= MAX_CHARS:
            yield "faq", text
    if len(chunk.heading_path) >= 2:
        question = _heading_question(chunk.heading_path[-1], title or chunk.heading_path[0])
        if question:
            yield "heading", question


def _heading_question(heading: str, title: str) -> str:
    """Return "What does the <title> say about <heading>?", or "" for a heading no topic."""
    text = _ENUMERATION.sub("", " ".join(heading.split())).strip(" :.")
    words = _WORDS.findall(text)
    if text.endswith("?") or not 1 <= len(words) <= 6 or text.lower() in _GENERIC_PHRASES:
        return ""
    if all(word.lower() in _GENERIC or word.lower() in _JOINERS for word in words):
        return ""
    # "Remotely", "Quickly": a lone adverb is how a section is done, not what it is about.
    if len(words) == 1 and words[0].lower().endswith("ly"):
        return ""
    # Title Case reads oddly mid-sentence; acronyms and names with inner capitals stay.
    topic = _with_article(" ".join(w.lower() if w[1:].islower() else w for w in text.split()))
    title_words = _WORDS.findall(title)
    question = f"What do the policies say about {topic}?"
    if title_words and title_words[-1].lower() in _DOCUMENT_NOUNS:
        named = f"What does the {title.removeprefix('The ')} say about {topic}?"
        question = named if len(named) <= MAX_CHARS else question
    return question if len(question) <= MAX_CHARS else ""


def _with_article(topic: str) -> str:
    """Return ``topic`` with "the" before a noun that "of" narrows: "the role of the board"."""
    words = topic.split()
    if len(words) >= 3 and words[1] == "of" and words[0].lower() not in _DETERMINERS:
        return f"the {topic}"
    return topic


def section_question(heading_path: Sequence[str], title: str) -> str:
    """Return the question a person would ask about a section, or "" when it names no topic.

    A heading that is a question already (an FAQ entry) is asked as it stands.
    """
    if len(heading_path) < 2:
        return ""
    text = _ENUMERATION.sub("", " ".join(heading_path[-1].split()))
    if text.endswith("?"):
        return text if len(_WORDS.findall(text)) >= 4 and len(text) <= MAX_CHARS else ""
    return _heading_question(heading_path[-1], title or heading_path[0])


def _round_robin(by_source: dict[str, list[str]]) -> Iterable[tuple[str, str]]:
    queues = {source: list(questions) for source, questions in sorted(by_source.items())}
    while queues:
        for source in list(queues):
            yield queues[source].pop(0), source
            if not queues[source]:
                del queues[source]
