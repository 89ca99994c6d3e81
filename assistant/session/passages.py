"""Which passage of a source each citation marker relies on, and the numbers a reader sees.

A hit's chunk names the first section it covers ("Purpose"), while the sentence the
answer cites may sit in a later sub-section its expanded text holds ("Interest").
Each ``[n]`` of an answer carries its own passage: the source sentence sharing the most
words with the answer sentence that marker follows, so two markers of one source that
quote two of its sentences open two places (issue 39). The viewer link carries it and
the viewer scrolls to, and highlights, the place it occurs.

Sources are shown numbered 1..n in the order the answer first cites them
(`shown_numbers`), whatever their rank in retrieval; `renumbered` rewrites a text so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from assistant.session.plain import plain_text
from assistant.types import Answer, Hit
from assistant.words import content_words

__all__ = [
    "MAX_PASSAGE_CHARS",
    "MarkerPassage",
    "cited_passages",
    "marker_passages",
    "passage_for",
    "renumbered",
    "shown_numbers",
    "source_passages",
]

# Long enough for a whole policy sentence; a longer one is cut at a clause or word end.
MAX_PASSAGE_CHARS = 300
# A citation marker of the answer text, not an escaped one (backslashed) nor a link label.
_MARKER = re.compile(r"(?<![\\\[])\[(\d{1,3})\](?!\()")
_ANY_MARKER = re.compile(r"\\?\[(\d{1,3})\\?\]")
# A table row reads "Product: Emergency Loan; Interest: 12%": a ";" ends no sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9•\"'(])|\n+")
_TRAILING_MARKERS = re.compile(r"(?:\s*\\?\[\d{1,3}\\?\])+\s*$")
_CLAUSE_END = re.compile(r"[.;:!?,](?=\s)")


@dataclass(frozen=True, slots=True)
class MarkerPassage:
    """One ``[n]`` of an answer: the source it names and the source sentence it relies on."""

    number: int
    passage: str


def marker_passages(text: str, sources: Sequence[Hit]) -> tuple[MarkerPassage, ...]:
    """Return, for each valid ``[n]`` of ``text`` in order, the passage it relies on."""
    found: list[MarkerPassage] = []
    for match in _MARKER.finditer(text):
        number = int(match[1])
        if 1 <= number <= len(sources):
            claim = _claim_before(text[: match.start()])
            found.append(MarkerPassage(number, passage_for(sources[number - 1], claim)))
    return tuple(found)


def source_passages(answer: Answer) -> Mapping[int, tuple[str, ...]]:
    """Return, per cited source number, its markers' passages (each once, in order)."""
    passages: dict[int, list[str]] = {}
    for marker in marker_passages(answer.text, answer.sources):
        kept = passages.setdefault(marker.number, [])
        if marker.passage and marker.passage not in kept:
            kept.append(marker.passage)
    return {number: tuple(kept) for number, kept in passages.items() if kept}


def cited_passages(answer: Answer) -> Mapping[int, str]:
    """Return, per cited source number, the passage its first marker relies on."""
    return {number: kept[0] for number, kept in source_passages(answer).items()}


def passage_for(hit: Hit, claim: str) -> str:
    """Return the sentence of ``hit`` sharing the most content words with ``claim``, or ""."""
    wanted = set(content_words(claim))
    if not wanted:
        return ""
    best, best_score = "", 0
    for sentence in _sentences(plain_text(hit.section_text or hit.chunk.body)):
        score = len(wanted & set(content_words(sentence)))
        if score > best_score:
            best, best_score = sentence, score
    return _clipped(best)


def shown_numbers(text: str, count: int) -> dict[int, int]:
    """Return each source number 1..``count`` mapped to the number a reader sees.

    Cited sources are 1..k in the order ``text`` first cites them; the rest follow in
    their own order.
    """
    order: list[int] = []
    for match in _MARKER.finditer(text):
        number = int(match[1])
        if 1 <= number <= count and number not in order:
            order.append(number)
    order += [number for number in range(1, count + 1) if number not in order]
    return {number: shown for shown, number in enumerate(order, start=1)}


def renumbered(text: str, numbers: Mapping[int, int]) -> str:
    """Return ``text`` with each ``[n]`` marker as ``[numbers[n]]`` (others unchanged)."""

    def swap(match: re.Match[str]) -> str:
        number = int(match[1])
        return f"[{numbers[number]}]" if number in numbers else match[0]

    return _MARKER.sub(swap, text)


def _claim_before(before: str) -> str:
    """Return the answer sentence a marker follows: the text back to the last sentence end.

    Markers right before it (``[1] [2]``) share its sentence.
    """
    region = _TRAILING_MARKERS.sub("", before)
    parts = _sentences(region)
    claim = parts[-1] if parts else ""
    return plain_text(_ANY_MARKER.sub(" ", claim))


def _clipped(sentence: str) -> str:
    """Return ``sentence`` whole, or cut at a clause end (else a word end) within the limit."""
    sentence = sentence.strip()
    if len(sentence) <= MAX_PASSAGE_CHARS:
        return sentence
    head = sentence[: MAX_PASSAGE_CHARS + 1]
    clauses = [m.end() for m in _CLAUSE_END.finditer(head) if m.end() >= MAX_PASSAGE_CHARS // 2]
    if clauses:
        return head[: clauses[-1]].rstrip(",")
    return head.rsplit(None, 1)[0].rstrip(",;:")


def _sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]
