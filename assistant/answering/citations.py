"""Check an answer's ``[n]`` citations against the sources the prompt numbered.

``[n]``, ``[n, m]`` and ``[n][m]`` are recognised. Numbers that point at no
source are removed from the text (and logged). Each sentence that cites
sources is compared with their text: most of its content words, and every
number it states, must appear there, otherwise it is listed as unsupported.
A model answer's sentences are also checked against all the sources, cited or
not (`assistant.answering.grounding`), and the flags are shown in the text.
This is a lexical check: it catches invented figures and citations to the
wrong source, not subtle paraphrase errors.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from assistant.answering.grounding import (
    NO_CITATION_WARNING,
    closest_unit,
    evidence_text,
    mark_sentences,
    says_not_covered,
    ungrounded,
)
from assistant.types import Answer, Citation, Hit
from assistant.words import content_words

__all__ = [
    "MARKER",
    "check_answer",
    "cited_numbers",
]

logger = logging.getLogger(__name__)

MARKER = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\](?!\()")
# A sentence ends at . ! or ? (plus any markers placed after it) or at a line end.
_SENTENCE = re.compile(r"[^\n]+?(?:[.!?]+(?:\s*\[\d[\d,\s]*\])*(?=\s)|$)", re.M)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SUPPORT_THRESHOLD = 0.5


def cited_numbers(text: str) -> list[int]:
    """Return the citation numbers in ``text`` in order of appearance (with repeats)."""
    return [int(n) for m in MARKER.finditer(text) for n in m.group(1).split(",")]


def check_answer(
    question: str,
    text: str,
    sources: Sequence[Hit],
    *,
    offline: bool = False,
    grounded_only: bool = False,
) -> Answer:
    """Resolve the ``[n]`` markers of ``text`` against ``sources`` (``[1]`` is ``sources[0]``).

    Args:
        question: The question answered.
        text: The answer as the model wrote it.
        sources: The prompt's numbered sources.
        offline: Whether the answer came from the extractive mode (it quotes the
            sources, so only its citations are checked).
        grounded_only: Replace each flagged sentence of a model answer by the closest
            quoted source sentence instead of marking it.

    Returns:
        The answer with invalid markers removed and, for a model answer, each flagged
        sentence marked inline (or replaced) and a warning on top when it cites
        nothing. ``sources`` keeps every prompt source so that ``[n]`` stays
        ``sources[n - 1]``; ``citations`` lists the cited ones in number order.
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
    if offline:
        flagged = unsupported_sentences(cleaned, sources)
        not_covered = False
    else:
        flagged = model_unsupported_sentences(question, cleaned, sources)
        not_covered = says_not_covered(cleaned)
    shown = cleaned
    if not offline and not not_covered:
        shown = _show_flags(cleaned, flagged, sources, grounded_only=grounded_only)
    numbers = sorted(set(cited_numbers(shown)))
    if not offline and not not_covered and not numbers and sources:
        shown = f"{NO_CITATION_WARNING}\n\n{shown}"
    return Answer(
        question=question,
        text=shown,
        sources=tuple(sources),
        citations=tuple(Citation(number=n, hit=sources[n - 1]) for n in numbers),
        invalid_citation_numbers=tuple(sorted(set(invalid))),
        unsupported_sentences=flagged,
        offline=offline,
        not_covered=not_covered,
    )


def unsupported_sentences(text: str, sources: Sequence[Hit]) -> tuple[str, ...]:
    """Return the citing sentences of ``text`` that their cited sources do not support."""
    flagged = []
    for sentence in _sentences(text):
        numbers = {n for n in cited_numbers(sentence) if 1 <= n <= len(sources)}
        if numbers and not _supported(sentence, [sources[n - 1] for n in sorted(numbers)]):
            flagged.append(sentence)
    return tuple(flagged)


def model_unsupported_sentences(
    question: str, text: str, sources: Sequence[Hit]
) -> tuple[str, ...]:
    """Return the sentences of a model answer that the sources do not support.

    A citing sentence must be supported by the sources it cites (`unsupported_sentences`);
    any sentence, cited or not, is flagged when it states a figure or a name that no
    prompt source (nor the question) contains.
    """
    evidence = evidence_text(sources)
    cited = set(unsupported_sentences(text, sources))
    return tuple(
        sentence
        for sentence in _sentences(text)
        if sentence in cited
        or ungrounded(MARKER.sub(" ", sentence), evidence=evidence, question=question)
    )


def _show_flags(
    text: str, flagged: Sequence[str], sources: Sequence[Hit], *, grounded_only: bool
) -> str:
    if not grounded_only:
        return mark_sentences(text, flagged)
    for sentence in flagged:
        closest = closest_unit(sentence, sources)
        quote = f"“{closest[0]}” [{closest[1]}]" if closest else ""
        text = text.replace(sentence, quote, 1)
    return text.strip()


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
