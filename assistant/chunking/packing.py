"""Pack a group of blocks into chunk-sized pieces, with overlap (internal to chunking).

`pack` turns a `Group` (one section, or merged sibling sections) into `Piece`
values: blocks that fit become units, bigger ones are cut by
`assistant.chunking.splitting`, units are packed greedily and each piece is counted
exactly once. See `assistant.chunking.chunker` for the rules.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from assistant.chunking.splitting import (
    LINES,
    PARAGRAPHS,
    overlap_start,
    sentence_cut,
    split_span,
)
from assistant.chunking.units import PROSE, Context, Group, Unit, cut_units
from assistant.types import BlockKind, compose_chunk_text

__all__ = ["Piece", "pack"]

logger = logging.getLogger(__name__)


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
    units = cut_units(group, ctx, avail)
    pieces: list[Piece] = []
    i, previous = 0, None
    while i < len(units):
        piece, j = _take(units, i, previous, group, path, avail, ctx)
        pieces.append(piece)
        previous, i = (i, j, piece.start), j + 1
    return path, pieces


def _take(
    units: list[Unit],
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
    budget = avail - units[i].prefix_tokens - extra
    j = _extend(units, i, budget, ctx)
    if ctx.fill:
        j = _fill(units, i, j, budget, ctx)
    while True:
        start = overlap[0] if overlap else lead if lead is not None else units[i].start
        piece = _piece(units, i, j, start, path, ctx)
        in_budget = piece.tokens <= ctx.max_tokens
        if in_budget and ctx.fits(piece.text):
            return piece, j
        if overlap is not None:
            overlap = None
        elif lead is not None:
            lead = None
        elif j > i:
            j -= 1
        elif in_budget:  # a lone unit the embedder would truncate
            if not _resplit_for_window(units, i, piece, ctx):
                logger.warning("chunk of %s is longer than the embedder reads", path)
                return piece, j
        elif not _resplit(units, i, piece.tokens - ctx.max_tokens, ctx):
            logger.warning("chunk of %d tokens exceeds the budget", piece.tokens)
            return piece, j


def _extend(units: list[Unit], i: int, budget: int, ctx: Context) -> int:
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


def _fill(units: list[Unit], i: int, j: int, budget: int, ctx: Context) -> int:
    """Let the chunk ``units[i..j]`` take the head of the next unit, cut at a sentence end.

    The next prose unit did not fit whole; the sentences of it that do fit end
    this chunk (so bodies fill the budget instead of stopping at the last whole
    block), and the rest becomes a unit of its own that starts the next chunk.
    Tables, code, FAQ entries and pieces with a prefix are never cut here.

    Returns:
        The index of the chunk's last unit: ``j + 1`` if a head was taken, else ``j``.
    """
    k = j + 1
    if k >= len(units) or units[i].solo or not _joins(units[j], units[k]) or units[k].prefix:
        return j
    following = units[k]
    room = budget - ctx.span(units[i].start, following.start)
    cut = sentence_cut(ctx.text, following.start, following.end, room=room, count=ctx.count)
    if cut is None:
        return j
    head_end, tail_start, tokens = cut
    units[k : k + 1] = [
        replace(following, end=head_end, tokens=tokens),
        replace(following, start=tail_start, tokens=ctx.span(tail_start, following.end)),
    ]
    return k


def _resplit(units: list[Unit], i: int, excess: int, ctx: Context) -> bool:
    """Replace ``units[i]`` by smaller pieces; False if it cannot shrink any more."""
    unit = units[i]
    if unit.end - unit.start <= 1:
        return _drop_prefix(units, i)
    level = LINES if unit.kind == "code" else PARAGRAPHS
    limit = max(1, unit.tokens - excess - 1)
    cuts = split_span(ctx.text, unit.start, unit.end, limit=limit, count=ctx.count, level=level)
    units[i : i + 1] = [
        replace(unit, start=a, end=b, tokens=n, solo=unit.solo or bool(unit.prefix))
        for a, b, n in cuts
    ]
    return True


def _resplit_for_window(units: list[Unit], i: int, piece: Piece, ctx: Context) -> bool:
    """Replace ``units[i]`` by pieces that fit the window too; False if it cannot shrink."""
    unit = units[i]
    if unit.end - unit.start <= 1:
        return _drop_prefix(units, i)
    excess = ctx.cost(piece.text) - ctx.max_tokens
    body = ctx.cost(ctx.text[unit.start : unit.end])
    level = LINES if unit.kind == "code" else PARAGRAPHS
    cuts = split_span(
        ctx.text, unit.start, unit.end, limit=max(1, body - excess - 1), count=ctx.cost, level=level
    )
    if len(cuts) < 2:
        return False
    units[i : i + 1] = [
        replace(unit, start=a, end=b, tokens=ctx.span(a, b), solo=unit.solo or bool(unit.prefix))
        for a, b, _ in cuts
    ]
    return True


def _drop_prefix(units: list[Unit], i: int) -> bool:
    """Shrink a unit too short to split by dropping its prefix; False if it has none."""
    if not units[i].prefix:
        return False
    units[i] = replace(units[i], prefix="", prefix_tokens=0)
    return True


def _piece(
    units: list[Unit], i: int, j: int, start: int, path: tuple[str, ...], ctx: Context
) -> Piece:
    first, members = units[i], units[i : j + 1]
    body = ctx.text[start : units[j].end]
    text = compose_chunk_text(path, first.prefix, body)
    tokens = ctx.tokenizer.count(text)
    return Piece(start, units[j].end, first.prefix, body, text, tokens, _kind(members), first.page)


def _kind(units: Sequence[Unit]) -> BlockKind:
    kinds = {unit.kind for unit in units}
    if "table" in kinds:
        return "table"
    if "faq" in kinds:
        return "faq"
    code = sum(unit.tokens for unit in units if unit.kind == "code")
    return "code" if 2 * code >= sum(unit.tokens for unit in units) else "paragraph"


# --- overlap --------------------------------------------------------------------


def _joins(before: Unit, after: Unit) -> bool:
    """Tell whether a chunk starting with ``after`` may repeat the tail of ``before``."""
    if before.kind == "faq" or after.kind == "faq":
        return before.kind == after.kind and before.block == after.block
    prose = before.kind in PROSE and after.kind in PROSE
    return prose and not before.solo and not after.solo


def _overlap(
    units: list[Unit], i: int, previous: tuple[int, int, int], avail: int, ctx: Context
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
