"""Whether a model's sentences are grounded in the prompt's sources, and how to show it.

A small model will state a figure the sources do not hold ("12.05%" for a policy that
says 12%) and cite nothing. Citation checks alone miss that, so every sentence of a
model answer is checked against all the prompt's sources: a figure (number, amount,
percentage, date) that none of them, nor the question, states in any ordinary form
(`assistant.answering.figures`: "12" for "twelve (12)", "KES 40000" for "KES 40,000",
"1 year" for "12 months"), or a name (a capitalised word inside a sentence) that none
of them contains, makes the sentence ungrounded, cited or not. This is a lexical
check: it catches invented figures and names, not paraphrased errors.

With grounded-only on, a flagged sentence is withheld and a visible note stands where
it stood (`withheld_note`); the reader never gets a fragment in its place.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from assistant.answering.figures import Derived, stated, unsupported
from assistant.documents.markdown import inline_constructs
from assistant.types import Hit
from assistant.words import STOPWORDS

__all__ = [
    "NO_CITATION_WARNING",
    "UNSUPPORTED_MARK",
    "Evidence",
    "Reason",
    "evidence_text",
    "figures",
    "gaps",
    "mark_sentences",
    "names",
    "says_not_covered",
    "ungrounded",
    "why_ungrounded",
    "withheld_note",
]

# Why a sentence was flagged: a figure, a name, or words its cited source does not hold.
Reason = Literal["figure", "name", "words"]
_NOTES: dict[Reason, str] = {
    "figure": "its figure is not in the cited sources",
    "name": "a name in it is not in the sources",
    "words": "the source it cites does not say it",
}

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
# Phrasings in which a model says the sources do not answer the question.
_NOT_COVERED = re.compile(
    r"\b(?:do(?:es)?\s*n[o']t|did\s*n[o']t|cannot|can't|could\s*n[o']t|unable\s+to)\s+"
    r"(?:\w+\s+){0,3}?(?:cover|address|mention|say|specify|state|contain|include|provide|"
    r"find|answer|discuss|describe)"
    r"|\bnot\s+(?:covered|mentioned|addressed|specified|stated|found|included)\b"
    r"|\bno\s+(?:(?:relevant|specific|such)\s+)?(?:information|mention|details?|answer|reference)\b"
    r"|\bnone\s+of\s+the\s+(?:provided\s+)?(?:sources?|documents?|polic(?:y|ies)|sections?)\b"
    r"|\b(?:is|are)\s+silent\b"
    r"|\bthere\s+is\s+nothing\s+(?:about|on|regarding|in\s+the)\b",
    re.IGNORECASE,
)
# Capitalised words in a row, "of" and "and" allowed between them.
_CAPITALISED_RUN = re.compile(r"[A-Z][\w-]*(?:\s+(?:(?:of|and|for|the)\s+)?[A-Z][\w-]*)+")
_MAX_INITIALS = 6
_CURRENCIES = tuple(
    frozenset(forms.split())
    for forms in (
        "kes ksh kshs shilling shillings",
        "ugx tzs",
        "usd us dollar dollars",
        "eur euro euros",
        "gbp pound pounds sterling",
        "inr rupee rupees rs",
        "zar rand rands",
        "ngn naira",
    )
)
_CITATION = re.compile(r"\[\d{1,3}\]")
_SOURCE_WORDS = re.compile(
    r"\b(?:source|sources|polic(?:y|ies)|documents?|provided|context)\b", re.I
)


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the prompt's sources and the question state: their words and figures."""

    words: frozenset[str]
    figures: frozenset[Decimal]

    @classmethod
    def of(cls, text: str) -> Evidence:
        """Return the evidence of ``text`` (sources and question together).

        Its words include the initials of each run of capitalised words, so "CEO"
        is known where the sources say "Chief Executive Officer".
        """
        words = [w.lower() for w in _WORDS.findall(text)]
        return cls(frozenset(words) | _initials(text), stated(text))


def _initials(text: str) -> frozenset[str]:
    out: set[str] = set()
    for run in _CAPITALISED_RUN.finditer(text):
        letters = [w[0].lower() for w in run[0].split() if w[0].isupper()]
        for start in range(len(letters)):
            for end in range(start + 2, min(start + _MAX_INITIALS, len(letters)) + 1):
                out.add("".join(letters[start:end]))
    return frozenset(out)


def withheld_note(reason: Reason) -> str:
    """Return the note that stands where a withheld sentence stood."""
    return f"*(One statement was withheld: {_NOTES[reason]}.)*"


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
    return bool(why_ungrounded(sentence, Evidence.of(f"{evidence} {question}")))


def why_ungrounded(
    sentence: str, evidence: Evidence, *, derived: Derived | None = None
) -> Reason | Literal[""]:
    """Return why ``sentence`` is not grounded in ``evidence`` ("" when it is).

    ``derived`` are further figures the sentence may state: what the figures of the
    sources it cites make together (`assistant.answering.figures.derived`).
    """
    if unsupported(sentence, known=evidence.figures, also=derived):
        return "figure"
    words = evidence.words
    if any(not _name_known(name, words) for name in names(sentence)):
        return "name"
    return ""


def gaps(sentence: str, evidence: Evidence, *, derived: Derived | None = None) -> int:
    """Return how many figures and names of ``sentence`` ``evidence`` does not account for."""
    figures = len(unsupported(sentence, known=evidence.figures, also=derived))
    return figures + sum(not _name_known(name, evidence.words) for name in names(sentence))


def _name_known(name: str, words: AbstractSet[str]) -> bool:
    if name in words or _stem_known(name, words):
        return True
    # A currency's code and its name are one currency: "KES 40,000" for "40000 shillings".
    return any(name in forms and forms & words for forms in _CURRENCIES)


def says_not_covered(text: str) -> bool:
    """Whether the answer's opening says the sources do not answer the question.

    An answer that cites a source is an answer, whatever its opening: "There is
    nothing to expense: your paycheck includes $50 a month [1]." is not a refusal.
    """
    opening = " ".join(text.strip().split("\n\n", 1)[0].split())[:300]
    match = _NOT_COVERED.search(opening)
    if match is None or _CITATION.search(text):
        return False
    # "does not cover" alone could be about the policy's scope; near the start, or
    # with a word for the sources, it is the model declining to answer.
    return match.start() < 40 or _SOURCE_WORDS.search(opening) is not None


def mark_sentences(text: str, flagged: Sequence[str]) -> str:
    """Return ``text`` with `UNSUPPORTED_MARK` right after each flagged sentence.

    Sentences are found in the Markdown source, so one may end inside a link's
    destination or a code span ("[2](paid. )"); a mark there would break the
    construct and show its brackets as text. Such a mark goes to the end of the
    line instead, or of the paragraph.
    """
    out, cursor, done = [], 0, 0
    for sentence in flagged:
        at = text.find(sentence, done)
        if at < 0:
            continue
        done = at + len(sentence)
        where = max(_mark_position(text, done), cursor)
        out += [text[cursor:where], UNSUPPORTED_MARK]
        cursor = where
    return "".join(out) + text[cursor:]


def _mark_position(text: str, end: int) -> int:
    """Return where a mark for the sentence ending at ``end`` keeps every link and code span.

    Inline constructs never cross a blank line, so only that paragraph is parsed.
    """
    start = text.rfind("\n\n", 0, end) + 1
    stop = text.find("\n\n", end)
    stop = len(text) if stop < 0 else stop
    block = text[start:stop]
    expected = inline_constructs(block) + inline_constructs(UNSUPPORTED_MARK)
    line_end = text.find("\n", end, stop)
    for where in (end, stop if line_end < 0 else line_end):
        at = where - start
        if inline_constructs(block[:at] + UNSUPPORTED_MARK + block[at:]) == expected:
            return where
    return stop


def _stem_known(name: str, words: AbstractSet[str]) -> bool:
    return any(w.startswith(name) or name.startswith(w) for w in words if len(w) >= 4)
