"""Small shared pieces of the loaders: their result type and title helpers."""

from __future__ import annotations

import re
from dataclasses import dataclass

from assistant.types import DocMeta, Section

__all__ = ["Extracted", "fallback_title", "slugify"]

_SLUG_DROP = re.compile(r"[^\w\- ]", flags=re.UNICODE)
_STEM_SPLIT = re.compile(r"[\s_\-.]+")


@dataclass(frozen=True, slots=True)
class Extracted:
    """What a loader produces: the text that offsets refer to, metadata and sections."""

    text: str
    meta: DocMeta
    sections: tuple[Section, ...]
    page_starts: tuple[int, ...] = ()


def fallback_title(stem: str) -> str:
    """Turn a file stem into a title: ``"loan-policy"`` becomes ``"Loan Policy"``.

    Args:
        stem: The file name without its suffix.

    Returns:
        The words of the stem, each with a capital first letter; ``stem`` itself
        when it has no words.
    """
    words = [w for w in _STEM_SPLIT.split(stem) if w]
    if not words:
        return stem
    return " ".join(w[:1].upper() + w[1:] for w in words)


def slugify(heading: str) -> str:
    """Return the GitHub-style anchor slug of a heading (without de-duplication).

    Args:
        heading: The heading's plain text.

    Returns:
        Lowercase text with punctuation dropped and spaces turned into ``-``.
    """
    return _SLUG_DROP.sub("", heading.strip().lower()).replace(" ", "-")
