"""Citations attached claim by claim, whatever markers the model wrote.

Small local models rarely write ``[n]`` markers, and larger ones sometimes cite the
wrong source. While the answer streams, each finished sentence or list item that
states a fact is matched to the source that supports it: a source supports a claim
when it states every figure and name of the claim (`assistant.answering.grounding`)
and holds most of its content words (the bar `assistant.answering.citations` checks
cited sentences against); among those, the closest in meaning wins (the `Reader` when
one is given, else the embedder's cosine, else the words alone). The model's own
markers stay when a source they name supports the claim; wrong ones are replaced
by the right one, a missing one is added before the sentence's closing stop, and a
claim no source supports is left as written, for the answer check to mark.

`cite_stream` does this per finished sentence: text is passed on as it arrives, up to
where a marker may still be added or changed, so the first words are not delayed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assistant.answering.citations import MARKER
from assistant.answering.figures import derived
from assistant.answering.grounding import (
    Evidence,
    evidence_text,
    figures,
    gaps,
    says_not_covered,
    why_ungrounded,
)
from assistant.errors import EmbeddingError
from assistant.protocols import Embedder, Reader
from assistant.types import Hit, Reasoning
from assistant.words import content_words

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["ClaimCiter", "cite_stream", "cite_text", "strip_markers"]

logger = logging.getLogger(__name__)

# A claim must share this much of its content words with a source (as cited sentences must).
_SUPPORT = 0.5
_MIN_CLAIM_WORDS = 2
# Small models often answer with the figure alone; up to this many words count as that.
_BARE_WORDS = 4
# The longest end of a unit searched again as text arrives: a stop, a few markers, closers.
_END_SPAN = 64
# A claim that sums up several sources ("... 2% a month, and guarantors are told at 30
# days") is cited with the fewest of them, at most this many, that state all it says.
_MAX_COVER = 3
# Where a finished sentence ends: a stop (with any markers after it) and white space,
# or a line end. The text after it starts the next unit.
_UNIT_END = re.compile(r"[.!?](?:\s*\[\d{1,3}(?:\s*,\s*\d{1,3})*\])*[\"')*_]*[ \t]+(?=[^\s\[])|\n")
# What may trail a claim's words: closing stops, quotes, emphasis, markers, white space.
_TAIL = re.compile(r"(?:\s*\[\d{1,3}(?:\s*,\s*\d{1,3})*\]|[\s.!?;:,\"')*_])*$")
_MARKER_WITH_SPACE = re.compile(r"[ \t]*\[\d{1,3}(?:\s*,\s*\d{1,3})*\](?!\()")
# Lines that state no claim of their own: headings, table rows, fences, rules.
_NOT_PROSE = re.compile(r"^\s*(?:#|\||```|~~~|[-*_]{3,}\s*$)")
_ABBREVIATION = re.compile(r"(?:\b(?:[A-Za-z]\.)+[A-Za-z]|\betc)$")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


@dataclass(frozen=True, slots=True)
class _Source:
    """One numbered source as the claims are checked against it."""

    number: int
    passage: str
    words: frozenset[str]
    evidence: Evidence
    text: str


class ClaimCiter:
    """Cites the claims of one answer against the prompt's numbered sources.

    Args:
        question: The question answered (its figures and names are no invention).
        sources: The prompt's sources; ``[1]`` is ``sources[0]``.
        embedder: Ranks the supporting sources by meaning (optional).
        reader: Ranks them with a reader model instead (optional; preferred).
    """

    def __init__(
        self,
        question: str,
        sources: Sequence[Hit],
        *,
        embedder: Embedder | None = None,
        reader: Reader | None = None,
    ) -> None:
        self._question = question
        self._hits = tuple(sources)
        self._embedder = embedder
        self._reader = reader
        self._sources: tuple[_Source, ...] | None = None
        self._vectors: npt.NDArray[np.float32] | None = None

    def cite(self, unit: str) -> str:
        """Return ``unit`` (one finished sentence or list item) with its markers set right."""
        claim = MARKER.sub(" ", unit)
        words = content_words(claim)
        bare = _bare_figure(claim, words)
        if not self._hits or not (bare or _states_fact(claim)):
            return unit
        if bare:
            # "30 days" answers the question: the source must state it and what was asked.
            words |= content_words(self._question)
        cited = list(dict.fromkeys(n for n in _marker_numbers(unit) if 1 <= n <= len(self._hits)))
        sources = self._prepared()
        good = [n for n in cited if _supports(claim, words, sources[n - 1])]
        if good:
            # The model's right markers stay; wrong ones beside them go.
            if len(good) == len(cited):
                return unit
            return _with_markers(unit, good, sources=len(sources))
        supporting = self._supporting(claim, words, single=bare)
        return _with_markers(unit, supporting, sources=len(sources)) if supporting else unit

    def _supporting(self, claim: str, words: set[str], *, single: bool = False) -> list[int]:
        """Return the source that supports ``claim`` best, or the few that do together.

        A ``single`` claim (a bare figure) comes from one place or from none.
        """
        ranked = [
            (len(words & s.words) / len(words), s.number)
            for s in self._prepared()
            if _supports(claim, words, s)
        ]
        if not ranked:
            return [] if single else self._covering(claim, words)
        if len(ranked) > 1:
            closeness = self._closeness(claim)
            ranked = [(o + closeness[n - 1], n) for o, n in ranked]
        return [min(ranked, key=lambda r: (-r[0], r[1]))[1]]

    def _covering(self, claim: str, words: set[str]) -> list[int]:
        """Return the few sources that together state all ``claim`` says (none: []).

        Greedy: each step adds the source that leaves the fewest figures, names and
        words unstated, while one still helps.
        """
        chosen: list[_Source] = []
        missing = self._missing(claim, words, chosen)
        while len(chosen) < _MAX_COVER:
            options = [(self._missing(claim, words, [*chosen, s]), s) for s in self._prepared()]
            best = min(options, key=lambda o: (o[0], o[1].number))
            if best[0] >= missing:
                return []
            chosen, missing = [*chosen, best[1]], best[0]
            left = gaps(claim, self._evidence_of(chosen), derived=derived(_text(chosen)))
            if not left and missing - left <= len(words) * (1 - _SUPPORT):
                return sorted(s.number for s in chosen)
        return []

    def _missing(self, claim: str, words: set[str], chosen: Sequence[_Source]) -> int:
        """Return how many figures, names and words of ``claim`` ``chosen`` leave unstated."""
        unheld = len(words.difference(*(s.words for s in chosen)))
        return gaps(claim, self._evidence_of(chosen), derived=derived(_text(chosen))) + unheld

    def _evidence_of(self, chosen: Sequence[_Source]) -> Evidence:
        return Evidence.of(f"{_text(chosen)} {self._question}")

    def _closeness(self, claim: str) -> list[float]:
        """Return how close in meaning each source is to ``claim`` (zeros without a model)."""
        passages = [s.passage for s in self._prepared()]
        try:
            if self._reader is not None:
                return self._reader.score(claim, passages)
            if self._embedder is not None:
                if self._vectors is None:
                    self._vectors = self._embedder.embed(passages)
                claim_vector = self._embedder.embed([claim])[0]
                return [float(v) for v in self._vectors @ claim_vector]
        except EmbeddingError as exc:
            # Words alone still cite; the ranking by meaning is a refinement.
            logger.warning("claims ranked by words only: %s", exc)
            self._reader = self._embedder = None
        return [0.0] * len(passages)

    def _prepared(self) -> tuple[_Source, ...]:
        if self._sources is None:
            self._sources = tuple(
                _Source(
                    number=number,
                    passage=hit.chunk.text,
                    words=frozenset(content_words(text)),
                    evidence=Evidence.of(f"{text} {self._question}"),
                    text=text,
                )
                for number, hit in enumerate(self._hits, start=1)
                for text in [evidence_text([hit])]
            )
        return self._sources


def _text(sources: Sequence[_Source]) -> str:
    return " ".join(s.text for s in sources)


def _supports(claim: str, words: set[str], source: _Source) -> bool:
    """Return whether ``source`` states the claim's figures and names and most of its words."""
    if len(words & source.words) < _SUPPORT * len(words):
        return False
    return not why_ungrounded(claim, source.evidence, derived=derived(source.text))


def _bare_figure(claim: str, words: set[str]) -> bool:
    """Return whether ``claim`` is a figure given as the whole answer ("30 days", "3")."""
    line = _LIST_MARK.sub("", claim.strip())
    if _NOT_PROSE.match(line) or len(line.split()) > _BARE_WORDS:
        return False
    return bool(figures(line)) and len(words) < _MIN_CLAIM_WORDS


def _states_fact(claim: str) -> bool:
    """Return whether a sentence states something a source could support."""
    line = claim.strip()
    if not line or _NOT_PROSE.match(line) or line.endswith(("?", ":")):
        return False
    if says_not_covered(line):
        return False
    return len(content_words(_LIST_MARK.sub("", line))) >= _MIN_CLAIM_WORDS


def _marker_numbers(text: str) -> list[int]:
    return [int(n) for m in MARKER.finditer(text) for n in m.group(1).split(",")]


def _with_markers(unit: str, numbers: Sequence[int], *, sources: int) -> str:
    """Return ``unit`` with its markers replaced by ``numbers``, placed before its closing stop.

    A marker to no source (of ``sources``) stays for the answer check to remove and report.
    """

    def valid(match: re.Match[str]) -> str:
        named = [int(n) for n in re.findall(r"\d+", match[0])]
        return "" if all(1 <= n <= sources for n in named) else match[0]

    bare = _MARKER_WITH_SPACE.sub(valid, unit)
    at = _TAIL.search(bare)
    end = at.start() if at else len(bare)
    if _ABBREVIATION.search(bare[:end]) and bare[end : end + 1] == ".":
        end += 1  # "5:00 p.m. [2]", not "5:00 p.m [2]."
    tail = bare[end:]
    return bare[:end] + " " + "".join(f"[{n}]" for n in numbers) + tail


def strip_markers(text: str) -> str:
    """Return ``text`` without its ``[n]`` markers (as a model that never cites writes it)."""
    return _MARKER_WITH_SPACE.sub("", text)


def cite_text(text: str, citer: ClaimCiter) -> str:
    """Return a whole answer with each of its claims cited (`cite_stream` in one go)."""
    return "".join(cite_stream([text], citer))


def cite_stream(deltas: Iterable[str], citer: ClaimCiter) -> Generator[str, None, None]:
    """Yield ``deltas`` with each finished claim cited by ``citer``.

    Text streams on at once up to the first place where a marker may still be
    added or corrected (the open sentence's first ``[`` or its trailing stops and
    spaces); the rest follows when the sentence ends. Reasoning deltas pass as they
    are. Closing this generator closes ``deltas``.
    """
    pending = ""  # the open unit, of which ``sent`` characters were already yielded
    sent = scanned = 0  # ``scanned``: where the search for the unit's end resumes
    upstream = iter(deltas)
    try:
        for delta in upstream:
            if isinstance(delta, Reasoning):
                yield delta
                continue
            pending += delta
            while (end := _unit_end(pending, scanned)) is not None:
                unit, pending = pending[:end], pending[end:]
                cited = citer.cite(unit)
                # Citing changes nothing before ``sent``; were it to, the unit stays as written.
                yield cited[sent:] if cited.startswith(unit[:sent]) else unit[sent:]
                sent = scanned = 0
            # Only the last few characters can still begin an end: each is read a bounded
            # number of times, so a long unit costs time linear in its length.
            scanned = max(0, len(pending) - _END_SPAN)
            safe = _safe_prefix(pending, sent)
            if safe > sent:
                yield pending[sent:safe]
                sent = safe
        if pending:
            cited = citer.cite(pending)
            yield cited[sent:] if cited.startswith(pending[:sent]) else pending[sent:]
    finally:
        close = getattr(upstream, "close", None)
        if close is not None:
            close()


def _unit_end(text: str, start: int) -> int | None:
    for match in _UNIT_END.finditer(text, start):
        # A stop before a lower-case word is an abbreviation's ("8:00 a.m. to 5:00 p.m.").
        if match[0] == "\n" or not text[match.end()].islower():
            return match.end()
    return None


def _safe_prefix(pending: str, sent: int) -> int:
    """Return how much of the open unit cannot change when it is cited (at least ``sent``)."""
    bracket = pending.find("[", sent)
    head = pending[sent:] if bracket < 0 else pending[sent:bracket]
    at = _TAIL.search(head)
    return sent + (at.start() if at else len(head))
