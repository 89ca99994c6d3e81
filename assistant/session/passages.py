"""Which passage of a source an answer cites, so its link lands on that passage.

A hit's chunk names the first section it covers ("Purpose"), while the sentence the
answer cites may sit in a later sub-section its expanded text holds ("Interest").
For each cited source this finds the source sentence sharing the most words with the
answer sentences that cite it; the viewer link carries it and the viewer scrolls to,
and highlights, the place it occurs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from assistant.session.plain import plain_text
from assistant.types import Answer, Hit
from assistant.words import content_words

__all__ = ["MAX_PASSAGE_CHARS", "cited_passages", "passage_for"]

MAX_PASSAGE_CHARS = 160
_MARKER = re.compile(r"\[(\d{1,3})\]")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[A-Z0-9•\"'(])|\n+")


def cited_passages(answer: Answer) -> Mapping[int, str]:
    """Return, per cited source number, the sentence of the source the answer relies on."""
    claims: dict[int, list[str]] = {}
    for sentence in _sentences(answer.text):
        for number in {int(n) for n in _MARKER.findall(sentence)}:
            if 1 <= number <= len(answer.sources):
                claims.setdefault(number, []).append(_MARKER.sub(" ", sentence))
    passages: dict[int, str] = {}
    for number, said in claims.items():
        passage = passage_for(answer.sources[number - 1], " ".join(said))
        if passage:
            passages[number] = passage
    return passages


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
    return best[:MAX_PASSAGE_CHARS].strip()


def _sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]
