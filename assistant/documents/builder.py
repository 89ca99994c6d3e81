"""Build an extracted text piece by piece while recording where each piece lands."""

from __future__ import annotations

import re

__all__ = ["TextBuilder", "collapse", "table_lines"]

_SPACES = re.compile(r"\s+")
_SEPARATOR = "\n\n"


def collapse(text: str) -> str:
    """Return ``text`` with runs of whitespace turned into single spaces, trimmed."""
    return _SPACES.sub(" ", text).strip()


def table_lines(rows: list[list[str]]) -> str:
    """Render rows as pipe-table lines, with a ``| --- |`` separator after the first row.

    Args:
        rows: Cell texts per row; the first row is the header.

    Returns:
        The table as text, or an empty string when there are no rows.
    """
    rows = [[collapse(cell).replace("|", "\\|") for cell in row] for row in rows if row]
    if not rows:
        return ""
    lines = ["| " + " | ".join(row) + " |" for row in rows]
    lines.insert(1, "| " + " | ".join("---" for _ in rows[0]) + " |")
    return "\n".join(lines)


class TextBuilder:
    """Append pieces separated by a blank line; report each piece's char span."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0

    def __len__(self) -> int:
        return self._length

    def add(self, piece: str) -> tuple[int, int]:
        """Append ``piece`` (after a blank line unless it is the first) and return its span."""
        if self._parts:
            self._parts.append(_SEPARATOR)
            self._length += len(_SEPARATOR)
        start = self._length
        self._parts.append(piece)
        self._length += len(piece)
        return start, self._length

    def text(self) -> str:
        """Return everything appended so far, with a final newline when not empty."""
        return "".join(self._parts) + ("\n" if self._parts else "")
