"""DOCX → text, metadata and sections (python-docx).

The body is read in order, paragraphs and tables alike. A ``Title`` paragraph
gives the title; ``Heading N`` starts a level-N section; list paragraphs
(``List ...`` styles or numbering) become ``- `` list items; tables become pipe
tables with a header separator; other paragraphs become paragraph blocks.
Dates come from an "Effective ..." line near the top, else from the core
properties' created and modified stamps.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass

import docx
from docx.opc.exceptions import OpcError
from docx.table import Table
from docx.text.paragraph import Paragraph

from assistant.documents.assemble import SectionAssembler
from assistant.documents.base import Extracted
from assistant.documents.builder import TextBuilder, collapse, table_lines
from assistant.documents.dates import PROPERTIES, DateClaim, parse_date, resolve_dates
from assistant.documents.decode import check_line_lengths
from assistant.errors import DocumentError
from assistant.types import BlockKind, DocMeta

__all__ = ["load", "parse_docx"]

# lxml's XMLSyntaxError derives from SyntaxError; python-docx raises the others on damaged files.
_CORRUPT = (OpcError, zipfile.BadZipFile, SyntaxError, KeyError, ValueError, AttributeError)
_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", flags=re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Piece:
    text: str
    kind: BlockKind
    level: int = 0  # > 0 for headings; -1 for the Title paragraph


def parse_docx(data: bytes, *, source: str, fallback_title: str) -> Extracted:
    """Extract text and sections from a Word document.

    Args:
        data: The raw file bytes.
        source: The document's name, for errors.
        fallback_title: Title used without a Title paragraph, core title or Heading 1.

    Returns:
        The extracted text, its metadata and its sections.

    Raises:
        DocumentError: The file is not a readable DOCX or has an overlong line.
    """
    try:
        document = docx.Document(io.BytesIO(data))
        pieces = [p for p in _pieces(document.iter_inner_content()) if p.text.strip()]
        core = document.core_properties
        core_title = collapse(core.title or "")
        stamps = DateClaim(PROPERTIES, parse_date(core.created), parse_date(core.modified))
    except _CORRUPT as exc:
        raise DocumentError(source, f"corrupt or unreadable DOCX: {exc}") from exc
    title_piece = next((p.text for p in pieces if p.level == -1), "")
    first_h1 = next((p.text for p in pieces if p.level == 1), "")
    title = title_piece or core_title or first_h1 or fallback_title
    builder = TextBuilder()
    assembler = SectionAssembler(title=title, title_level=0 if title_piece else 1)
    for piece in pieces:
        start, end = builder.add(piece.text)
        if piece.level > 0:
            assembler.heading(piece.text, level=piece.level, start=start)
        elif piece.level == 0:
            assembler.block(piece.kind, start, end)
    text = builder.text()
    check_line_lengths(text, source=source)
    meta = resolve_dates(DocMeta(title=title), text, implied=(stamps,))
    return Extracted(text=text, meta=meta, sections=assembler.finish(end=len(text)))


def _pieces(items: Iterator[Paragraph | Table]) -> Iterator[_Piece]:
    for item in items:
        if isinstance(item, Table):
            yield _Piece(table_lines(_rows(item)), "table")
        else:
            yield _paragraph(item)


def _paragraph(paragraph: Paragraph) -> _Piece:
    text = collapse(paragraph.text)
    style = paragraph.style.name if paragraph.style is not None else ""
    style = style or ""
    if style.lower() == "title":
        return _Piece(text, "heading", -1)
    heading = _HEADING_STYLE.match(style)
    if heading and int(heading.group(1)) > 0:
        return _Piece(text, "heading", int(heading.group(1)))
    depth = _list_depth(paragraph, style)
    if depth is not None:
        return _Piece("  " * depth + "- " + text, "list_item")
    return _Piece(text, "paragraph")


def _list_depth(paragraph: Paragraph, style: str) -> int | None:
    """Return the nesting depth (0 = top) of a list paragraph, None when not a list."""
    p_pr = paragraph._p.pPr
    num_pr = p_pr.numPr if p_pr is not None else None
    if num_pr is not None:
        ilvl = getattr(num_pr, "ilvl", None)
        value = getattr(ilvl, "val", None)
        return int(value) if value is not None else 0
    if style.lower().startswith("list"):
        level = re.search(r"(\d)$", style)
        return int(level.group(1)) - 1 if level else 0
    return None


def _rows(table: Table) -> list[list[str]]:
    rows: list[list[str]] = []
    for row in table.rows:
        cells, seen = [], set()
        for cell in row.cells:
            if id(cell._tc) not in seen:  # a merged cell repeats across its span
                seen.add(id(cell._tc))
                cells.append(cell.text)
        rows.append(cells)
    return rows


def load(data: bytes, *, source: str, fallback: str) -> Extracted:
    """Load one DOCX file's bytes (the `assistant.documents.loading` entry point)."""
    return parse_docx(data, source=source, fallback_title=fallback)
