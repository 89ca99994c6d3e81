"""What the sample-document generators share: a document as blocks, and its DOCX body.

`make_sample_docs.py` keeps its documents as these blocks in code; `make_format_samples.py`
reads them from the sample Markdown. Both write DOCX files whose zip entries carry a
fixed timestamp, so re-running gives the same bytes.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Heading:
    """A heading; level 1 is the document title."""

    level: int
    text: str


@dataclass(frozen=True, slots=True)
class Para:
    """A paragraph of body text."""

    text: str


@dataclass(frozen=True, slots=True)
class Bullets:
    """A bulleted list."""

    items: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Table:
    """A table whose first row is the header."""

    rows: tuple[tuple[str, ...], ...]


Block = Heading | Para | Bullets | Table


def _same(text: str) -> str:
    return text


def add_docx_blocks(
    document: Any, blocks: Sequence[Block], *, paragraph: Callable[[str], str] = _same
) -> None:
    """Append blocks to a python-docx document: Heading 1-3 styles, bullets, a grid table.

    Args:
        document: A ``docx.Document()``.
        blocks: The document's blocks, in order.
        paragraph: Rewrites each paragraph's text before it is added.
    """
    for block in blocks:
        if isinstance(block, Heading):
            document.add_heading(block.text, level=min(block.level, 3))
        elif isinstance(block, Para):
            document.add_paragraph(paragraph(block.text))
        elif isinstance(block, Bullets):
            for item in block.items:
                document.add_paragraph(item, style="List Bullet")
        else:
            table = document.add_table(rows=0, cols=len(block.rows[0]), style="Table Grid")
            for row in block.rows:
                # Rows read from Markdown may be short of cells: the missing ones stay empty.
                for cell, text in zip(table.add_row().cells, row, strict=False):
                    cell.text = text


def fixed_entry(name: str, when: datetime) -> zipfile.ZipInfo:
    """Return a deflated zip entry stamped ``when``, whatever the clock says."""
    info = zipfile.ZipInfo(name, date_time=when.timetuple()[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    return info
