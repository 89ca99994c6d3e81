"""Cut a span of text into pieces under a token limit, as character spans.

Everything here works on ``(start, end)`` offsets into one string, so a piece
is always an exact slice of the source. `split_span` tries the largest natural
boundary first and only descends when a piece is still too long: paragraphs
(blank lines), lines, sentences, words and, as a last resort, a cut by token
count. `split_table` cuts a Markdown table into runs of whole rows, and
`sentence_cut` finds the last sentence end under a limit (to fill a chunk).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from assistant.words import sentence_breaks

__all__ = [
    "LINES",
    "PARAGRAPHS",
    "Cut",
    "TableSplit",
    "first_line",
    "overlap_start",
    "sentence_cut",
    "split_span",
    "split_table",
    "trim",
]

Counter = Callable[[str], int]
Span = tuple[int, int]
Cut = tuple[int, int, int]
"""A piece: ``(start, end, tokens)``."""

_PARAGRAPH = re.compile(r"\n[ \t]*\n")
_LINE = re.compile(r"\n")
_SENTENCE = re.compile(r"(?<=[.?!])[ \t\n]+")
_WORD = re.compile(r"\s+")
_LEVELS = (_PARAGRAPH, _LINE, _SENTENCE, _WORD)
PARAGRAPHS = 0
"""Level index: start splitting at blank lines (prose)."""
LINES = 1
"""Level index: start splitting at newlines (code)."""
_WORD_START = re.compile(r"(?<!\S)\S")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
# Spans a sentence cut must not fall inside: Markdown links and images (their text
# may hold ". A"), autolinks and inline code. Bare URLs hold no white space, so no
# sentence break can fall inside one.
_UNBREAKABLE = re.compile(
    r"!?\[[^\]\n]*\]\([^)\n]*\)"  # [text](url), ![alt](src)
    r"|!?\[[^\]\n]*\]\[[^\]\n]*\]"  # [text][ref]
    r"|<[^<>\s]+>"  # <https://...>
    r"|`[^`\n]+`"  # `code`
)


def trim(text: str, start: int, end: int) -> Span | None:
    """Return ``(start, end)`` without surrounding whitespace, or None if blank."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def first_line(text: str, start: int, end: int) -> Span:
    """Return the span of the first line of ``text[start:end]`` (without its newline)."""
    newline = text.find("\n", start, end)
    return (start, end if newline < 0 else newline)


def split_span(
    text: str,
    start: int,
    end: int,
    *,
    limit: int,
    count: Counter,
    level: int = PARAGRAPHS,
    tokens: int | None = None,
) -> list[Cut]:
    """Split ``text[start:end]`` into trimmed pieces of at most ``limit`` tokens each.

    Args:
        text: The whole source text.
        start: Start of the span to split.
        end: End (exclusive) of the span to split.
        limit: Maximum tokens per piece (at least 1).
        count: Counts the tokens of a string.
        level: The first boundary kind to try (`PARAGRAPHS` or `LINES`).
        tokens: The span's token count, if the caller already knows it.

    Returns:
        ``(start, end, tokens)`` of non-blank, whitespace-trimmed pieces in
        order that cover every non-whitespace character of the input span.
    """
    span = trim(text, start, end)
    if span is None:
        return []
    if tokens is None or span != (start, end):
        tokens = count(text[span[0] : span[1]])
    if tokens <= limit:
        return [(*span, tokens)]
    return _split(text, span, limit=max(1, limit), count=count, level=level)


def _split(text: str, span: Span, *, limit: int, count: Counter, level: int) -> list[Cut]:
    """Split a span known to exceed ``limit``, starting at boundary ``level``."""
    if level >= len(_LEVELS):
        return _cut_by_tokens(text, span, limit=limit, count=count)
    segments = _segments(text, span, _LEVELS[level])
    if len(segments) < 2:
        return _split(text, span, limit=limit, count=count, level=level + 1)
    weighted = []
    previous_end = span[0]
    for seg_start, seg_end in segments:
        # Count each segment with the whitespace before it: a sum of these is a
        # close estimate of the joined text's count (" word" is one token).
        weighted.append((seg_start, seg_end, count(text[previous_end:seg_end])))
        previous_end = seg_end
    return join_segments(
        text,
        weighted,
        limit=limit,
        count=count,
        oversize=lambda s: _split(text, s, limit=limit, count=count, level=level + 1),
    )


def _segments(text: str, span: Span, pattern: re.Pattern[str]) -> list[Span]:
    pieces = []
    cursor = span[0]
    for match in pattern.finditer(text, span[0], span[1]):
        piece = trim(text, cursor, match.start())
        if piece is not None:
            pieces.append(piece)
        cursor = match.end()
    last = trim(text, cursor, span[1])
    if last is not None:
        pieces.append(last)
    return pieces


def join_segments(
    text: str,
    segments: Sequence[Cut],
    *,
    limit: int,
    count: Counter,
    oversize: Callable[[Span], list[Cut]],
) -> list[Cut]:
    """Greedily join consecutive ``(start, end, tokens)`` segments into pieces under ``limit``.

    Token sums are an estimate; each joined piece is counted exactly once and
    shrunk from the right if the estimate was optimistic. A segment that alone
    exceeds ``limit`` is handed to ``oversize``.
    """
    out: list[Cut] = []
    i = 0
    while i < len(segments):
        seg_start, seg_end, total = segments[i]
        j = i
        while j + 1 < len(segments) and total + segments[j + 1][2] <= limit:
            j += 1
            total += segments[j][2]
        exact = count(text[seg_start : segments[j][1]])
        while exact > limit and j > i:
            j -= 1
            exact = count(text[seg_start : segments[j][1]])
        if exact > limit:
            out.extend(oversize((seg_start, seg_end)))
        else:
            out.append((seg_start, segments[j][1], exact))
        i = j + 1
    return out


def _cut_by_tokens(text: str, span: Span, *, limit: int, count: Counter) -> list[Cut]:
    """Cut a span with no usable boundary into the longest slices that fit ``limit``."""
    out = []
    start, end = span
    while start < end:
        stop, tokens = _longest_fit(text, start, end, limit=limit, count=count)
        out.append((start, stop, tokens))
        start = stop
        while start < end and text[start].isspace():
            start += 1
    return out


def _longest_fit(text: str, start: int, end: int, *, limit: int, count: Counter) -> tuple[int, int]:
    """Return the largest ``stop`` (at least ``start + 1``) with ``text[start:stop]`` in budget.

    A galloping search: windows double until one is too long, then bisect, so
    each call encodes only a few times the piece's own length.

    Returns:
        ``stop`` and the token count of ``text[start:stop]``.
    """
    low, low_tokens, width = start + 1, -1, 8 * limit
    while True:
        high = min(end, start + width)
        high_tokens = count(text[start:high])
        if high_tokens > limit:
            break
        if high == end:
            return end, high_tokens
        low, low_tokens, width = high, high_tokens, 2 * width
    while high - low > 1:  # text[start:low] fits (or is one char); text[start:high] does not
        middle = (low + high) // 2
        tokens = count(text[start:middle])
        if tokens <= limit:
            low, low_tokens = middle, tokens
        else:
            high = middle
    return low, low_tokens if low_tokens >= 0 else count(text[start:low])


@dataclass(frozen=True, slots=True)
class TableSplit:
    """A table cut into row runs; ``prefix`` repeats the header in later pieces."""

    pieces: tuple[Cut, ...]
    prefix: str


def split_table(
    text: str, start: int, end: int, *, limit: int, count: Counter, prefix_limit: int
) -> TableSplit:
    """Split a pipe table into runs of whole rows.

    The first piece starts with the header and separator rows; later pieces
    carry them as ``prefix`` (the header and rule lines, each newline-ended); their
    budget shrinks by its token count. A header longer than ``prefix_limit``
    is not repeated. A single row longer than the budget is split like prose
    (words, then tokens): the budget wins over row integrity.

    Args:
        text: The whole source text.
        start: Start of the table block.
        end: End (exclusive) of the table block.
        limit: Maximum tokens of a piece's body plus its prefix.
        count: Counts the tokens of a string.
        prefix_limit: Largest acceptable prefix in tokens.

    Returns:
        The row-run spans and the prefix for every piece after the first.
    """
    lines = _segments(text, (start, end), _LINE)
    head = 2 if len(lines) > 1 and _TABLE_RULE.match(text[lines[1][0] : lines[1][1]]) else 1
    prefix = "".join(text[a:b] + "\n" for a, b in lines[:head])
    prefix_tokens = count(prefix)
    if prefix_tokens > prefix_limit:
        prefix, prefix_tokens = "", 0
    rows = [(lines[0][0], lines[head - 1][1]), *lines[head:]]
    weighted = [(a, b, count(text[a:b]) + 1) for a, b in rows]
    taken, total = 1, weighted[0][2]
    while taken < len(weighted) and total + weighted[taken][2] <= limit:
        total += weighted[taken][2]
        taken += 1
    too_long = lambda s: [(s[0], s[1], limit + 1)]  # noqa: E731
    first = join_segments(text, weighted[:taken], limit=limit, count=count, oversize=too_long)[0]
    rest = [row for row in weighted if row[0] >= first[1]]
    pieces, rest_limit = [first], limit - prefix_tokens
    if first[2] > limit:  # the header alone is too long: split it like prose, repeat nothing
        pieces = split_span(text, first[0], first[1], limit=limit, count=count, level=LINES)
        prefix, rest_limit = "", limit
    pieces += join_segments(
        text,
        rest,
        limit=rest_limit,
        count=count,
        oversize=lambda s: split_span(text, s[0], s[1], limit=rest_limit, count=count, level=2),
    )
    return TableSplit(tuple(pieces), prefix)


def overlap_start(
    text: str, low: int, end: int, *, allowance: int, count: Counter
) -> tuple[int, int] | None:
    """Find where a chunk may start inside the tail ``text[low:end]`` of the previous one.

    Candidates are word starts; a sentence (or line) start is preferred when
    it keeps at least half the overlap the best word start would.

    Args:
        text: The whole source text.
        low: The earliest allowed start.
        end: The end of the previous chunk.
        allowance: Maximum tokens of ``text[start:end]``.
        count: Counts the tokens of a string.

    Returns:
        ``(start, tokens of text[start:end])``, or None when no start fits.
    """
    window = max(low, end - 8 * allowance)
    words = [m.start() for m in _WORD_START.finditer(text, window, end)]
    word = _earliest_fitting(text, words, end, allowance, count)
    if word is None:
        return None
    sentences = [p for p in words if p >= word[0] and _starts_sentence(text, p)]
    sentence = _earliest_fitting(text, sentences, end, allowance, count)
    return sentence if sentence and 2 * sentence[1] >= word[1] else word


def _starts_sentence(text: str, position: int) -> bool:
    back = position - 1
    while back >= 0 and text[back].isspace():
        if text[back] == "\n":
            return True
        back -= 1
    return back < 0 or text[back] in ".?!:;"


def _earliest_fitting(
    text: str, candidates: Sequence[int], end: int, allowance: int, count: Counter
) -> tuple[int, int] | None:
    """Binary-search the first candidate whose ``text[candidate:end]`` fits ``allowance``."""
    best = None
    low, high = 0, len(candidates)
    while low < high:
        middle = (low + high) // 2
        tokens = count(text[candidates[middle] : end])
        if tokens <= allowance:
            best, high = (candidates[middle], tokens), middle
        else:
            low = middle + 1
    return best


def sentence_cut(
    text: str, start: int, end: int, *, room: int, count: Counter
) -> tuple[int, int, int] | None:
    """Find the last sentence end in ``text[start:end]`` whose head fits ``room`` tokens.

    Sentences are those of `assistant.words.sentence_breaks` (never inside a URL,
    a decimal or after an abbreviation); text with no capital letter at all is
    read with its loose rule (sentences may start in lower case). No cut falls
    inside a Markdown link, an autolink or inline code, and none at the very end.

    Args:
        text: The whole source text.
        start: Start of the span (a trimmed block or piece of one).
        end: End (exclusive) of the span.
        room: Maximum tokens of the head ``text[start:cut]``.
        count: Counts the tokens of a string.

    Returns:
        ``(head end, tail start, head tokens)``, or None when no sentence end fits.
    """
    if room <= 0:
        return None
    span = text[start:end]
    loose = not any(char.isupper() for char in span)
    guarded = [(m.start(), m.end()) for m in _UNBREAKABLE.finditer(span)]
    breaks = [
        (start + a, start + b)
        for a, b in sentence_breaks(span, loose=loose)
        if b < len(span) and not any(g0 < a < g1 for g0, g1 in guarded)
    ]
    best = None
    low, high = 0, len(breaks)
    while low < high:  # the head's count grows with the cut: bisect the last that fits
        middle = (low + high) // 2
        tokens = count(text[start : breaks[middle][0]])
        if tokens <= room:
            best, low = (*breaks[middle], tokens), middle + 1
        else:
            high = middle
    return best
