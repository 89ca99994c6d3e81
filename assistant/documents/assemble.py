"""Build `Section` values from a stream of headings and blocks in document order."""

from __future__ import annotations

from dataclasses import dataclass, field

from assistant.documents.base import slugify
from assistant.types import Block, BlockKind, Section

__all__ = ["SectionAssembler"]


@dataclass(slots=True)
class _Open:
    path: tuple[str, ...]
    level: int
    anchor: str
    start: int
    page: int
    blocks: list[Block] = field(default_factory=list)


class SectionAssembler:
    """Collect headings and blocks, then emit sections with heading paths and anchors.

    A heading closes the current section. Blocks before the first heading form a
    level-0 section whose path is just the title (dropped when it has no blocks).
    Paths start with the document title unless their root heading is at
    ``title_level`` or is the title itself.
    """

    def __init__(
        self, *, title: str, start: int = 0, title_level: int = 1, start_page: int = 0
    ) -> None:
        self._title = title
        self._title_level = title_level
        self._stack: list[tuple[int, str]] = []
        self._anchors: set[str] = set()
        self._done: list[Section] = []
        self._current = _Open((title,), 0, "", start, start_page)

    def heading(self, text: str, *, level: int, start: int, page: int = 0) -> None:
        """Start a new section at ``start`` for a heading of ``level`` (1 = top)."""
        self._close(end=start)
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, text))
        path = tuple(t for _, t in self._stack)
        root_level = self._stack[0][0]
        if root_level > self._title_level and path[0].casefold() != self._title.casefold():
            path = (self._title, *path)
        self._current = _Open(path, level, self._anchor(text), start, page)

    def block(self, kind: BlockKind, start: int, end: int, *, page: int = 0) -> None:
        """Add a block spanning ``start:end`` to the current section."""
        if end <= start:
            return
        self._current.blocks.append(Block(kind=kind, char_start=start, char_end=end, page=page))

    def finish(self, *, end: int) -> tuple[Section, ...]:
        """Close the last section at ``end`` and return all sections in order."""
        self._close(end=end)
        return tuple(self._done)

    def _anchor(self, text: str) -> str:
        base = slugify(text) or "section"
        anchor, n = base, 0
        while anchor in self._anchors:
            n += 1
            anchor = f"{base}-{n}"
        self._anchors.add(anchor)
        return anchor

    def _close(self, *, end: int) -> None:
        cur = self._current
        if cur.level == 0 and not cur.blocks:
            return
        self._done.append(
            Section(
                heading_path=cur.path,
                level=cur.level,
                anchor=cur.anchor,
                char_start=cur.start,
                char_end=max(end, cur.start),
                blocks=tuple(cur.blocks),
                page=cur.page,
            )
        )
