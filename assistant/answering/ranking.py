"""Rank answer units by how well they answer the question, and pick the few to quote.

Each unit of the numbered sources gets one score from four signals:

- meaning: the question's cosine to the unit (one batched embedding call per
  question over the candidate units; without an embedder this signal is 0);
- words: the share of the question's content words (crudely stemmed, each
  weighted by how rare it is among the candidate units, so a word every
  section repeats counts little) that the unit contains;
- place: the same share for the heading path the unit sits under and its
  lead-in (a list's introduction, a table's header);
- structure: a unit stating a figure when the question asks for an amount,
  a duration, a date or a count.

The source's rank adds a small prior; bare labels, fragments ("All rights
reserved.") and sentences about the document itself ("This guide describes...")
lose a little. The answer leads with the best unit (a sentence rather than a
table row saying the same), adds the best unit for each part of a two-part
question, then at most two more units in all that score close and say
something new.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from assistant.answering.asking import (
    ASKING_WORDS,
    asked_value,
    question_parts,
    states_value,
    wanted_value,
)
from assistant.answering.units import AnswerUnit
from assistant.protocols import Embedder, Reader, TokenEmbedder
from assistant.types import TokenVectors
from assistant.words import WORD, content_words

__all__ = [
    "DEFAULT_WEIGHTS",
    "Candidate",
    "Ranked",
    "Weights",
    "choose",
    "focus_words",
    "has_token_vectors",
    "key_phrases",
    "late_interaction",
    "matched",
    "rank_units",
    "reader_scores",
    "reader_text",
    "token_embedder",
    "weakest_word",
]

logger = logging.getLogger(__name__)

_META = re.compile(
    r"^(?:here (?:are|is)|the following|below (?:are|is)|see (?:also|below))\b"
    r"|\b(?:this|these|the following|our)\s+(?:guide|guidelines|policy|policies|document|page|"
    r"section|article|handbook|procedure|faq|terms)\s+(?:describes?|explains?|sets? out|"
    r"outlines?|covers?|(?:is|are) (?:designed|intended|meant)|provides?|summari[sz]es?|"
    r"gives?|helps?|walks?|details?)\b",
    re.I,
)
# One embedding call per question: at most this many units, each cut to _EMBED_CHARS
# (MiniLM's cost grows with both; 24 x 240 kept the dev and sample figures of 48 x 600).
_LABEL_WORDS = 6
_FRAGMENT_WORDS = 4
_PROSE_LOOKAHEAD = 3
_MAX_UNITS = 3
_NUMBERS = re.compile(r"\d[\d,.]*")
# A lead-in longer than this is not repeated before each item quoted from its list.
_LEAD_WORDS = 20
_MAX_CANDIDATES = 24
_MIN_STEM = 4
_MIN_SHARED = 6
_EMBED_CHARS = 240


@dataclass(frozen=True, slots=True)
class Weights:
    """How much each signal counts; the defaults were tuned on the sample and dev sets."""

    meaning: float = 1.0
    words: float = 0.3
    place: float = 0.2
    structure: float = 0.1
    rank: float = 0.05
    # A short label ("Contact Information", "Proprietary Rights") says nothing on its own.
    label: float = 0.2
    # A sentence about the document itself ("This guide describes...") or a
    # question it asks restates the question's topic: it matches well and answers nothing.
    meta: float = 0.2
    # "All rights reserved.", "Penal Code 502(c).": too short to answer anything.
    fragment: float = 0.2
    # A further unit joins the answer when it scores within ``margin`` of the best.
    margin: float = 0.2
    reach: float = 0.35
    max_words: int = 60
    # A sentence repeating the best table row leads when it scores within this of it.
    prose: float = 0.2
    # Token-level late interaction (the question's word pieces each meeting their
    # best match among the unit's, max-sim averaged), from the same model run.
    late: float = 0.0
    # The share of the question's key phrases (two adjacent topic words) found
    # together in the unit with its heading path.
    phrase: float = 0.0
    # Whether the best unit stating the asked value joins an answer whose lead does not.
    stating: bool = True
    # A rule of some place (a country's, a state's, "US-based teammates") the question
    # does not name is quoted after the organisation's own (`assistant.answering.regions`).
    regional: float = 0.1
    # The reader's probability that the unit (under its headings) answers the question.
    reader: float = 0.0


DEFAULT_WEIGHTS = Weights()


@dataclass(frozen=True, slots=True)
class Candidate:
    """A unit of source ``number`` (1-based), from the hit at ``rank``."""

    number: int
    rank: int
    unit: AnswerUnit


@dataclass(frozen=True, slots=True)
class Ranked:
    """A candidate with its score and the signals behind it."""

    candidate: Candidate
    score: float
    cosine: float
    words: float
    place: float
    figure: bool
    found: frozenset[str] = frozenset()
    # How well the unit answers each part of a two-part question.
    parts: tuple[float, ...] = ()
    # Token-level late interaction with the question (0 without word-piece vectors).
    late: float = 0.0
    # The question's least-matched topic word: its pieces' best cosine to the
    # unit's pieces (1 without word-piece vectors, which then says nothing).
    weakest: float = 1.0
    # The reader's probability that the unit answers the question (0 without a reader).
    reader: float = 0.0

    @property
    def text(self) -> str:
        """Return the unit's quoted text."""
        return self.candidate.unit.text

    @property
    def shown(self) -> str:
        """Return the text the answer quotes: a list item that goes on from its lead-in with it.

        "sent to their registered M-Pesa number;" means nothing alone; after
        "Each member chooses how to receive their dividend:" it answers.
        """
        unit = self.candidate.unit
        lead = unit.context.strip()
        text = unit.text
        if unit.kind != "item" or not lead or not text[:1].islower():
            return text
        if len(WORD.findall(lead)) > _LEAD_WORDS:
            return text
        return f"{lead} … {text}"


def _score(
    weights: Weights,
    candidate: Candidate,
    signals: tuple[float, float, float, bool, float],
    phrases: Sequence[tuple[str, str]],
) -> float:
    """Return a unit's score from its signals (cosine, words, place, figure, late)."""
    cosine, words, place, figure, late = signals
    unit = candidate.unit
    return (
        weights.meaning * cosine
        + weights.words * words
        + weights.place * place
        + weights.structure * figure
        + weights.rank / candidate.rank
        + weights.late * late
        + weights.phrase * _phrase_share(phrases, unit)
        - weights.label * _is_label(unit)
        - weights.meta * _is_meta(unit)
        - weights.fragment * _is_fragment(unit)
    )


def rank_units(
    question: str,
    candidates: Sequence[Candidate],
    *,
    embedder: Embedder | None,
    unknown_words: Sequence[str] = (),
    weights: Weights = DEFAULT_WEIGHTS,
    token_level: bool = False,
    reader: Reader | None = None,
) -> list[Ranked]:
    """Return ``candidates`` scored for ``question``, best first.

    With ``token_level`` (and an embedder that returns word-piece vectors) each
    unit also gets its token-level late interaction with the question, from the
    same model run; it lost as a ranking signal on every set (docs/answer-eval.md),
    so it is measured, not used, by default.

    Only the best ``_MAX_CANDIDATES`` by words, place and rank are embedded,
    so one question costs one embedding call of bounded size. Words no indexed
    chunk contains (``unknown_words``) no unit can match; they are left out of
    the word shares (the answer names them in a note instead). With a
    ``reader`` and a ``weights.reader``, the same units are also read (one call).
    """
    wanted = focus_words(question, unknown_words)
    kind = wanted_value(question)
    matches = []
    for candidate in candidates:
        unit = candidate.unit
        found = matched(wanted, content_words(_plain(unit)))
        near = matched(wanted - found, content_words(" ".join((*unit.headings, unit.context))))
        matches.append((found, near))
    idf = _rarity(wanted, [found | near for found, near in matches])
    scored = []
    for candidate, (found, near) in zip(candidates, matches, strict=True):
        words, place = _share(found, idf), _share(near, idf)
        plain = _plain(candidate.unit)
        figure = kind is not None and states_value(kind, plain)
        scored.append((candidate, words, place, figure, frozenset(found | near)))
    prior = sorted(
        scored,
        key=lambda s: -(weights.words * s[1] + weights.place * s[2] + weights.rank / s[0].rank),
    )[:_MAX_CANDIDATES]
    parts = question_parts(question)
    (cosines, *part_cosines), (late, weakest) = _cosines(
        (question, *parts),
        [s[0] for s in prior],
        embedder,
        token_level=token_level or weights.late > 0,
    )
    read = reader_scores(question, [s[0].unit for s in prior], reader, weight=weights.reader)
    phrases = key_phrases(question, wanted)
    part_words = [focus_words(p, unknown_words) & wanted for p in parts]
    part_kinds = [asked_value(p) for p in parts]
    logger.debug("ranked %d of %d units (%d embedded)", len(prior), len(candidates), len(cosines))
    ranked = [
        Ranked(
            candidate,
            _score(weights, candidate, (cosine, words, place, figure, late[i]), phrases)
            + weights.reader * read[i],
            cosine,
            words,
            place,
            figure,
            found,
            tuple(
                weights.meaning * pc[i]
                + weights.words * _share(set(found & pw), _only(idf, pw))
                + weights.structure * (pk is not None and states_value(pk, _plain(candidate.unit)))
                for pc, pw, pk in zip(part_cosines, part_words, part_kinds, strict=True)
            ),
            late[i],
            weakest[i],
            read[i],
        )
        for i, ((candidate, words, place, figure, found), cosine) in enumerate(
            zip(prior, cosines, strict=True)
        )
    ]
    return sorted(ranked, key=lambda r: -r.score)


def choose(ranked: Sequence[Ranked], *, weights: Weights = DEFAULT_WEIGHTS) -> list[Ranked]:
    """Return the best unit and at most two more that add something.

    A further unit joins when it scores within ``margin`` of the best, or
    within ``reach`` when it covers question words the chosen ones do not
    (the second half of a two-part question); never a near-duplicate, and
    never past ``max_words``.
    """
    if not ranked:
        return []
    ranked = _prose_first(ranked, weights)
    best = ranked[0]
    chosen = [best]
    for part in [*_stating(ranked, weights), *_part_answers(ranked, weights)]:
        if part not in chosen and _fits(part, chosen, weights):
            chosen.append(part)
    covered = set().union(*(c.found for c in chosen))
    for other in ranked[1:]:
        if len(chosen) == _MAX_UNITS or other.score < best.score - weights.reach:
            break
        adds = bool(other.found - covered)
        if other.score < best.score - weights.margin and not adds:
            continue
        if other in chosen or not _fits(other, chosen, weights):
            continue
        chosen.append(other)
        covered |= other.found
    return chosen


def _stating(ranked: Sequence[Ranked], weights: Weights) -> list[Ranked]:
    """Return the best unit stating the asked value when the best unit overall does not.

    "I lost my work laptop, what should I do?": the best match names the topic
    ("Examples include a lost laptop..."), the unit that answers states the
    action ("Report every suspected incident to the ICT service desk...").
    """
    if not weights.stating or ranked[0].figure:
        return []
    best = ranked[0].score
    for other in ranked[1:]:
        if other.score < best - weights.reach:
            break
        if other.figure:
            return [other]
    return []


def _part_answers(ranked: Sequence[Ranked], weights: Weights) -> list[Ranked]:
    """Return the best unit for each part of a two-part question, when it is close enough.

    The best unit overall often answers the first part only ("What per diem do
    I get, and how soon must I claim?"); each part gets its own best unit.
    """
    parts = len(ranked[0].parts)
    best = ranked[0].score
    out = []
    for i in range(parts):
        top = max(ranked, key=lambda r: r.parts[i])
        if top.score >= best - weights.reach:
            out.append(top)
    return out


def _fits(other: Ranked, chosen: Sequence[Ranked], weights: Weights) -> bool:
    words = sum(_length(c) for c in chosen)
    return words + _length(other) <= weights.max_words and not any(
        _near_duplicate(other, c) for c in chosen
    )


def _prose_first(ranked: Sequence[Ranked], weights: Weights) -> Sequence[Ranked]:
    """Lead with a sentence rather than a table row that says the same thing about as well.

    A sentence reads as an answer on its own; a row needs its header to be understood.
    """
    best = ranked[0]
    if not best.candidate.unit.is_table:
        return ranked
    for other in ranked[1 : _PROSE_LOOKAHEAD + 1]:
        if best.score - other.score > weights.prose:
            break
        if not other.candidate.unit.is_table and _near_duplicate(other, best):
            return [other, *(r for r in ranked if r is not other)]
    return ranked


def focus_words(question: str, unknown_words: Sequence[str] = ()) -> set[str]:
    """Return what the question is about: its content words minus asking words and unknowns."""
    # "s" of "GitHub's" is no topic.
    words = {w for w in content_words(question) - ASKING_WORDS if len(w) > 1}
    return (words or content_words(question)) - content_words(" ".join(unknown_words))


def _rarity(wanted: set[str], found: Sequence[set[str]]) -> dict[str, float]:
    """Weight each question word by how few candidate units (with their headings) match it."""
    total = max(1, len(found))
    counts = dict.fromkeys(wanted, 0)
    for words in found:
        for word in words:
            counts[word] += 1
    return {w: math.log(1 + total / (1 + n)) for w, n in counts.items()}


def _only(idf: dict[str, float], words: set[str]) -> dict[str, float]:
    return {w: v for w, v in idf.items() if w in words}


def _share(found: set[str], idf: dict[str, float]) -> float:
    total = sum(idf.values())
    return sum(idf[w] for w in found) / total if total else 0.0


def matched(wanted: set[str], found: set[str]) -> set[str]:
    """Return the words of ``wanted`` that ``found`` contains, up to a shared stem.

    "member" matches "membership" and "repaying" matches "repayment": the
    crude stems of `content_words` leave such pairs apart.
    """
    exact = wanted & found
    rest = wanted - exact
    if not rest:
        return exact
    return exact | {w for w in rest if any(_same_stem(w, f) for f in found)}


@functools.lru_cache(maxsize=65536)
def _same_stem(a: str, b: str) -> bool:
    short, long = sorted((a, b), key=len)
    if len(short) < _MIN_STEM:
        return False
    if long.startswith(short):
        return True
    prefix = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        prefix += 1
    return prefix >= _MIN_SHARED


def reader_scores(
    question: str, units: Sequence[AnswerUnit], reader: Reader | None, *, weight: float = 1.0
) -> list[float]:
    """Return the reader's probability that each unit, under its headings, answers ``question``.

    Reading every unit costs a second model run (about 250 ms p95 for 24 units on two
    cores), so with no ``weight`` in the ranking nothing is read (zeros).
    """
    if reader is None or not units or not weight:
        return [0.0] * len(units)
    return reader.score(question, [reader_text(u.text, u.headings, u.context) for u in units])


def reader_text(text: str, headings: Sequence[str], context: str = "") -> str:
    """Return a passage as the reader was trained to read it: its headings, then its text."""
    lead = f"{context.strip()}\n" if context.strip() else ""
    return "\n\n".join([*headings, lead + text]) if headings else lead + text


def _cosines(
    queries: Sequence[str],
    candidates: Sequence[Candidate],
    embedder: Embedder | None,
    *,
    token_level: bool,
) -> tuple[list[list[float]], tuple[list[float], list[float]]]:
    """Return each query's cosine to each candidate, and the first query's token-level match.

    One embedding call; the late interaction and the weakest word's match come
    from the same model run when the embedder returns word-piece vectors (else
    0 and 1 for every candidate).
    """
    none = ([0.0] * len(candidates), [1.0] * len(candidates))
    if embedder is None or not candidates:
        return [[0.0] * len(candidates) for _ in queries], none
    texts = [*queries, *(_embedded(c.unit) for c in candidates)]
    tokens = token_embedder(embedder) if token_level else None
    if tokens is None:
        vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
        token_match = none
    else:
        vectors, pieces = tokens.embed_tokens(texts)
        units_pieces = pieces[len(queries) :]
        token_match = (
            late_interaction(pieces[0], units_pieces),
            weakest_word(pieces[0], units_pieces),
        )
    units = vectors[len(queries) :]
    return [[float(v) for v in units @ q] for q in vectors[: len(queries)]], token_match


def late_interaction(question: TokenVectors, units: Sequence[TokenVectors]) -> list[float]:
    """Return, for each unit, the mean over the question's topic pieces of their best cosine.

    Pieces of stopwords, asking words ("how", "many") and punctuation are left
    out; a piece continuing a word ("##code") counts with its word.
    """
    keep = [i for i, p in enumerate(question.pieces) if _topic_piece(question.pieces, i)]
    if not keep:
        keep = list(range(len(question.pieces)))
    if not keep:
        return [0.0] * len(units)
    asked = question.vectors[keep]
    out = []
    for unit in units:
        if not len(unit.pieces):
            out.append(0.0)
            continue
        out.append(float((asked @ unit.vectors.T).max(axis=1).mean()))
    return out


def weakest_word(question: TokenVectors, units: Sequence[TokenVectors]) -> list[float]:
    """Return, for each unit, how well its pieces meet the question's least-matched topic word.

    Each topic word (its pieces together) gets the mean of its pieces' best
    cosine among the unit's pieces; the unit's figure is the lowest of them.
    "Does the Sacco offer car insurance?" against "The Sacco offers the
    following loan products.": "insurance" finds no close piece.
    """
    words = _topic_words(question.pieces)
    if not words:
        return [1.0] * len(units)
    out = []
    for unit in units:
        if not len(unit.pieces):
            out.append(0.0)
            continue
        best = (question.vectors @ unit.vectors.T).max(axis=1)
        out.append(float(min(best[list(word)].mean() for word in words)))
    return out


def _topic_words(pieces: Sequence[str]) -> list[tuple[int, ...]]:
    """Return the piece indexes of each topic word of ``pieces`` ("pass", "##code")."""
    words: list[tuple[int, ...]] = []
    for i, piece in enumerate(pieces):
        if piece.startswith("##") and words and words[-1][-1] == i - 1:
            words[-1] = (*words[-1], i)
        elif not piece.startswith("##"):
            words.append((i,))
    return [w for w in words if _topic_piece(pieces, w[0])]


def _topic_piece(pieces: Sequence[str], index: int) -> bool:
    start = index
    while start > 0 and pieces[start].startswith("##"):
        start -= 1
    word = pieces[start]
    for piece in pieces[start + 1 :]:
        if not piece.startswith("##"):
            break
        word += piece[2:]
    return bool(content_words(word) - ASKING_WORDS)


def key_phrases(question: str, wanted: set[str]) -> list[tuple[str, str]]:
    """Return the question's key phrases: two adjacent topic words ("car insurance")."""
    stems = [next(iter(content_words(w)), "") for w in WORD.findall(question)]
    stems = [s if s in wanted else "" for s in stems]
    return [(a, b) for a, b in itertools.pairwise(stems) if a and b and a != b]


def _phrase_share(phrases: Sequence[tuple[str, str]], unit: AnswerUnit) -> float:
    if not phrases:
        return 0.0
    words = content_words(" ".join((unit.text, unit.context, *unit.headings)))
    return sum(len(matched({a, b}, words)) == 2 for a, b in phrases) / len(phrases)


def has_token_vectors(embedder: Embedder | None) -> bool:
    """Whether ``embedder`` returns word-piece vectors with its pooled ones (the packaged one)."""
    return embedder is not None and token_embedder(embedder) is not None


def token_embedder(embedder: Embedder) -> TokenEmbedder | None:
    """Return ``embedder`` as a `TokenEmbedder` when it returns word-piece vectors, else None."""
    # Looked up by name: an isinstance check on the protocol would read the
    # embedder's properties, which for a remote embedder costs a request.
    if callable(getattr(embedder, "embed_tokens", None)):
        return cast("TokenEmbedder", embedder)
    return None


def _embedded(unit: AnswerUnit) -> str:
    """Return the unit as embedded: under its nearest heading, which often names its topic."""
    heading = " > ".join(unit.headings[-2:])
    text = _plain(unit)[:_EMBED_CHARS]
    return f"{heading}: {text}" if heading else text


def _plain(unit: AnswerUnit) -> str:
    """Return the unit's words without table pipes and rules."""
    if not unit.is_table:
        return unit.text
    row = unit.text.splitlines()[-1]
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    return " ".join(c for c in cells if c)


def _is_label(unit: AnswerUnit) -> bool:
    text = unit.text.rstrip()
    return (
        not unit.is_table and len(WORD.findall(text)) <= _LABEL_WORDS and text[-1:] not in ".!?:;"
    )


def _is_fragment(unit: AnswerUnit) -> bool:
    return not unit.is_table and len(WORD.findall(unit.text)) <= _FRAGMENT_WORDS


def _is_meta(unit: AnswerUnit) -> bool:
    """A sentence about the document, or a question it asks ("Are you an officer?")."""
    text = unit.text.rstrip()
    return bool(_META.search(text)) or (not unit.is_table and text.endswith("?"))


def _length(ranked: Ranked) -> int:
    if ranked.candidate.unit.is_table:
        return len(WORD.findall(_plain(ranked.candidate.unit)))
    return len(WORD.findall(ranked.shown))


def _near_duplicate(a: Ranked, b: Ranked) -> bool:
    """Whether ``a`` says what ``b`` says: mostly the same words, and no other figure elsewhere.

    "interest at 12% per annum" in one section and "Interest: 10% per annum"
    in another share their words but answer two halves of a comparison; tiers
    of one table or list ("above 500,000 ... three", "above 1,500,000 ...
    four") stay duplicates.
    """
    numbers = set(_NUMBERS.findall(a.text)) - set(_NUMBERS.findall(b.text))
    if numbers and a.candidate.number != b.candidate.number:
        return False
    wa, wb = content_words(a.text), content_words(b.text)
    if not wa or not wb:
        return a.text == b.text
    return len(wa & wb) / min(len(wa), len(wb)) >= 0.7
