"""Whether a model's sentences are grounded in the prompt's sources, and how to show it.

A small model will state a figure the sources do not hold ("12.05%" for a policy that
says 12%) and cite nothing. Citation checks alone miss that, so every sentence of a
model answer is checked against all the prompt's sources: a figure (number, amount,
percentage, date) or a name (a capitalised word inside a sentence) that none of them,
nor the question, contains makes the sentence ungrounded, cited or not. This is a
lexical check: it catches invented figures and names, not paraphrased errors.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from assistant.types import Hit
from assistant.words import STOPWORDS, content_words

__all__ = [
    "NO_CITATION_WARNING",
    "UNSUPPORTED_MARK",
    "closest_unit",
    "evidence_text",
    "figures",
    "mark_sentences",
    "names",
    "says_not_covered",
    "ungrounded",
]

NO_CITATION_WARNING = "⚠ *This answer cites no policy section; check the sources below.*"
UNSUPPORTED_MARK = " ⚠ *(not found in the sources)*"

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_CAPITALISED = re.compile(r"(?<![\w.])[A-Z][\w'\u2019-]*[A-Za-z0-9]")
_WORDS = re.compile(r"[\w'\u2019-]+")
_POSSESSIVE = re.compile(r"['\u2019]s$")
# What may stand before the first word of a clause: a line start with a list or quote
# mark, or the end of a sentence, then opening emphasis, quotes or brackets.
_SENTENCE_START = re.compile(
    r"(?:(?:^|\n)\s*(?:[-*+>]|\d+[.)])?\s*|[.!?:;][\"\u201d)]?\s+)[*_\"\u201c(\[]*$"
)
_UNIT = re.compile(r"[^.!?\n]+(?:[.!?]+|$)")
# Phrasings in which a model says the sources do not answer the question.
_NOT_COVERED = re.compile(
    r"\b(?:do(?:es)?\s*n[o']t|did\s*n[o']t|cannot|can't|could\s*n[o']t|unable\s+to)\s+"
    r"(?:\w+\s+){0,3}?(?:cover|address|mention|say|specify|state|contain|include|provide|"
    r"find|answer|discuss|describe)"
    r"|\bnot\s+(?:covered|mentioned|addressed|specified|stated|found|included)\b"
    r"|\bno\s+(?:information|mention|details?|answer)\b"
    r"|\bthere\s+is\s+nothing\b",
    re.IGNORECASE,
)
_SOURCE_WORDS = re.compile(
    r"\b(?:source|sources|polic(?:y|ies)|documents?|provided|context)\b", re.I
)


def evidence_text(sources: Iterable[Hit]) -> str:
    """Return everything the sources say: titles, heading paths, section text and bodies."""
    return " ".join(
        f"{hit.title} {hit.chunk.breadcrumb} {hit.section_text} {hit.chunk.body}" for hit in sources
    )


def figures(text: str) -> set[str]:
    """Return the numbers of ``text`` with thousands separators removed ("3,000" -> "3000")."""
    out = set()
    for raw in _NUMBER.findall(text):
        # "3,000,000" and "3000000" are one figure; "12.5" keeps its decimal point.
        out.add(re.sub(r",(?=\d{3}\b)", "", raw))
    return out


def names(sentence: str) -> set[str]:
    """Return the capitalised words inside ``sentence`` (not the first word of a clause)."""
    found = set()
    for match in _CAPITALISED.finditer(sentence):
        if _SENTENCE_START.search(sentence[: match.start()]):
            continue
        word = match.group(0)
        if word.lower() in STOPWORDS:
            continue
        found.add(_POSSESSIVE.sub("", word.lower()))
    return found


def ungrounded(sentence: str, *, evidence: str, question: str = "") -> bool:
    """Whether ``sentence`` states a figure or a name that neither evidence nor question has."""
    known = f"{evidence} {question}"
    if not figures(sentence) <= figures(known):
        return True
    words = {w.lower() for w in _WORDS.findall(known)}
    return any(name not in words and not _stem_known(name, words) for name in names(sentence))


def says_not_covered(text: str) -> bool:
    """Whether the answer's opening says the sources do not answer the question."""
    opening = " ".join(text.strip().split("\n\n", 1)[0].split())[:300]
    match = _NOT_COVERED.search(opening)
    if match is None:
        return False
    # "does not cover" alone could be about the policy's scope; near the start, or
    # with a word for the sources, it is the model declining to answer.
    return match.start() < 40 or _SOURCE_WORDS.search(opening) is not None


def mark_sentences(text: str, flagged: Sequence[str]) -> str:
    """Return ``text`` with `UNSUPPORTED_MARK` right after each flagged sentence."""
    out, cursor = [], 0
    for sentence in flagged:
        at = text.find(sentence, cursor)
        if at < 0:
            continue
        end = at + len(sentence)
        out += [text[cursor:end], UNSUPPORTED_MARK]
        cursor = end
    return "".join(out) + text[cursor:]


def closest_unit(sentence: str, sources: Sequence[Hit]) -> tuple[str, int] | None:
    """Return the source sentence (and its source number) sharing most words with ``sentence``."""
    claim = content_words(sentence)
    best: tuple[float, str, int] | None = None
    for number, hit in enumerate(sources, start=1):
        for unit in _UNIT.findall(hit.chunk.body):
            words = content_words(unit)
            if not words:
                continue
            score = len(claim & words) / len(claim | words)
            if best is None or score > best[0]:
                best = (score, " ".join(unit.split()), number)
    if best is None or best[0] == 0:
        return None
    return best[1], best[2]


def _stem_known(name: str, words: set[str]) -> bool:
    return any(w.startswith(name) or name.startswith(w) for w in words if len(w) >= 4)
