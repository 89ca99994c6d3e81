"""Cut a `Document` into `Chunk` values under a token budget, with overlap.

The steps, for each document:

1. **Group sections.** A section whose text counts fewer than ``min_tokens``
   is merged only with neighbours of the *same* heading path (text before the
   first heading and the title heading that names it), while the merged text
   still fits ``max_tokens``. Sections with headings of their own are never
   merged, however small: a chunk's heading path always ends with the heading
   of the section its text belongs to, and no heading stands in a chunk body
   without the path naming it (merging tiny siblings under their parent made
   "Loan Policy > Loan Products" the path of the whole "Development Loans"
   section). Question sections (heading ending in ``?``) and sections holding
   FAQ blocks are never merged. A merged chunk's body starts at the first
   section's heading line; its anchor and page are the first section's.
2. **Cut blocks into units.** A block that fits the budget is one unit. A
   larger one is split at its inner boundaries (see `assistant.chunking.splitting`):
   prose at paragraphs, lines, sentences, words, tokens; code by lines (later
   pieces repeat the opening fence line as ``prefix``); tables by whole rows
   (later pieces repeat header and rule rows as ``prefix``); an FAQ entry like
   prose, its later pieces repeating the question line.
3. **Pack units** greedily into chunks. FAQ units and pieces of a split table or
   code block always stand alone. Consecutive prose chunks of one group
   overlap by at most ``overlap_tokens``: the next chunk starts earlier, at a
   sentence start if that keeps at least half the overlap a word start would,
   else at a word start. Tables and code never take part in an overlap.

Every chunk is counted exactly once at the end; if the estimate was optimistic
the overlap is dropped first, then units, and a lone unit is re-split. When a
heading path alone would take more than half the budget, its leading ancestors
are dropped (and a single huge heading is cut and ends with "…"), so the
budget always holds.

Given the embedding model's `TokenWindow`, the same final check also counts the
chunk in the model's own tokens: URLs, code, tables and non-Latin script make
several word pieces per tiktoken token, and the model would silently drop the
tail. Such a chunk is shrunk the same way (overlap, then units from the end, so
it ends at a block boundary; a lone unit is re-split against both limits), and
the rest starts the next chunk under the same heading path.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_left
from typing import TYPE_CHECKING

from assistant.chunking.packing import Piece, pack
from assistant.chunking.splitting import trim
from assistant.chunking.units import Context, Group, Measured
from assistant.config import ChunkingSettings
from assistant.types import Chunk, Document, Section, TokenWindow, chunk_id

if TYPE_CHECKING:  # tiktoken is only needed by whoever builds the tokenizer
    from assistant.tokens import Tokenizer

__all__ = ["chunk_document"]

logger = logging.getLogger(__name__)

_NEWLINE = re.compile(r"\n")


def chunk_document(
    doc: Document,
    *,
    settings: ChunkingSettings,
    tokenizer: Tokenizer,
    window: TokenWindow | None = None,
) -> tuple[Chunk, ...]:
    """Cut a document into chunks that fit the token budget.

    Args:
        doc: The parsed document; its sections and blocks drive the cuts.
        settings: ``max_tokens`` (heading path included), ``overlap_tokens``
            and ``min_tokens`` (smaller sections merge with neighbours of the
            same heading path).
        tokenizer: Counts tokens; ``token_count`` of every chunk is its count.
        window: The embedding model's own count and limit; with it, no chunk's
            text is longer than the model reads (a chunk that would be ends
            at an earlier block boundary, the rest follows under the same
            heading path). The ingest passes it; chunking imports no model.

    Returns:
        The chunks in document order, numbered ``0..n-1``; the same input
        always gives the same chunks and IDs.
    """
    ctx = Context(doc.text, settings, tokenizer, window)
    newlines = [match.start() for match in _NEWLINE.finditer(doc.text)]
    chunks: list[Chunk] = []
    for group in _groups(doc, ctx):
        path, pieces = pack(group, ctx)
        for piece in pieces:
            chunks.append(_chunk(doc, group, path, piece, len(chunks), newlines))
    logger.debug("chunked %s: %d sections, %d chunks", doc.source, len(doc.sections), len(chunks))
    return tuple(chunks)


# --- grouping sections ------------------------------------------------------


def _groups(doc: Document, ctx: Context) -> list[Group]:
    groups: list[Group] = []
    run: list[tuple[Section, tuple[Measured, ...], int]] = []
    for section in doc.sections:
        blocks = _measure(section, ctx)
        size = sum(b.tokens + 1 for b in blocks)
        size += ctx.span(section.char_start, blocks[0].start if blocks else section.char_end)
        if run and _mergeable(run, section, blocks, size, doc, ctx):
            run.append((section, blocks, size))
            continue
        if run:
            groups.append(_group(run, doc))
        run = [(section, blocks, size)]
    if run:
        groups.append(_group(run, doc))
    return groups


def _measure(section: Section, ctx: Context) -> tuple[Measured, ...]:
    measured = []
    for block in section.blocks:
        span = trim(ctx.text, block.char_start, block.char_end)
        if span is not None:
            tokens = ctx.span(*span)
            measured.append(Measured(block.kind, span[0], span[1], tokens, block.page))
    return tuple(measured)


def _is_question(section: Section, blocks: tuple[Measured, ...]) -> bool:
    asks = bool(section.heading_path) and section.heading_path[-1].rstrip().endswith("?")
    return asks or any(block.kind == "faq" for block in blocks)


def _mergeable(
    run: list[tuple[Section, tuple[Measured, ...], int]],
    section: Section,
    blocks: tuple[Measured, ...],
    size: int,
    doc: Document,
    ctx: Context,
) -> bool:
    first, last = run[0][0], run[-1][0]
    if section.heading_path != first.heading_path or section.char_start < last.char_end:
        return False
    if _is_question(section, blocks) or any(_is_question(s, b) for s, b, _ in run):
        return False
    total = sum(n for _, _, n in run)
    if total >= ctx.min_tokens and size >= ctx.min_tokens:
        return False
    return ctx.heading(_merged_path(first, doc))[1] + total + size <= ctx.max_tokens


def _merged_path(first: Section, doc: Document) -> tuple[str, ...]:
    if first.heading_path[:-1]:
        return first.heading_path[:-1]
    return (doc.meta.title,) if doc.meta.title else first.heading_path


def _group(run: list[tuple[Section, tuple[Measured, ...], int]], doc: Document) -> Group:
    first, last = run[0][0], run[-1][0]
    blocks = tuple(block for _, measured, _ in run for block in measured)
    if len(run) == 1 or not blocks:
        return Group(
            first.heading_path, first.anchor, first.char_start, first.char_end, None, blocks
        )
    lead = trim(doc.text, first.char_start, blocks[0].start)
    return Group(
        _merged_path(first, doc),
        first.anchor,
        first.char_start,
        last.char_end,
        lead[0] if lead else None,
        blocks,
    )


def _chunk(
    doc: Document,
    group: Group,
    path: tuple[str, ...],
    piece: Piece,
    ordinal: int,
    newlines: list[int],
) -> Chunk:
    return Chunk(
        chunk_id=chunk_id(doc.source, ordinal),
        source=doc.source,
        ordinal=ordinal,
        heading_path=path,
        anchor=group.anchor,
        text=piece.text,
        body=piece.body,
        prefix=piece.prefix,
        char_start=piece.start,
        char_end=piece.end,
        start_line=bisect_left(newlines, piece.start),
        end_line=bisect_left(newlines, piece.end - 1) + 1,
        section_start=group.start,
        section_end=group.end,
        page=piece.page,
        token_count=piece.tokens,
        kind=piece.kind,
    )
