r"""Check an answer's ``[n]`` citations against the sources the prompt numbered.

``[n]``, ``[n, m]`` and ``[n][m]`` are recognised. Numbers that point at no
source are removed from the text (and logged). Whatever else a reader would take
for a citation (``\[9\]``, ``[ 7 ]``, ``[^2]``, ``[1-3]``, ``[1000]``, fullwidth
brackets, a link labelled ``[1]``) is rewritten to plain ``[n]`` markers or
removed the same way, so every marker shown points at a retrieved source.
Bracketed numbers inside quoted document text are defused first
(`defuse_markers`: ``[2]`` reads ``[note 2]``), so a document cannot cite.

Each sentence that cites sources is compared with their text: most of its
content words must appear there, and every figure it states must be stated
there in some ordinary form, or be what two of their figures make together
(`assistant.answering.figures`), otherwise it is listed as unsupported.
A model answer's sentences are also checked against all the sources, cited or
not (`assistant.answering.grounding`), and the flags are shown in the text:
marked, or with grounded-only withheld with a note where they stood, unless
more than half of the answer would go, when they are marked instead (a reader
is better served by a marked answer than by the notes alone). This is a
lexical check: it catches invented figures and citations to the wrong source,
not subtle paraphrase errors.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from assistant.answering.figures import Derived, derived, stated, unsupported
from assistant.answering.grounding import (
    NO_CITATION_WARNING,
    Evidence,
    Reason,
    evidence_text,
    mark_sentences,
    says_not_covered,
    why_ungrounded,
    withheld_note,
)
from assistant.types import Answer, Citation, Hit
from assistant.words import content_words

__all__ = [
    "MARKER",
    "check_answer",
    "cited_numbers",
    "defuse_markers",
    "sentences_of",
]

logger = logging.getLogger(__name__)

# Not followed by what surely makes a link: "[4](y)" reads "4", not a marker. Anything
# the renderer would not take as a destination ("(a b)", an escaped "\(") leaves the
# brackets visible, so it must count as a marker. A backslash escapes the character
# after it, so "(\)" is no destination: its ")" is text.
_LINK_TAIL = r"""\(\s*(?:<[^>\n]*>|(?:\\.|[^()\s<\\])*)(?:\s+(?:"[^"\n]*"|'[^'\n]*'))?\s*\)"""
_NOT_LINK = rf"(?!{_LINK_TAIL})"
MARKER = re.compile(rf"\[(\d{{1,3}}(?:\s*,\s*\d{{1,3}})*)\]{_NOT_LINK}")
# Anything that reads as a citation: optional Markdown escapes, ASCII, fullwidth or
# lenticular brackets, a footnote caret, spaces, lists and ranges of numbers.
_OPEN, _CLOSE = r"\\?[\[\uff3b\u3010]", r"\\?[\]\uff3d\u3011]"
_NUMBERS = r"\d+(?:\s*[,;\u2013\u2014-]\s*\d+)*"
LOOKALIKE = re.compile(rf"{_OPEN}\s*\^?\s*({_NUMBERS})\s*{_CLOSE}")
_IS_LINK_TAIL = re.compile(_LINK_TAIL)
# A link (inline or by reference) whose label is a marker: "[[1]](/doc/other.md)".
_MARKER_LINK = re.compile(
    rf"\\?\[\s*({_OPEN}\s*\^?\s*{_NUMBERS}\s*{_CLOSE})\s*\\?\]"
    r"(?:\\?\([^)\n]*\)|\[[^\]\n]*\])"
)
_RANGE = re.compile(r"(\d+)\s*[\u2013\u2014-]\s*(\d+)")
_MAX_RANGE = 10
# Each pass removes a nesting level of markers ("[9[0]]"); more than this is no citation.
_MAX_PASSES = 8
# A sentence ends at . ! or ? (plus any markers placed after it) or at a line end.
_SENTENCE = re.compile(r"[^\n]+?(?:[.!?]+(?:\s*\[\d[\d,\s]*\])*(?=\s|$)|$)", re.M)
_SUPPORT_THRESHOLD = 0.5
# Flagged sentences (sentence, why), in answer order.
_Flags = tuple[tuple[str, Reason], ...]


def cited_numbers(text: str) -> list[int]:
    """Return the citation numbers in ``text`` in order of appearance (with repeats)."""
    return [int(n) for m in MARKER.finditer(text) for n in m.group(1).split(",")]


def defuse_markers(text: str) -> str:
    """Return document text whose own bracketed numbers cannot pass for citations.

    Footnote references such as ``[2]`` are common in converted policies; quoted
    as they are, they would read (and be checked) as citations of source 2.
    """
    return LOOKALIKE.sub(
        lambda m: m[0] if _is_link(m) else f"[note {' '.join(m.group(1).split())}]", text
    )


def _is_link(match: re.Match[str]) -> bool:
    """Return whether a lookalike is the label of a link ("[4](y)" reads "4", no marker).

    Only plain brackets make a link; escaped or fullwidth ones stay visible whatever
    follows, and so does a "(...)" the renderer would not take as a destination.
    """
    plain = match[0].startswith("[") and match[0].endswith("]") and match[0][-2:] != "\\]"
    return plain and _IS_LINK_TAIL.match(match.string, match.end()) is not None


def _numbers(inside: str) -> list[int] | None:
    """Return the numbers a marker's inside names, or None for a range too wide to mean it."""
    numbers: list[int] = []
    for part in re.split(r"\s*[,;]\s*", inside.strip()):
        span = _RANGE.fullmatch(part)
        if span is None:
            numbers.append(int(part))
            continue
        low, high = int(span[1]), int(span[2])
        if not 0 <= high - low < _MAX_RANGE:
            return None
        numbers.extend(range(low, high + 1))
    return numbers


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
        if _is_link(match):
            return match[0]
        numbers = _numbers(match.group(1))
        if numbers is None:  # "[1-900]": not a citation anyone placed on purpose
            invalid.extend(int(n) for n in re.findall(r"\d+", match.group(1)))
            return ""
        good = list(dict.fromkeys(n for n in numbers if 1 <= n <= len(sources)))
        invalid.extend(n for n in numbers if n not in good)
        return "".join(f"[{n}]" for n in good)

    # A marker used as a link label would point the "citation" at any page of ours.
    unlinked = _MARKER_LINK.sub(lambda m: m.group(1), text)
    checked = LOOKALIKE.sub(keep_valid, unlinked)
    # Removing "[0]" from "[9[0]]" leaves "[9]", a marker again: check until none forms.
    for _ in range(_MAX_PASSES):
        again = LOOKALIKE.sub(keep_valid, checked)
        if again == checked:
            break
        checked = again
    # From a run's start only: retrying inside a long run of spaces is quadratic.
    cleaned = re.sub(r"(?<![ \t])[ \t]+(?=[.,;:!?]|$)", "", checked, flags=re.M)
    if invalid:
        logger.warning("removed citations to missing sources: %s", sorted(set(invalid)))
    if offline:
        flags = _cited_flags(cleaned, sources)
        not_covered = False
    else:
        flags = _model_flags(question, cleaned, sources)
        not_covered = says_not_covered(cleaned)
    flagged = tuple(sentence for sentence, _ in flags)
    shown = cleaned
    if not offline and not not_covered:
        shown = _show_flags(cleaned, flags, grounded_only=grounded_only)
    numbers = sorted({n for n in cited_numbers(shown) if 1 <= n <= len(sources)})
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
    return tuple(sentence for sentence, _ in _cited_flags(text, sources))


def model_unsupported_sentences(
    question: str, text: str, sources: Sequence[Hit]
) -> tuple[str, ...]:
    """Return the sentences of a model answer that the sources do not support.

    A citing sentence must be supported by the sources it cites (`unsupported_sentences`);
    any sentence, cited or not, is flagged when it states a figure or a name that no
    prompt source (nor the question) contains.
    """
    return tuple(sentence for sentence, _ in _model_flags(question, text, sources))


class _CitedFigures:
    """The figures of each set of cited sources, and what two of them make, computed once."""

    def __init__(self, sources: Sequence[Hit]) -> None:
        self._sources = sources
        self._cache: dict[tuple[int, ...], tuple[frozenset[Decimal], Derived | None]] = {}

    def of(self, numbers: Sequence[int]) -> tuple[frozenset[Decimal], Derived | None]:
        """Return (stated, derived) for the sources numbered ``numbers``."""
        key = tuple(sorted(set(numbers)))
        if key not in self._cache:
            text = evidence_text(self._sources[n - 1] for n in key)
            self._cache[key] = (stated(text), derived(text) if key else None)
        return self._cache[key]


def _valid_numbers(sentence: str, sources: Sequence[Hit]) -> list[int]:
    return sorted({n for n in cited_numbers(sentence) if 1 <= n <= len(sources)})


def _cited_flags(text: str, sources: Sequence[Hit], figures: _CitedFigures | None = None) -> _Flags:
    figures = figures or _CitedFigures(sources)
    everywhere = evidence_text(sources)
    everything = _Support(everywhere, stated(everywhere))
    flags: list[tuple[str, Reason]] = []
    for sentence in _sentences(text):
        numbers = _valid_numbers(sentence, sources)
        if not numbers:
            continue
        cited = _Support(evidence_text(sources[n - 1] for n in numbers), *figures.of(numbers))
        reason = _cited_reason(sentence, cited)
        # A summary citing one of the sources it draws on is no invention: what the
        # whole prompt supports stays (a wrong number is still flagged).
        if reason and not _cited_reason(sentence, everything):
            reason = ""
        if reason:
            flags.append((sentence, reason))
    return tuple(flags)


def _model_flags(question: str, text: str, sources: Sequence[Hit]) -> _Flags:
    """Flag what the cited sources do not support, and figures or names no source holds.

    A sentence that cites nothing may still state what two figures of the sources
    the answer cites elsewhere make together (a paragraph often cites once, at its end).
    """
    figures = _CitedFigures(sources)
    cited = dict(_cited_flags(text, sources, figures))
    evidence = Evidence.of(f"{evidence_text(sources)} {question}")
    everywhere = _valid_numbers(text, sources)
    flags: list[tuple[str, Reason]] = []
    for sentence in _sentences(text):
        numbers = _valid_numbers(sentence, sources) or everywhere
        derivable = figures.of(numbers)[1] if numbers else None
        claim = MARKER.sub(" ", sentence)
        reason = cited.get(sentence) or why_ungrounded(claim, evidence, derived=derivable)
        if reason:
            flags.append((sentence, reason))
    return tuple(flags)


def _show_flags(text: str, flags: _Flags, *, grounded_only: bool) -> str:
    """Mark the flagged sentences, or withhold them behind a note where each stood.

    When more than half of the answer would be withheld, the notes would be most of
    what is left: the answer is shown whole with each flagged sentence marked instead.
    """
    flagged = [sentence for sentence, _ in flags]
    if not grounded_only or _mostly(flagged, text):
        return mark_sentences(text, flagged)
    for sentence, reason in flags:
        text = text.replace(sentence, withheld_note(reason), 1)
    return text.strip()


def _mostly(flagged: Sequence[str], text: str) -> bool:
    total = sum(len(MARKER.sub("", s)) for s in _sentences(text))
    return 2 * sum(len(MARKER.sub("", s)) for s in flagged) > total


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def sentences_of(text: str) -> list[str]:
    """Return the sentences of ``text`` as the checks read them (markers after a stop kept)."""
    return _sentences(text)


@dataclass(frozen=True, slots=True)
class _Support:
    """What some sources state: their text, their figures, what two figures make together."""

    text: str
    figures: frozenset[Decimal]
    derived: Derived | None = None


def _cited_reason(sentence: str, support: _Support) -> Reason | Literal[""]:
    """Return why ``support`` does not back ``sentence`` ("" when it does)."""
    claim = MARKER.sub(" ", sentence)
    if unsupported(claim, known=support.figures, also=support.derived):
        return "figure"
    words = content_words(claim)
    if not words:
        return ""
    overlap = len(words & content_words(support.text)) / len(words)
    return "" if overlap >= _SUPPORT_THRESHOLD else "words"
