"""Blocks to units: the spans the packer never splits (internal to chunking).

A block that fits the budget is one unit; a bigger table, code block or prose
block is cut by `assistant.chunking.splitting`, and later pieces of a table, a code
fence or an FAQ entry repeat its header line as a prefix. `Context` carries the
document text and caches token counts for both this module and `assistant.chunking.packing`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from assistant.chunking.splitting import (
    LINES,
    Counter,
    Cut,
    first_line,
    split_span,
    split_table,
)
from assistant.config import ChunkingSettings
from assistant.types import BlockKind, TokenWindow, compose_chunk_text, shown_heading_path

if TYPE_CHECKING:  # tiktoken is only needed by whoever builds the tokenizer
    from assistant.tokens import Tokenizer

__all__ = ["PROSE", "Context", "Group", "Measured", "Unit", "cut_units"]

# Block kinds that read as running text: they pack together and overlap.
PROSE: frozenset[str] = frozenset({"paragraph", "list_item", "other", "heading"})
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
class Unit:
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


class Context:
    """The document text, the settings, cached token counts and the embedder's window."""

    def __init__(
        self,
        text: str,
        settings: ChunkingSettings,
        tokenizer: Tokenizer,
        window: TokenWindow | None = None,
    ) -> None:
        self.text = text
        self.window = window
        self.max_tokens = settings.max_tokens
        self.overlap = settings.overlap_tokens
        self.min_tokens = settings.min_tokens
        self.fill = settings.fill
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

    def fits(self, text: str) -> bool:
        """Tell whether the embedding model reads all of ``text`` (always, without a window)."""
        return self.window is None or self.window.count(text) <= self.window.limit

    def cost(self, text: str) -> int:
        """Count ``text`` against both limits at once, in budget units.

        The model's count is scaled so that its window maps onto ``max_tokens``:
        ``cost(text) <= max_tokens`` exactly when the text fits the budget *and*
        the window. Used to cut what the model would truncate.
        """
        tokens = self.count(text)
        if self.window is None:
            return tokens
        scaled = -(-self.window.count(text) * self.max_tokens // self.window.limit)
        return max(tokens, scaled)

    def span(self, start: int, end: int) -> int:
        """Count the tokens of ``text[start:end]``."""
        return self.count(self.text[start:end]) if start < end else 0

    def heading(self, path: tuple[str, ...]) -> tuple[tuple[str, ...], int]:
        """Return the heading path as shown and its cost in tokens.

        Each heading is capped (`shown_heading_path`), then leading ancestors
        are dropped until the path takes at most half the budget (and half the
        embedder's window).
        """
        cached = self._headings.get(path)
        if cached is None:
            shown = shown_heading_path(path)
            cached = _fit_heading(shown, self.max_tokens // 2, self.count, self.cost)
            self._headings[path] = cached
        return cached


def _fit_heading(
    path: tuple[str, ...], limit: int, count: Counter, cost: Counter
) -> tuple[tuple[str, ...], int]:
    """Return the path cut to ``limit`` by ``cost``, and its token ``count``."""
    spent = cost(compose_chunk_text(path, "", ""))
    while spent > limit and len(path) > 1:
        path = path[1:]
        spent = cost(compose_chunk_text(path, "", ""))
    if spent > limit:
        heading = path[0]
        first = split_span(heading, 0, len(heading), limit=max(1, limit - 4), count=cost)[0]
        path = (heading[: first[1]] + "…",)
    return path, count(compose_chunk_text(path, "", ""))


def cut_units(group: Group, ctx: Context, avail: int) -> list[Unit]:
    """Return the group's blocks as units of at most ``avail`` tokens, in order."""
    units: list[Unit] = []
    for index, block in enumerate(group.blocks):
        whole = Unit(block.start, block.end, block.tokens, block.kind, block.page, index)
        if block.tokens <= avail:
            units.append(replace(whole, solo=block.kind == "faq"))
        elif block.kind == "table":
            units.extend(_table_units(whole, ctx, avail))
        elif block.kind == "code":
            units.extend(_code_units(whole, ctx, avail))
        else:
            units.extend(_prose_units(whole, ctx, avail))
    return units


def _table_units(whole: Unit, ctx: Context, avail: int) -> list[Unit]:
    split = split_table(
        ctx.text, whole.start, whole.end, limit=avail, count=ctx.count, prefix_limit=avail // 2
    )
    return _pieces(whole, split.pieces, split.prefix, ctx)


def _code_units(whole: Unit, ctx: Context, avail: int) -> list[Unit]:
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


def _prose_units(whole: Unit, ctx: Context, avail: int) -> list[Unit]:
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


def _first_line_prefix(unit: Unit, ctx: Context, avail: int, *, fence: bool) -> str:
    """Return the block's first line + newline to repeat in later pieces, or ""."""
    start, end = first_line(ctx.text, unit.start, unit.end)
    line = ctx.text[start:end]
    if fence and not line.lstrip().startswith(_FENCES):
        return ""
    return line + "\n" if ctx.count(line + "\n") <= avail // 3 else ""


def _pieces(whole: Unit, cuts: Sequence[Cut], prefix: str, ctx: Context) -> list[Unit]:
    prefix_tokens = ctx.count(prefix) if prefix else 0
    solo = whole.kind not in PROSE
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
