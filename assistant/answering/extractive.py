"""The offline answer mode: quote the units of the sources that best answer the question.

With no language model configured, the assistant still answers. The numbered
sources are cut into answer units (sentences, list items, table rows with
their header, definitions with their term; `assistant.answering.units`),
ranked by meaning, words, headings and structure
(`assistant.answering.ranking`), and the best unit is quoted first, followed
by at most two more that add something, each cited as ``[n]``. When no unit
addresses the question's focus, the draft says so and the service answers
"not covered" instead of quoting passages that do not answer.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from assistant.answering.answerability import Calibration, Decision, decide, load_calibration
from assistant.answering.asking import ASKING_WORDS
from assistant.answering.citations import defuse_markers
from assistant.answering.ranking import (
    DEFAULT_WEIGHTS,
    Candidate,
    Ranked,
    Weights,
    choose,
    focus_words,
    has_token_vectors,
    rank_units,
)
from assistant.answering.regions import own_rules_first
from assistant.answering.units import segment
from assistant.answering.wholes import whole_fact, whole_table
from assistant.protocols import Embedder, Reader
from assistant.types import Banner, Hit
from assistant.words import STOPWORDS, WORD, content_words, quoted_list, topic_words

__all__ = [
    "EXTRACTIVE_LABEL",
    "HEDGE",
    "NOTHING_FOUND",
    "Draft",
    "Passage",
    "draft_extractive",
    "extract_passages",
    "relevant_unknown_words",
    "stream_extractive",
]

logger = logging.getLogger(__name__)

EXTRACTIVE_LABEL = "Extracted passages (no language model configured):"
NOTHING_FOUND = (
    "No passage of the retrieved sections matches the question's words; see the sources below."
)
# The unsure answer: the decision found the closest passage close, not sure.
HEDGE = "The policies may not answer this exactly. The closest passages say:"
# The retrieved passages the reader reads for the decision.
_READ_PASSAGES = 5
_DELTA = re.compile(r"\S+\s*|\s+")
# Irregular forms whose stem shares too little with the word the documents use.
_IRREGULAR = {
    "laid": "lay",
    "paid": "pay",
    "left": "leave",
    "took": "take",
    "taken": "take",
    "gave": "give",
    "given": "give",
    "got": "get",
    "gotten": "get",
    "went": "go",
    "gone": "go",
    "made": "make",
    "sent": "send",
    "spent": "spend",
    "held": "hold",
    "kept": "keep",
    "told": "tell",
    "sold": "sell",
    "bought": "buy",
    "brought": "bring",
    "chose": "choose",
    "chosen": "choose",
    "wrote": "write",
    "written": "write",
    "fell": "fall",
    "met": "meet",
    "lent": "lend",
    "owed": "owe",
    "children": "child",
    "men": "man",
    "women": "woman",
    "people": "person",
}
_MIN_STEM = 4


@dataclass(frozen=True, slots=True)
class Passage:
    """One quoted unit and the source number it comes from."""

    number: int
    text: str
    score: float
    position: int
    is_table: bool = False


@dataclass(frozen=True, slots=True)
class Draft:
    """The offline answer before it is streamed.

    ``passages`` are best first; ``covered`` is false when no unit of the
    sources addresses the question, and then ``reason`` says why in words a
    user reads. ``hedged``: not covered, but the closest passage is close
    enough to quote under a hedge (`HEDGE`).
    """

    passages: tuple[Passage, ...]
    covered: bool
    reason: str = ""
    unknown_words: tuple[str, ...] = ()
    decision: Decision | None = None
    hedged: bool = False

    @property
    def answered(self) -> bool:
        """Return whether the draft quotes passages: covered, or hedged."""
        return bool(self.passages) and (self.covered or self.hedged)

    @property
    def text(self) -> str:
        """Return the answer as shown: label, optional note, then the quoted passages."""
        parts = [EXTRACTIVE_LABEL]
        named = topic_words(self.unknown_words)
        if named:
            plural = "s" if len(named) > 1 else ""
            parts.append(
                f"Note: the policy documents never use the word{plural} "
                f"{quoted_list(named[:3])}, so these passages may not answer "
                "the question."
            )
        if not self.answered:
            return "\n\n".join([EXTRACTIVE_LABEL, NOTHING_FOUND])
        if not self.covered:
            parts.append(HEDGE)
        for passage in self.passages:
            # The document's own "[2]" must not read, or count, as a citation of source 2.
            text = defuse_markers(passage.text)
            if passage.is_table:
                parts.append(f"From [{passage.number}]:\n\n{text}")
            else:
                parts.append(f"> {text} [{passage.number}]")
        if not self.passages:
            parts.append(NOTHING_FOUND)
        return "\n\n".join(parts)


def draft_extractive(
    question: str,
    sources: Sequence[Hit],
    *,
    embedder: Embedder | None = None,
    unknown_words: Sequence[str] = (),
    retrieval_matched: bool = True,
    weights: Weights = DEFAULT_WEIGHTS,
    added: Sequence[str] = (),
    reader: Reader | None = None,
    calibration: Calibration | None = None,
) -> Draft:
    """Rank the units of ``sources`` for ``question`` and decide whether they answer it.

    Args:
        question: The (standalone) question.
        sources: Numbered sources; ``sources[0]`` is ``[1]``.
        embedder: Embeds the question and the candidate units (one call); without
            it units are ranked by words, headings and structure only.
        unknown_words: Question words no indexed chunk contains (from retrieval);
            only those that matter are named in the answer's note.
        retrieval_matched: Whether retrieval judged its best hits a good match;
            when it did not, a unit must be closer to the question to answer it.
        weights: The ranking's weights.
        added: What a follow-up adds to the earlier topic ("interns"); a draft
            no candidate unit of which names it is not covered.
        reader: Reads the question against the first sources and the candidate
            units (two calls); its probabilities become signals of the decision
            and, by ``weights.reader``, of the ranking.
        calibration: The fitted decision (default: the shipped one).
    """
    unknown = relevant_unknown_words(unknown_words, sources)
    # Word-piece vectors come from the same model run as the pooled ones; they
    # are asked for only when the fitted decision reads a signal of them.
    calibration = calibration or load_calibration()
    tokens = has_token_vectors(embedder) and calibration.with_tokens is not None
    ranked = rank_units(
        question,
        _candidates(sources),
        embedder=embedder,
        unknown_words=unknown,
        weights=weights,
        token_level=tokens,
        reader=reader,
    )
    read = None
    if reader is not None and sources:
        read = reader.score(question, [hit.chunk.text for hit in sources[:_READ_PASSAGES]])
    decision = decide(
        question,
        ranked,
        focus_words(question, unknown),
        unknown,
        doubted=not retrieval_matched,
        with_meaning=embedder is not None,
        with_tokens=tokens,
        added=added,
        passages_read=read,
        calibration=calibration,
    )
    covered = decision.covered
    passages = _quoted(question, ranked, sources, weights) if covered or decision.hedged else ()
    logger.debug(
        "offline draft: %s, p(answers) %.2f",
        "covered" if covered else f"not covered ({decision.reason})",
        decision.probability,
    )
    # The note on words no document uses only matters when the answer is weak:
    # an answer judged covered never carries it (a refusal names them in its reason).
    return Draft(
        passages,
        covered=covered,
        reason=decision.reason,
        unknown_words=() if covered else unknown,
        decision=decision,
        hedged=decision.hedged and bool(passages),
    )


def _quoted(
    question: str,
    ranked: Sequence[Ranked],
    sources: Sequence[Hit],
    weights: Weights,
) -> tuple[Passage, ...]:
    """Return the passages a covered or hedged draft quotes.

    A hedge quotes them all: cut to the closest one, it lost the answer where the
    second passage held it (gold phrase 0.86 -> 0.81 on the sample set).
    """
    quoted = own_rules_first(question, ranked, weights.regional)
    return _passages(question, choose(quoted, weights=weights), _candidates(sources))


def extract_passages(
    question: str,
    sources: Sequence[Hit],
    *,
    max_passages: int = 3,
    embedder: Embedder | None = None,
) -> list[Passage]:
    """Return the passages the offline answer quotes for ``question``, best first."""
    draft = draft_extractive(question, sources, embedder=embedder)
    return list(draft.passages[:max_passages])


def stream_extractive(
    question: str,
    sources: Sequence[Hit],
    *,
    unknown_words: Sequence[str] = (),
    embedder: Embedder | None = None,
    draft: Draft | None = None,
) -> Iterator[str]:
    """Yield the extractive answer in small deltas, each passage followed by ``[n]``.

    Args:
        question: The (standalone) question.
        sources: Numbered sources; ``sources[0]`` is ``[1]``.
        unknown_words: Question words no indexed chunk contains; those that
            matter are named in a note, since the passages cannot be about them.
        embedder: Embeds the question and candidate units for ranking.
        draft: An answer already drafted for the same question and sources.
    """
    if draft is None:
        draft = draft_extractive(question, sources, embedder=embedder, unknown_words=unknown_words)
    # The label is the first delta, typed, so the service hands it on as data.
    label = EXTRACTIVE_LABEL + "\n\n"
    yield Banner(label)
    yield from _DELTA.findall(draft.text.removeprefix(label))


def relevant_unknown_words(words: Sequence[str], sources: Sequence[Hit]) -> tuple[str, ...]:
    """Return the words worth a warning: not function words, not inflections the sources use.

    "laid" (from "laid off") is dropped when the sources say "lay off" or
    "layoff"; "the" or "how" never reach a user's eyes.
    """
    if not words:
        return ()
    vocabulary = {w.lower() for hit in sources for w in WORD.findall(_source_text(hit))}
    stems = content_words(" ".join(vocabulary))
    kept = []
    for word in words:
        lower = word.lower()
        if lower in STOPWORDS or not content_words(lower) or content_words(lower) <= ASKING_WORDS:
            continue
        if _inflection_of(lower, vocabulary, stems):
            continue
        kept.append(word)
    return tuple(kept)


def _inflection_of(word: str, vocabulary: set[str], stems: set[str]) -> bool:
    base = _IRREGULAR.get(word)
    if base is not None and any(v.startswith(base) for v in vocabulary):
        return True
    if content_words(word) & stems:
        return True
    root = word[: max(_MIN_STEM, len(word) - 3)]
    return len(root) >= _MIN_STEM and any(v.startswith(root) for v in vocabulary)


def _candidates(sources: Sequence[Hit]) -> list[Candidate]:
    seen: set[str] = set()
    out: list[Candidate] = []
    for number, hit in enumerate(sources, start=1):
        units = segment(
            _source_text(hit), headings=hit.chunk.heading_path, table_header=hit.chunk.prefix
        )
        for unit in units:
            if unit.text in seen:
                continue
            seen.add(unit.text)
            out.append(Candidate(number, hit.rank, unit))
    return out


def _source_text(hit: Hit) -> str:
    return hit.section_text or hit.chunk.body


def _passages(
    question: str, chosen: Sequence[Ranked], candidates: Sequence[Candidate]
) -> tuple[Passage, ...]:
    """Return the quoted passages; an "each/all" question gets its table whole, once.

    Each passage carries what completes it in its section (a lead-in's list, the
    exception to a rule: `whole_fact`); a unit already quoted inside one is not repeated.
    """
    table = whole_table(question, chosen, candidates)
    out: list[Passage] = []
    if table is not None:
        out.append(
            Passage(table.number, table.text, chosen[0].score, table.position, is_table=True)
        )
        chosen = [
            r
            for r in chosen
            if r.text not in table.rows
            and not (r.candidate.unit.is_table and r.candidate.number == table.number)
        ]
    facts = [(r, whole_fact(question, r, candidates)) for r in chosen]
    for ranked, fact in facts:
        # Dropped when another passage quotes it inside its own (not when they quote each other).
        if any(ranked.text in f.joined and r.text not in fact.joined for r, f in facts):
            continue
        out.append(_passage(ranked, fact.text))
    return tuple(out)


def _passage(ranked: Ranked, text: str) -> Passage:
    c = ranked.candidate
    return Passage(c.number, text, ranked.score, c.unit.position, c.unit.is_table)
