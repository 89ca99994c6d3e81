"""Pack a group of blocks into chunk-sized pieces, with overlap (internal to chunking).

`pack` turns a `Group` (one section, or merged sibling sections) into `Piece`
values: blocks that fit become units, bigger ones are cut by
`assistant.splitting`, units are packed greedily and each piece is counted
exactly once. See `assistant.chunking` for the rules.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from assistant.config import ChunkingSettings
from assistant.splitting import (
    LINES,
    PARAGRAPHS,
    Counter,
    Cut,
    first_line,
    overlap_start,
    split_span,
    split_table,
)
from assistant.types import BlockKind, compose_chunk_text

if TYPE_CHECKING:  # tiktoken is only needed by whoever builds the tokenizer
    from assistant.tokens import Tokenizer

__all__ = ["Context", "Group", "Measured", "Piece", "pack"]

logger = logging.getLogger(__name__)

_PROSE: frozenset[str] = frozenset({"paragraph", "list_item", "other", "heading"})
_FENCES = ("```", "~~~")


@dataclass(frozen=True, slots=True)
class Measured:
    """A block trimmed of surrounding whitespace, with its token count."""

    kind: BlockKind
    start: int
    end: int
    tokens: int
    page: int


@dataclass(frozen=True, slots=True)
class Group:
    """Sections that are chunked together: one section, or merged tiny siblings."""

    heading_path: tuple[str, ...]
    anchor: str
    start: int
    end: int
    lead: int | None  # where the first chunk's body starts, if before the first block
    blocks: tuple[Measured, ...]


@dataclass(frozen=True, slots=True)
class _Unit:
    """A span the packer never splits: a whole block or one piece of a big block."""

    start: int
    end: int
    tokens: int
    kind: BlockKind
    page: int
    block: int
    prefix: str = ""
    prefix_tokens: int = 0
    solo: bool = False  # must be a chunk on its own (FAQ entries, split tables/code)


@dataclass(frozen=True, slots=True)
class Piece:
    """A finished chunk before numbering."""

    start: int
    end: int
    prefix: str
    body: str
    text: str
    tokens: int
    kind: BlockKind
    page: int


class Context:
    """The document text, the settings and cached token counts."""

    def __init__(self, text: str, settings: ChunkingSettings, tokenizer: Tokenizer) -> None:
        self.text = text
        self.max_tokens = settings.max_tokens
        self.overlap = settings.overlap_tokens
        self.min_tokens = settings.min_tokens
        self.tokenizer = tokenizer
        self._small: dict[str, int] = {}
        self._headings: dict[tuple[str, ...], tuple[tuple[str, ...], int]] = {}

    def count(self, text: str) -> int:
        """Count tokens, caching short strings (blank-line gaps recur constantly)."""
        if len(text) > 24:
            return self.tokenizer.count(text)
        cached = self._small.get(text)
        if cached is None:
            cached = self._small[text] = self.tokenizer.count(text)
        return cached

    def span(self, start: int, end: int) -> int:
        """Count the tokens of ``text[start:end]``."""
        return self.count(self.text[start:end]) if start < end else 0

    def heading(self, path: tuple[str, ...]) -> tuple[tuple[str, ...], int]:
        """Return the heading path as shown (shortened to half the budget) and its cost."""
        cached = self._headings.get(path)
        if cached is None:
            cached = self._headings[path] = _fit_heading(path, self.max_tokens // 2, self.count)
        return cached


def _fit_heading(path: tuple[str, ...], limit: int, count: Counter) -> tuple[tuple[str, ...], int]:
    tokens = count(compose_chunk_text(path, "", ""))
    while tokens > limit and len(path) > 1:
        path = path[1:]
        tokens = count(compose_chunk_text(path, "", ""))
    if tokens > limit:
        heading = path[0]
        first = split_span(heading, 0, len(heading), limit=max(1, limit - 4), count=count)[0]
        path = (heading[: first[1]] + "…",)
        tokens = count(compose_chunk_text(path, "", ""))
    return path, tokens


# --- blocks to units ----------------------------------------------------------


def _units(group: Group, ctx: Context, avail: int) -> list[_Unit]:
    units: list[_Unit] = []
    for index, block in enumerate(group.blocks):
        whole = _Unit(block.start, block.end, block.tokens, block.kind, block.page, index)
        if block.tokens <= avail:
            units.append(replace(whole, solo=block.kind == "faq"))
        elif block.kind == "table":
            units.extend(_table_units(whole, ctx, avail))
        elif block.kind == "code":
            units.extend(_code_units(whole, ctx, avail))
        else:
            units.extend(_prose_units(whole, ctx, avail))
    return units


def _table_units(whole: _Unit, ctx: Context, avail: int) -> list[_Unit]:
    split = split_table(
        ctx.text, whole.start, whole.end, limit=avail, count=ctx.count, prefix_limit=avail // 2
    )
    return _pieces(whole, split.pieces, split.prefix, ctx)


def _code_units(whole: _Unit, ctx: Context, avail: int) -> list[_Unit]:
    prefix = _first_line_prefix(whole, ctx, avail, fence=True)
    limit = avail - ctx.count(prefix)
    cuts = split_span(
        ctx.text,
        whole.start,
        whole.end,
        limit=limit,
        count=ctx.count,
        level=LINES,
        tokens=whole.tokens,
    )
    return _pieces(whole, cuts, prefix, ctx)


def _prose_units(whole: _Unit, ctx: Context, avail: int) -> list[_Unit]:
    """Cut prose (or an FAQ entry) leaving room for the overlap of the next piece."""
    prefix = _first_line_prefix(whole, ctx, avail, fence=False) if whole.kind == "faq" else ""
    limit = max(avail - ctx.overlap, avail // 2) - ctx.count(prefix)
    if not prefix:
        cuts = split_span(
            ctx.text, whole.start, whole.end, limit=limit, count=ctx.count, tokens=whole.tokens
        )
        return _pieces(whole, cuts, prefix, ctx)
    # An FAQ answer is cut on its own and the question joins its first piece,
    # which has room for it: the question is the prefix of every later piece.
    answer = first_line(ctx.text, whole.start, whole.end)[1]
    cuts = split_span(ctx.text, answer, whole.end, limit=limit, count=ctx.count)
    first_end = cuts[0][1] if cuts else answer
    cuts = [(whole.start, first_end, ctx.span(whole.start, first_end)), *cuts[1:]]
    return _pieces(whole, cuts, prefix, ctx)


def _first_line_prefix(unit: _Unit, ctx: Context, avail: int, *, fence: bool) -> str:
    """Return the block's first line + newline to repeat in later pieces, or ""."""
    start, end = first_line(ctx.text, unit.start, unit.end)
    line = ctx.text[start:end]
    if fence and not line.lstrip().startswith(_FENCES):
        return ""
    return line + "\n" if ctx.count(line + "\n") <= avail // 3 else ""


def _pieces(whole: _Unit, cuts: Sequence[Cut], prefix: str, ctx: Context) -> list[_Unit]:
    prefix_tokens = ctx.count(prefix) if prefix else 0
    solo = whole.kind not in _PROSE
    return [
        replace(
            whole,
            start=start,
            end=end,
            tokens=tokens,
            prefix=prefix if n else "",
            prefix_tokens=prefix_tokens if n else 0,
            solo=solo,
        )
        for n, (start, end, tokens) in enumerate(cuts)
    ]


# --- packing units into chunks --------------------------------------------------


def pack(group: Group, ctx: Context) -> tuple[tuple[str, ...], list[Piece]]:
    """Cut a group into pieces that fit the budget.

    Args:
        group: One section or merged sibling sections, with measured blocks.
        ctx: The document text, settings and token counter.

    Returns:
        The heading path as shown in every piece (possibly shortened) and the
        pieces in order.
    """
    path, head = ctx.heading(group.heading_path)
    avail = ctx.max_tokens - head
    units = _units(group, ctx, avail)
    pieces: list[Piece] = []
    i, previous = 0, None
    while i < len(units):
        piece, j = _take(units, i, previous, group, path, avail, ctx)
        pieces.append(piece)
        previous, i = (i, j, piece.start), j + 1
    return path, pieces


def _take(
    units: list[_Unit],
    i: int,
    previous: tuple[int, int, int] | None,
    group: Group,
    path: tuple[str, ...],
    avail: int,
    ctx: Context,
) -> tuple[Piece, int]:
    """Return the chunk starting at ``units[i]`` and the index of its last unit."""
    overlap = _overlap(units, i, previous, avail, ctx) if previous else None
    lead = group.lead if i == 0 else None
    extra = (overlap[1] if overlap else 0) + (ctx.span(lead, units[0].start) if lead else 0)
    j = _extend(units, i, avail - units[i].prefix_tokens - extra, ctx)
    while True:
        start = overlap[0] if overlap else lead if lead is not None else units[i].start
        piece = _piece(units, i, j, start, path, ctx)
        if piece.tokens <= ctx.max_tokens:
            return piece, j
        if overlap is not None:
            overlap = None
        elif lead is not None:
            lead = None
        elif j > i:
            j -= 1
        elif not _resplit(units, i, piece.tokens - ctx.max_tokens, ctx):
            logger.warning("chunk of %d tokens exceeds the budget", piece.tokens)
            return piece, j


def _extend(units: list[_Unit], i: int, budget: int, ctx: Context) -> int:
    """Return the last unit index that still fits ``budget`` when packing from ``i``."""
    if units[i].solo:
        return i
    total, j = units[i].tokens, i
    while j + 1 < len(units) and not units[j + 1].solo:
        total += ctx.span(units[j].end, units[j + 1].start) + units[j + 1].tokens
        if total > budget:
            break
        j += 1
    return j


def _resplit(units: list[_Unit], i: int, excess: int, ctx: Context) -> bool:
    """Replace ``units[i]`` by smaller pieces; False if it cannot shrink any more."""
    unit = units[i]
    if unit.end - unit.start <= 1:
        if not unit.prefix:
            return False
        units[i] = replace(unit, prefix="", prefix_tokens=0)
        return True
    level = LINES if unit.kind == "code" else PARAGRAPHS
    limit = max(1, unit.tokens - excess - 1)
    cuts = split_span(ctx.text, unit.start, unit.end, limit=limit, count=ctx.count, level=level)
    units[i : i + 1] = [
        replace(unit, start=a, end=b, tokens=n, solo=unit.solo or bool(unit.prefix))
        for a, b, n in cuts
    ]
    return True


def _piece(
    units: list[_Unit], i: int, j: int, start: int, path: tuple[str, ...], ctx: Context
) -> Piece:
    first, members = units[i], units[i : j + 1]
    body = ctx.text[start : units[j].end]
    text = compose_chunk_text(path, first.prefix, body)
    tokens = ctx.tokenizer.count(text)
    return Piece(start, units[j].end, first.prefix, body, text, tokens, _kind(members), first.page)


def _kind(units: Sequence[_Unit]) -> BlockKind:
    kinds = {unit.kind for unit in units}
    if "table" in kinds:
        return "table"
    if "faq" in kinds:
        return "faq"
    code = sum(unit.tokens for unit in units if unit.kind == "code")
    return "code" if 2 * code >= sum(unit.tokens for unit in units) else "paragraph"


# --- overlap --------------------------------------------------------------------


def _joins(before: _Unit, after: _Unit) -> bool:
    """Tell whether a chunk starting with ``after`` may repeat the tail of ``before``."""
    if before.kind == "faq" or after.kind == "faq":
        return before.kind == after.kind and before.block == after.block
    prose = before.kind in _PROSE and after.kind in _PROSE
    return prose and not before.solo and not after.solo


def _overlap(
    units: list[_Unit], i: int, previous: tuple[int, int, int], avail: int, ctx: Context
) -> tuple[int, int] | None:
    """Return where chunk ``i`` starts in the previous chunk's tail and the cost in tokens."""
    first_index, last_index, previous_start = previous
    first = units[i]
    if ctx.overlap <= 0 or not _joins(units[last_index], first):
        return None
    k = last_index
    while k > first_index and _joins(units[k - 1], first):
        k -= 1
    end = units[last_index].end
    gap = ctx.span(end, first.start)
    allowance = min(ctx.overlap, avail - first.prefix_tokens - first.tokens - gap)
    if allowance <= 0:
        return None
    low = max(units[k].start, previous_start + 1)
    found = overlap_start(ctx.text, low, end, allowance=allowance, count=ctx.count)
    return None if found is None else (found[0], found[1] + gap)
