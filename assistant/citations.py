"""Check an answer's ``[n]`` citations against the sources the prompt numbered.

``[n]``, ``[n, m]`` and ``[n][m]`` are recognised. Numbers that point at no
source are removed from the text (and logged). Each sentence that cites
sources is compared with their text: most of its content words, and every
number it states, must appear there, otherwise it is listed as unsupported.
This is a lexical check: it catches invented figures and citations to the
wrong source, not subtle paraphrase errors.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from assistant.types import Answer, Citation, Hit
from assistant.uiformat import doc_link, escape_markdown

__all__ = [
    "MARKER",
    "check_answer",
    "cited_numbers",
    "content_words",
    "render_sources_markdown",
]

logger = logging.getLogger(__name__)

MARKER = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\](?!\()")
# A sentence ends at . ! or ? (plus any markers placed after it) or at a line end.
_SENTENCE = re.compile(r"[^\n]+?(?:[.!?]+(?:\s*\[\d[\d,\s]*\])*(?=\s)|$)", re.M)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SUPPORT_THRESHOLD = 0.5
_SNIPPET_CHARS = 280

_STOPWORD_TEXT = """a about above after again all also am an and any are as at be because been
    before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers him his how i if in into is it its
    itself just may me might more most must my no nor not now of off on once only or other
    our out over own same shall she should so some such than that the their them then there
    these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours per"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def content_words(text: str) -> set[str]:
    """Return the lower-cased, crudely stemmed words of ``text`` minus stopwords."""
    words = (w.lower() for w in _WORD.findall(text))
    return {_stem(w) for w in words if w not in STOPWORDS and not w.isdigit()}


def cited_numbers(text: str) -> list[int]:
    """Return the citation numbers in ``text`` in order of appearance (with repeats)."""
    return [int(n) for m in MARKER.finditer(text) for n in m.group(1).split(",")]


def check_answer(
    question: str, text: str, sources: Sequence[Hit], *, offline: bool = False
) -> Answer:
    """Resolve the ``[n]`` markers of ``text`` against ``sources`` (``[1]`` is ``sources[0]``).

    Args:
        question: The question answered.
        text: The answer as the model wrote it.
        sources: The prompt's numbered sources.
        offline: Whether the answer came from the extractive mode.

    Returns:
        The answer with invalid markers removed. ``sources`` keeps every prompt
        source so that ``[n]`` stays ``sources[n - 1]``; ``citations`` lists the
        cited ones in number order.
    """
    invalid: list[int] = []

    def keep_valid(match: re.Match[str]) -> str:
        numbers = [int(n) for n in match.group(1).split(",")]
        good = [n for n in numbers if 1 <= n <= len(sources)]
        invalid.extend(n for n in numbers if n not in good)
        return "".join(f"[{n}]" for n in good)

    cleaned = re.sub(r"[ \t]+(?=[.,;:!?]|$)", "", MARKER.sub(keep_valid, text), flags=re.M)
    if invalid:
        logger.warning("removed citations to missing sources: %s", sorted(set(invalid)))
    numbers = sorted(set(cited_numbers(cleaned)))
    return Answer(
        question=question,
        text=cleaned,
        sources=tuple(sources),
        citations=tuple(Citation(number=n, hit=sources[n - 1]) for n in numbers),
        invalid_citation_numbers=tuple(sorted(set(invalid))),
        unsupported_sentences=unsupported_sentences(cleaned, sources),
        offline=offline,
    )


def unsupported_sentences(text: str, sources: Sequence[Hit]) -> tuple[str, ...]:
    """Return the citing sentences of ``text`` that their cited sources do not support."""
    flagged = []
    for sentence in _sentences(text):
        numbers = {n for n in cited_numbers(sentence) if 1 <= n <= len(sources)}
        if numbers and not _supported(sentence, [sources[n - 1] for n in sorted(numbers)]):
            flagged.append(sentence)
    return tuple(flagged)


def render_sources_markdown(answer: Answer, *, uncited: tuple[Hit, ...] = ()) -> str:
    """Render the cited sources, then a collapsed list of hits retrieved but not cited.

    Each cited entry shows the title, heading path, page, effective date,
    score, a snippet and a link to ``/doc/<source>#<anchor>``. Document text is
    escaped, so it cannot render as links, images or HTML.
    """
    entries = [_cited_entry(c.number, c.hit) for c in answer.citations]
    if uncited:
        items = "\n".join(
            f"- {escape_markdown(hit.title)} — {escape_markdown(hit.chunk.breadcrumb)} "
            f"(score {hit.score:.2f}) [open]({doc_link(hit)})"
            for hit in uncited
        )
        entries.append(
            f"<details><summary>Also retrieved ({len(uncited)})</summary>\n\n{items}\n\n</details>"
        )
    return "\n\n".join(entries)


def _cited_entry(number: int, hit: Hit) -> str:
    facts = [escape_markdown(hit.chunk.breadcrumb)]
    if hit.chunk.page:
        facts.append(f"page {hit.chunk.page}")
    if hit.effective_date:
        facts.append(f"effective {escape_markdown(hit.effective_date)}")
    facts.append(f"score {hit.score:.2f}")
    snippet = " ".join(hit.chunk.body.split())
    if len(snippet) > _SNIPPET_CHARS:
        snippet = snippet[:_SNIPPET_CHARS].rsplit(" ", 1)[0] + " …"
    return (
        f"**[{number}] {escape_markdown(hit.title)}** — {' · '.join(facts)}  \n"
        f"> {escape_markdown(snippet)}  \n"
        f"[Open document]({doc_link(hit)})"
    )


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def _supported(sentence: str, hits: Sequence[Hit]) -> bool:
    evidence = " ".join(
        f"{hit.title} {hit.chunk.breadcrumb} {hit.section_text} {hit.chunk.body}" for hit in hits
    )
    claim = MARKER.sub(" ", sentence)
    numbers = set(_NUMBER.findall(claim))
    if not numbers <= set(_NUMBER.findall(evidence)):
        return False
    words = content_words(claim)
    if not words:
        return True
    overlap = len(words & content_words(evidence)) / len(words)
    return overlap >= _SUPPORT_THRESHOLD


def _stem(word: str) -> str:
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word
