"""A deliberately simple answerer to measure the real one against.

It quotes the three sentences of the top five retrieved sections that are
closest in meaning to the question (cosine of the configured embedder, one
batched call per question), best first, each followed by its ``[n]``. It has no
notion of structure, figures or "not covered": that is the point of a baseline.
``python -m assistant eval --answers --answer-mode baseline`` runs it on the same
retrieval as the assistant.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

import numpy as np

from assistant.protocols import Embedder
from assistant.types import Hit

__all__ = ["baseline_answer", "sentences"]

logger = logging.getLogger(__name__)

_BLOCK_BREAK = re.compile(r"\n[ \t]*\n")
# A line that starts a list item or table row is its own unit, not a wrapped continuation.
_NEW_ITEM = re.compile(r"^(?:[-*+]\s|\d+[.)]\s|\|)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_MIN_WORDS = 3


def sentences(text: str) -> list[str]:
    """Return the sentences of ``text``: paragraphs re-joined, then split after . ! or ?.

    List items stay separate and a table row is one unit ("14% p.a." ends no sentence
    there); headings and pieces under three words are left out.
    """
    units: list[str] = []
    for block in _BLOCK_BREAK.split(text):
        lines: list[str] = []
        for raw in block.splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if lines and not _NEW_ITEM.match(line):
                lines[-1] += " " + line
            else:
                lines.append(line)
        for line in lines:
            pieces = [line] if line.startswith("|") else _SENTENCE_END.split(line)
            units += [s for s in pieces if len(s.split()) >= _MIN_WORDS]
    return units


def baseline_answer(
    question: str,
    hits: Sequence[Hit],
    *,
    embedder: Embedder,
    sections: int = 5,
    quotes: int = 3,
) -> str:
    """Return the ``quotes`` sentences of the top ``sections`` hits closest to ``question``.

    Args:
        question: The question as asked.
        hits: The retrieved hits, best first; ``hits[0]`` is cited ``[1]``.
        embedder: The model the index was built with.
        sections: How many hits to quote from (each hit's ``section_text``, else its body).
        quotes: How many sentences to quote.

    Returns:
        The sentences, best first, each followed by its citation marker; "" without sentences.
    """
    candidates: list[tuple[int, str]] = []
    seen: set[str] = set()
    for number, hit in enumerate(hits[:sections], start=1):
        for sentence in sentences(hit.section_text or hit.chunk.body):
            key = " ".join(sentence.split()).casefold()
            if key not in seen:  # two hits of one section share their sentences
                seen.add(key)
                candidates.append((number, sentence))
    if not candidates:
        return ""
    vectors = np.asarray(embedder.embed([question, *(s for _, s in candidates)]), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1)
    norms[norms == 0] = 1.0
    unit = vectors / norms[:, None]
    cosines = unit[1:] @ unit[0]
    best = np.argsort(-cosines, kind="stable")[:quotes]
    logger.debug(
        "baseline: %d candidate sentences, best cosine %.3f", len(candidates), cosines[best[0]]
    )
    return " ".join(f"{candidates[i][1]} [{candidates[i][0]}]" for i in best)
