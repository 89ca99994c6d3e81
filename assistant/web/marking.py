"""Highlight a passage inside rendered HTML: ``<mark>`` around the text nodes it covers.

The passage is plain text (`assistant.session.plain`), the page is HTML in which it may
run across inline markup (``<strong>``, links); matching folds case and runs of
white space, and each text node the passage touches gets its own ``<mark>`` so the
HTML stays well formed. The first one carries ``id="cited"``, the link's target.
The first `PROBE_CHARS` place the passage; the mark then runs as far as the page goes
on to match it, and never stops inside a word.
"""

from __future__ import annotations

import html
import re

__all__ = ["PROBE_CHARS", "mark_passage"]

# Enough of the passage to place it; a long one may run past the end of its paragraph.
PROBE_CHARS = 80
_TAG = re.compile(r"(<[^>]*>)")
_BULLET = re.compile(r"^[•\s]+")


def mark_passage(page: str, passage: str) -> str | None:
    """Return ``page`` with ``passage`` marked, or None when it does not occur."""
    whole = " ".join(_BULLET.sub("", passage).split()).lower()
    probe = whole[:PROBE_CHARS].strip()
    if not probe:
        return None
    tokens = _TAG.split(page)
    texts = ["" if _TAG.fullmatch(token) else html.unescape(token) for token in tokens]
    folded, where = _fold(tokens, texts)
    start = folded.find(probe)
    if start < 0:
        return None
    end = _word_end(folded, start + _matching(folded[start:], whole))
    spans = _spans(where[start:end])
    return "".join(_marked(index, token, texts[index], spans) for index, token in enumerate(tokens))


def _matching(text: str, wanted: str) -> int:
    """Return how many leading characters of ``text`` match ``wanted``."""
    count = 0
    for have, want in zip(text, wanted, strict=False):
        if have != want:
            break
        count += 1
    return count


def _word_end(text: str, end: int) -> int:
    """Return ``end`` moved on to the end of the word it falls inside, if any."""
    while 0 < end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
        end += 1
    return end


def _fold(tokens: list[str], texts: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """Return the page's text lower-cased with single spaces, and each char's origin."""
    chars: list[str] = []
    where: list[tuple[int, int]] = []
    for index, text in enumerate(texts):
        for offset, char in enumerate(text):
            if char.isspace():
                if not chars or chars[-1] == " ":
                    continue
                char = " "
            lowered = char.lower()
            if len(lowered) != 1:
                lowered = char
            chars.append(lowered)
            where.append((index, offset))
    return "".join(chars), where


def _spans(origins: list[tuple[int, int]]) -> dict[int, tuple[int, int]]:
    spans: dict[int, tuple[int, int]] = {}
    for index, offset in origins:
        first, last = spans.get(index, (offset, offset))
        spans[index] = (min(first, offset), max(last, offset))
    return spans


def _marked(index: int, token: str, text: str, spans: dict[int, tuple[int, int]]) -> str:
    if index not in spans:
        return token
    first, last = spans[index]
    ident = ' id="cited"' if index == min(spans) else ""
    before, inside, after = text[:first], text[first : last + 1], text[last + 1 :]
    esc = html.escape
    return f"{esc(before, quote=False)}<mark{ident}>{esc(inside, quote=False)}</mark>" + esc(
        after, quote=False
    )
