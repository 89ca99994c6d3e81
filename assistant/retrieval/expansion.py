"""Small to big: rebuild a hit's enclosing section from its chunks, under a token budget.

The index stores chunks, not sections. A section's text is recovered from the
chunks that share its ``(source, section_start, section_end)``: their bodies are
exact slices of the document (``body == text[char_start:char_end]``) and may
overlap, so they are merged by offsets; the whitespace gaps between
non-overlapping chunks become one blank line. The heading path is not part
of the section text (``Chunk.heading_path`` carries it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from assistant.tokens import Tokenizer
from assistant.types import Chunk

__all__ = [
    "SectionKey",
    "SectionText",
    "collapse_near_duplicates",
    "demote_neighbours",
    "section_key",
]

SectionKey = tuple[str, int, int]


def section_key(chunk: Chunk) -> SectionKey:
    """Return the key shared by all chunks of one section."""
    return (chunk.source, chunk.section_start, chunk.section_end)


@dataclass(frozen=True, slots=True)
class _Line:
    start: int
    end: int
    text: str
    tokens: int


_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


class SectionText:
    """One section's merged text, split into lines that know their document offsets."""

    def __init__(self, chunks: Sequence[Chunk], *, tokenizer: Tokenizer) -> None:
        """Merge ``chunks`` (all of one section) and count each line's tokens."""
        self._tokenizer = tokenizer
        self.lines = tuple(
            _Line(start, end, text, tokenizer.count(text) if text.strip() else 0)
            for start, end, text in _split_lines(_merge_spans(chunks))
        )

    @property
    def text(self) -> str:
        """Return the whole section text."""
        return "\n".join(line.text for line in self.lines)

    def window(self, chunk: Chunk, *, budget: int) -> str:
        """Return the section text, or the lines around ``chunk`` that fit in ``budget`` tokens.

        Lines overlapping the chunk's span come first; neighbours are then added
        alternately before and after while the estimate stays within budget. If the
        chunk alone exceeds the budget, its body is cut to ``budget`` tokens.
        """
        lines = self.lines
        if _estimate(lines) <= budget:
            return self.text
        core = [
            i
            for i, ln in enumerate(lines)
            if ln.start < chunk.char_end and chunk.char_start < ln.end
        ]
        if not core or _estimate(lines[core[0] : core[-1] + 1]) > budget:
            return self._tokenizer.decode(self._tokenizer.encode(chunk.body)[:budget])
        lo, hi = core[0], core[-1] + 1
        grew = True
        while grew:
            grew = False
            if lo > 0 and _estimate(lines[lo - 1 : hi]) <= budget:
                lo, grew = lo - 1, True
            if hi < len(lines) and _estimate(lines[lo : hi + 1]) <= budget:
                hi, grew = hi + 1, True
        text = "\n".join(ln.text for ln in lines[lo:hi])
        while self._tokenizer.count(text) > budget and (lo < core[0] or hi > core[-1] + 1):
            # The estimate is nearly always an upper bound; trim the longer side if not.
            lo, hi = (lo + 1, hi) if core[0] - lo >= hi - 1 - core[-1] else (lo, hi - 1)
            text = "\n".join(ln.text for ln in lines[lo:hi])
        return _with_table_header(lines, lo, text)


def _with_table_header(lines: Sequence[_Line], lo: int, text: str) -> str:
    """Return ``text`` with its table's header row first when the window starts mid-table.

    Rows without their header are figures without labels ("| 12% | 3 months |"); the
    header and its ``|---|`` line cost a few tokens over the budget, and are worth them.
    """
    if not _is_row(lines[lo].text):
        return text
    start = lo
    while start > 0 and _is_row(lines[start - 1].text):
        start -= 1
    header = lines[start : start + 2]
    if start + 2 > lo or len(header) < 2 or not _SEPARATOR.match(header[1].text):
        return text
    return "\n".join(line.text for line in header) + "\n" + text


def _is_row(text: str) -> bool:
    stripped = text.strip()
    return stripped.startswith("|") and stripped.endswith("|") and len(stripped) > 1


def _estimate(lines: Sequence[_Line]) -> int:
    return sum(ln.tokens for ln in lines) + max(0, len(lines) - 1)


def _merge_spans(chunks: Sequence[Chunk]) -> list[tuple[int, str]]:
    """Return contiguous ``(doc_offset, text)`` segments covered by the chunks' bodies."""
    segments: list[tuple[int, str]] = []
    cursor = -1
    for chunk in sorted(chunks, key=lambda c: (c.char_start, c.char_end)):
        if segments and chunk.char_start <= cursor:
            if chunk.char_end > cursor:
                start, text = segments[-1]
                segments[-1] = (start, text + chunk.body[cursor - chunk.char_start :])
                cursor = chunk.char_end
            continue
        segments.append((chunk.char_start, chunk.body))
        cursor = chunk.char_end
    return segments


def _split_lines(segments: Sequence[tuple[int, str]]) -> list[tuple[int, int, str]]:
    lines: list[tuple[int, int, str]] = []
    for start, text in segments:
        if lines:  # a blank line between non-adjacent chunks keeps paragraphs apart
            lines.append((start, start, ""))
        offset = start + len(text) - len(text.lstrip("\n"))
        for part in text.strip("\n").split("\n"):
            lines.append((offset, offset + len(part), part))
            offset += len(part) + 1
    return lines


def collapse_near_duplicates(
    rows: Sequence[int], chunks: Sequence[Chunk]
) -> tuple[list[int], list[int]]:
    """Drop rows that mostly repeat a better row's span in the same section.

    A row is a near-duplicate when its overlap with a kept row of its section
    covers at least half of the shorter of the two spans. Neighbours that share
    only the chunker's overlap margin are kept (see `demote_neighbours`).

    Args:
        rows: Candidate rows, best first.
        chunks: The snapshot's chunks, indexed by row.

    Returns:
        ``(kept, dropped)``, both in input order.
    """
    kept: list[int] = []
    dropped: list[int] = []
    spans: dict[SectionKey, list[tuple[int, int]]] = {}
    for row in rows:
        chunk = chunks[row]
        taken = spans.setdefault(section_key(chunk), [])
        if any(_overlap_share(chunk, start, end) >= 0.5 for start, end in taken):
            dropped.append(row)
        else:
            kept.append(row)
            taken.append((chunk.char_start, chunk.char_end))
    return kept, dropped


def demote_neighbours(
    fused: Sequence[tuple[int, float]], chunks: Sequence[Chunk], *, penalty: float
) -> list[tuple[int, float]]:
    """Lower by ``penalty`` each row that overlaps a better row of its section; re-sort.

    Adjacent chunks share an overlap margin, so a question matching one often
    matches its neighbour almost as well. Dropping the neighbour outright hid
    the chunk that holds the fact whenever the one above it scored a little
    higher (5 of 63 dev questions, docs/retrieval-eval.md); a small penalty
    keeps such neighbours listed when they are strong, behind other sections
    otherwise.

    Args:
        fused: ``(row, value)`` pairs, best first.
        chunks: The snapshot's chunks, indexed by row.
        penalty: Subtracted from a neighbour's value.

    Returns:
        ``(row, value)`` pairs, best first (ties in input order).
    """
    spans: dict[SectionKey, list[tuple[int, int]]] = {}
    out: list[tuple[int, float]] = []
    for row, value in fused:
        chunk = chunks[row]
        taken = spans.setdefault(section_key(chunk), [])
        touches = any(start < chunk.char_end and chunk.char_start < end for start, end in taken)
        out.append((row, value - penalty if touches else value))
        taken.append((chunk.char_start, chunk.char_end))
    return sorted(out, key=lambda item: -item[1])


def _overlap_share(chunk: Chunk, start: int, end: int) -> float:
    """Return the overlap of ``chunk`` with ``[start, end)`` over the shorter span's length."""
    overlap = min(chunk.char_end, end) - max(chunk.char_start, start)
    shorter = min(chunk.char_end - chunk.char_start, end - start)
    return overlap / shorter if overlap > 0 and shorter > 0 else 0.0
