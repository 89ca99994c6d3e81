"""DOCX → text, metadata and sections (python-docx).

The body is read in order, paragraphs and tables alike. A ``Title`` paragraph
gives the title; ``Heading N`` starts a level-N section; list paragraphs
(``List ...`` styles or numbering) become list items marked as Word shows them
(``- `` for bullets, ``1.``, ``4.2`` or ``b)`` for numbered clauses; numbered
headings keep their number); tables become pipe
tables with a header separator; other paragraphs become paragraph blocks.
Dates come from a custom document property naming "effective" (or "updated",
"revised"; Word's File > Properties > Custom), then an "Effective ..." line near
the top, else from the core properties' created and modified stamps.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from xml.etree import ElementTree

import docx
from docx.opc.exceptions import OpcError
from docx.table import Table
from docx.text.paragraph import Paragraph

from assistant.documents.assemble import SectionAssembler
from assistant.documents.base import Extracted
from assistant.documents.builder import TextBuilder, collapse, table_lines
from assistant.documents.dates import (
    CUSTOM_PROPERTIES,
    PROPERTIES,
    DateClaim,
    parse_date,
    resolve_dates,
)
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
        numbering = _Numbering(document)
        items = document.iter_inner_content()
        pieces = [p for p in _pieces(items, numbering) if p.text.strip()]
        core = document.core_properties
        core_title = collapse(core.title or "")
        stamps = DateClaim(PROPERTIES, parse_date(core.created), parse_date(core.modified))
        custom = _custom_dates(document)
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
    meta = resolve_dates(DocMeta(title=title), text, explicit=(custom,), implied=(stamps,))
    return Extracted(text=text, meta=meta, sections=assembler.finish(end=len(text)))


_CUSTOM_PART = "/docProps/custom.xml"
_UPDATED_NAMES = ("updated", "revised", "modified", "amended")


def _custom_dates(document: docx.document.Document) -> DateClaim:
    """Return the dates the custom document properties state ("Effective Date": 2026-01-01)."""
    part = next(
        (p for p in document.part.package.iter_parts() if str(p.partname) == _CUSTOM_PART), None
    )
    if part is None:
        return DateClaim(CUSTOM_PROPERTIES)
    values: dict[str, str] = {}
    for prop in ElementTree.fromstring(part.blob):
        name = str(prop.get("name", "")).casefold()
        values[name] = "".join(prop.itertext()).strip()
    effective = next((parse_date(v) for k, v in values.items() if "effective" in k), "")
    updated = next(
        (parse_date(v) for k, v in values.items() if any(n in k for n in _UPDATED_NAMES)), ""
    )
    return DateClaim(CUSTOM_PROPERTIES, effective, updated)


def _pieces(items: Iterator[Paragraph | Table], numbering: _Numbering) -> Iterator[_Piece]:
    for item in items:
        if isinstance(item, Table):
            yield _Piece(table_lines(_rows(item)), "table")
        else:
            yield _paragraph(item, numbering)


def _paragraph(paragraph: Paragraph, numbering: _Numbering) -> _Piece:
    text = collapse(paragraph.text)
    style = paragraph.style.name if paragraph.style is not None else ""
    style = style or ""
    if style.lower() == "title":
        return _Piece(text, "heading", -1)
    num = _num_pr(paragraph)
    label = numbering.label(*num) if num is not None else ""
    heading = _HEADING_STYLE.match(style)
    if heading and int(heading.group(1)) > 0:
        # A numbered heading ("4.2 Repayment") keeps its number, in the path too.
        numbered = f"{label} {text}" if label and label != "-" else text
        return _Piece(numbered, "heading", int(heading.group(1)))
    depth = _list_depth(paragraph, style, num)
    if depth is not None:
        return _Piece("  " * depth + (label or "-") + " " + text, "list_item")
    return _Piece(text, "paragraph")


def _num_pr(paragraph: Paragraph) -> tuple[str, int] | None:
    """Return the (numId, level) of a numbered paragraph, its own or its style's."""
    candidates = [paragraph._p.pPr]
    style = paragraph.style
    while style is not None and len(candidates) < 8:  # styles inherit numbering
        candidates.append(style.element.pPr)
        style = style.base_style
    for p_pr in candidates:
        num_pr = p_pr.numPr if p_pr is not None else None
        num_id = getattr(getattr(num_pr, "numId", None), "val", None)
        if num_id is not None:
            level = getattr(getattr(num_pr, "ilvl", None), "val", None)
            return str(num_id), int(level or 0)
    return None


def _list_depth(paragraph: Paragraph, style: str, num: tuple[str, int] | None) -> int | None:
    """Return the nesting depth (0 = top) of a list paragraph, None when not a list."""
    if style.lower().startswith("list"):
        level = re.search(r"(\d)$", style)
        return int(level.group(1)) - 1 if level else 0
    return num[1] if num is not None else None


class _Numbering:
    """Work out the number Word shows before each numbered paragraph ("2.", "4.1", "b)").

    Counters run per list (``numId``) and level, in body order; a level's
    counter restarts when a shallower level moves on. Bullets and formats we
    do not render read as "-".
    """

    def __init__(self, document: docx.document.Document) -> None:
        self._levels: dict[str, dict[int, tuple[str, str, int]]] = {}
        self._counts: dict[str, dict[int, int]] = {}
        try:
            root = document.part.numbering_part.element
        except (KeyError, NotImplementedError):  # no numbering part: nothing is numbered
            return
        abstract = {a.get(_W + "abstractNumId"): a for a in root.iter(_W + "abstractNum")}
        for num in root.iter(_W + "num"):
            ref = num.find(_W + "abstractNumId")
            definition = abstract.get(ref.get(_W + "val")) if ref is not None else None
            if definition is not None:
                self._levels[str(num.get(_W + "numId"))] = _levels(definition)

    def label(self, num_id: str, level: int) -> str:
        """Advance the list's counter at ``level`` and return the paragraph's label."""
        levels = self._levels.get(num_id)
        if not levels or level not in levels:
            return "-"
        counts = self._counts.setdefault(num_id, {})
        fmt, template, start = levels[level]
        counts[level] = counts.get(level, start - 1) + 1
        for deeper in [n for n in counts if n > level]:
            del counts[deeper]
        if fmt not in _FORMATS:
            return "-"

        def number(match: re.Match[str]) -> str:
            n = int(match.group(1)) - 1
            lvl_fmt, _, lvl_start = levels.get(n, ("decimal", "", 1))
            return _FORMATS.get(lvl_fmt, str)(counts.get(n, lvl_start))

        return re.sub(r"%(\d)", number, template).strip() or "-"


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _levels(definition: object) -> dict[int, tuple[str, str, int]]:
    levels: dict[int, tuple[str, str, int]] = {}
    for lvl in definition.iter(_W + "lvl"):  # type: ignore[attr-defined]
        values = {
            tag: (child.get(_W + "val") if child is not None else None)
            for tag in ("numFmt", "lvlText", "start")
            for child in [lvl.find(_W + tag)]
        }
        start = values["start"]
        levels[int(lvl.get(_W + "ilvl", 0))] = (
            values["numFmt"] or "decimal",
            values["lvlText"] or "",
            int(start) if start and start.isdigit() else 1,
        )
    return levels


def _roman(n: int) -> str:
    out = []
    for value, numeral in zip(
        (1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1),
        ("m", "cm", "d", "cd", "c", "xc", "l", "xl", "x", "ix", "v", "iv", "i"),
        strict=True,
    ):
        count, n = divmod(n, value)
        out.append(numeral * count)
    return "".join(out)


def _letter(n: int) -> str:
    return chr(ord("a") + (n - 1) % 26) * ((n - 1) // 26 + 1) if n > 0 else ""


_FORMATS: dict[str, Callable[[int], str]] = {
    "decimal": str,
    "decimalZero": lambda n: f"{n:02d}",
    "lowerLetter": _letter,
    "upperLetter": lambda n: _letter(n).upper(),
    "lowerRoman": _roman,
    "upperRoman": lambda n: _roman(n).upper(),
}


def _rows(table: Table) -> list[list[str]]:
    rows: list[list[str]] = []
    for row in table.rows:
        cells, seen = [], set()
        for cell in row.cells:
            # A merged cell repeats across its span: its text once, then empty
            # cells, so every row keeps the header row's columns.
            cells.append("" if id(cell._tc) in seen else cell.text)
            seen.add(id(cell._tc))
        rows.append(cells)
    return rows


def load(data: bytes, *, source: str, fallback: str) -> Extracted:
    """Load one DOCX file's bytes (the `assistant.documents.loading` entry point)."""
    return parse_docx(data, source=source, fallback_title=fallback)
