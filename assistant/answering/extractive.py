"""The offline answer mode: quote the retrieved sentences that best match the question.

With no language model configured, the assistant still answers: it scores
every sentence (and every table row, kept whole with its header) of the
numbered sources by the question's content words it shares, plus a small
bonus for the source's rank, and quotes the best few, each cited as ``[n]``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from assistant.answering.citations import defuse_markers
from assistant.types import Hit
from assistant.words import content_words, quoted_list

__all__ = ["EXTRACTIVE_LABEL", "NOTHING_FOUND", "Passage", "extract_passages", "stream_extractive"]

EXTRACTIVE_LABEL = "Extracted passages (no language model configured):"
NOTHING_FOUND = (
    "No passage of the retrieved sections matches the question's words; see the sources below."
)
_SENTENCE = re.compile(r"[^.!?]+(?:[.!?]+(?=\s|$)|$)")
_TABLE_RULE = re.compile(r"^\|?\s*:?-{2,}")
_DELTA = re.compile(r"\S+\s*|\s+")
_RANK_BONUS = 0.5


@dataclass(frozen=True, slots=True)
class Passage:
    """One quoted sentence or table row and the source number it comes from."""

    number: int
    text: str
    score: float
    position: int
    is_table: bool = False


def extract_passages(
    question: str, sources: Sequence[Hit], *, max_passages: int = 4
) -> list[Passage]:
    """Return the best passages of ``sources`` for ``question``, in source order.

    Args:
        question: The (standalone) question.
        sources: Numbered sources; ``sources[0]`` is ``[1]``.
        max_passages: How many passages to quote at most.

    Returns:
        Passages sharing at least two of the question's content words (one if
        it has only one), best
        ``max_passages`` by score, ordered by source number and position.
    """
    wanted = content_words(question)
    # One shared word is too weak when the question has several ("menu" alone).
    needed = min(2, len(wanted))
    candidates: list[Passage] = []
    for number, hit in enumerate(sources, start=1):
        units = _units(hit.section_text or hit.chunk.body)
        for position, (text, scored, is_table) in enumerate(units):
            shared = len(content_words(scored) & wanted)
            context = len(content_words(text) & wanted) - shared  # a row's table header
            if shared and shared + context >= needed:
                score = (shared + context / 2) / math.sqrt(len(wanted)) + _RANK_BONUS / hit.rank
                candidates.append(Passage(number, text, score, position, is_table))
    best = sorted(candidates, key=lambda p: -p.score)[:max_passages]
    return sorted(best, key=lambda p: (p.number, p.position))


def stream_extractive(
    question: str, sources: Sequence[Hit], *, unknown_words: Sequence[str] = ()
) -> Iterator[str]:
    """Yield the extractive answer in small deltas, each passage followed by ``[n]``.

    Args:
        question: The (standalone) question.
        sources: Numbered sources; ``sources[0]`` is ``[1]``.
        unknown_words: Question words no indexed chunk contains; named in a note,
            since the passages cannot be about them.
    """
    passages = extract_passages(question, sources)
    parts = [EXTRACTIVE_LABEL]
    if unknown_words:
        plural = "s" if len(unknown_words) > 1 else ""
        parts.append(
            f"Note: the policy documents never use the word{plural} "
            f"{quoted_list(unknown_words[:3])}, so these passages may not answer the question."
        )
    for passage in passages:
        # The document's own "[2]" must not read, or count, as a citation of source 2.
        text = defuse_markers(passage.text)
        if passage.is_table:
            parts.append(f"From [{passage.number}]:\n\n{text}")
        else:
            parts.append(f"> {text} [{passage.number}]")
    if not passages:
        parts.append(NOTHING_FOUND)
    yield from _DELTA.findall("\n\n".join(parts))


def _units(text: str) -> Iterator[tuple[str, str, bool]]:
    """Yield (shown text, scored text, is a table row) for each sentence and table row.

    A table row is shown with the table's header so it reads on its own, but
    only the row's own words count, so rows are told apart.
    """
    header: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|"):
            if _TABLE_RULE.match(stripped.lstrip("|").strip()) or not header:
                header.append(stripped)
                continue
            yield "\n".join([*header[:2], stripped]), stripped, True
            continue
        header = []
        if not stripped or stripped.startswith("#"):
            continue
        body = re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", stripped)
        for sentence in _SENTENCE.findall(body):
            if len(sentence.split()) >= 3:
                yield sentence.strip(), sentence, False
