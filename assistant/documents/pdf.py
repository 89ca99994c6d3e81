"""PDF → text, page offsets, sections and tables (pdfplumber for layout, pypdf for the rest).

pdfplumber reads each page's words with their position, size and font, and the
ruled tables; `assistant.documents.pdflayout` turns them into reading order
(columns), paragraphs, headings and pipe tables, dropping running headers,
footers and page numbers. pypdf reads the outline, the document info and the
XMP metadata. If pdfplumber cannot read a file that pypdf can, the text comes
from pypdf lines (`_reflow`) as before. Pages are joined with a blank line;
``page_starts`` records where each begins.

Sections: with an outline (bookmarks), each entry starts a section at its
heading line when that line is found on its page, else at the page start;
without one, headings come from font size and weight; with neither, each page
is a section ``(title, "Page n")``. A PDF whose pages are only images (a scan)
is refused with a message that says so. Dates come from a custom info key
naming "effective", the XMP dates, an "Effective ..." line near the top, then
the info's creation and modification dates.
"""

from __future__ import annotations

import bisect
import io
import logging
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import pdfplumber
from pdfplumber.pdf import PDF
from pypdf import PdfReader
from pypdf.errors import PyPdfError

from assistant.documents import pdflayout
from assistant.documents.assemble import SectionAssembler
from assistant.documents.base import Extracted
from assistant.documents.builder import collapse
from assistant.documents.dates import PROPERTIES, XMP, DateClaim, parse_date, resolve_dates
from assistant.documents.decode import check_line_lengths, normalise_newlines
from assistant.errors import DocumentError
from assistant.types import BlockKind, DocMeta

__all__ = ["load", "parse_pdf"]

logger = logging.getLogger(__name__)

# pypdf raises a wide range of errors on damaged files; these are the ones we have seen.
_CORRUPT = (
    PyPdfError,
    ValueError,
    KeyError,
    TypeError,
    AttributeError,
    IndexError,
    RecursionError,
    OSError,
    zlib.error,
)
_PARAGRAPH_SOFT_CHARS = 600
_PARAGRAPH_HARD_CHARS = 1500
_SENTENCE_END = re.compile(r"[.!?:;]\s*$")
# A line at least this share of the longest line fills the measure: it was wrapped.
_FULL_LINE = 0.8
_LIST_ITEM = re.compile(r"^(?:[-*\u2022\u2013\u00b7]|\(?(?:\d{1,3}|[a-z]|[ivx]{1,5})[.)])\s")
_PAGE_NUMBER = re.compile(
    r"^\s*(?:(?:page\s+)?\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?|[-\u2013]\s*\d{1,4}\s*[-\u2013])\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class _Heading:
    title: str
    level: int
    start: int
    is_line: bool


@dataclass(frozen=True, slots=True)
class _Entry:
    title: str
    depth: int
    page: int  # 0-based


@dataclass(frozen=True, slots=True)
class _Laid:
    """The document's text with where its tables and font-size headings are."""

    text: str
    starts: tuple[int, ...]
    tables: tuple[tuple[int, int], ...]
    headings: tuple[_Heading, ...]


def parse_pdf(data: bytes, *, source: str, fallback_title: str) -> Extracted:
    """Extract text, page offsets and sections from a PDF.

    Args:
        data: The raw file bytes.
        source: The document's name, for errors.
        fallback_title: Title used without PDF metadata or an outline parent.

    Returns:
        The extracted text, metadata, sections and ``page_starts``.

    Raises:
        DocumentError: The PDF is corrupt, encrypted, a scan (only images), or has
            no extractable text.
    """
    reader = _open(data, source=source)
    count = _page_count(reader, source)
    entries = _outline(reader, source=source)
    laid = _layout(data, source=source, outline=entries)
    if laid is None:
        laid = _pypdf_text(reader, count, entries, source=source)
    check_line_lengths(laid.text, source=source)
    title = _title(reader, entries) or _heading_title(laid) or fallback_title
    assembler = SectionAssembler(title=title, title_level=0, start_page=1)
    if entries:
        headings = _place_entries(laid.text, laid.starts, entries)
    elif laid.headings:
        headings = list(laid.headings)
    else:
        headings = [_Heading(f"Page {n}", 1, s, False) for n, s in enumerate(laid.starts, start=1)]
    _emit(assembler, laid, headings)
    explicit, implied = _info_dates(reader)
    xmp_stated, xmp_stamps = _xmp_dates(reader)
    meta = resolve_dates(
        DocMeta(title=title),
        laid.text,
        explicit=(explicit, xmp_stated),
        implied=(implied, xmp_stamps),
    )
    return Extracted(laid.text, meta, assembler.finish(end=len(laid.text)), page_starts=laid.starts)


def _heading_title(laid: _Laid) -> str:
    """The first top-level font-size heading on page 1, when it opens the page."""
    first = laid.headings[0] if laid.headings else None
    page_two = laid.starts[1] if len(laid.starts) > 1 else len(laid.text)
    if first and first.level == 1 and first.start < page_two:
        return first.title
    return ""


# --- layout (pdfplumber) --------------------------------------------------------


def _layout(data: bytes, *, source: str, outline: list[_Entry]) -> _Laid | None:
    """Read every page with pdfplumber; None when it cannot read the file."""
    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            pages, images = _pages(pdf)
    except Exception as exc:  # pdfminer raises many kinds on damaged files
        logger.warning("%s: layout unreadable (%s); reading plain text", source, exc)
        return None
    if not any(page.words for page in pages):
        if images:
            raise DocumentError(
                source,
                f"scanned PDF: its {len(pages)} page(s) are images with no text layer "
                "(OCR is not supported), so it was not indexed",
            )
        raise DocumentError(source, "no extractable text (a scanned PDF? OCR is not supported)")
    scanned = [n for n, page in enumerate(pages, start=1) if not page.words and n in images]
    if scanned:
        logger.warning("%s: page(s) %s are images with no text (scanned?)", source, scanned)
    pages = pdflayout.strip_furniture(pages)
    styles = pdflayout.heading_styles(pages)
    return _assemble(pages, styles, outline=outline)


def _pages(pdf: PDF) -> tuple[list[pdflayout.Page], set[int]]:
    """Return each page's words and tables, and the numbers of pages holding images."""
    pages, images = [], set()
    for number, page in enumerate(pdf.pages, start=1):
        if page.images:
            images.add(number)
        tables = tuple(
            pdflayout.TableBox(t.bbox[0], t.bbox[2], t.bbox[1], t.bbox[3], rows)
            for t in page.find_tables()
            if (rows := _rows(t.extract()))
        )
        words = tuple(
            pdflayout.Word(
                w["text"].replace("\x00", ""),
                w["x0"],
                w["x1"],
                w["top"],
                w["bottom"],
                float(w["size"]),
                pdflayout.is_bold(str(w["fontname"])),
            )
            for w in page.extract_words(extra_attrs=["fontname", "size"])
            if w["text"].strip("\x00").strip()
        )
        pages.append(pdflayout.Page(float(page.width), float(page.height), words, tables))
    return pages, images


def _rows(cells: Sequence[Sequence[str | None]]) -> tuple[tuple[str, ...], ...]:
    """Table rows as text; a table of one column or one row is left to the prose."""
    rows = tuple(tuple(" ".join((c or "").split()) for c in row) for row in cells)
    rows = tuple(row for row in rows if any(row))
    return rows if len(rows) >= 2 and max(len(r) for r in rows) >= 2 else ()


def _assemble(
    pages: Sequence[pdflayout.Page],
    styles: dict[tuple[float, bool], int],
    *,
    outline: list[_Entry],
) -> _Laid:
    texts: list[str] = []
    tables: list[tuple[int, int]] = []
    headings: list[_Heading] = []
    starts: list[int] = []
    pos, header = 0, None
    for number, page in enumerate(pages):
        starts.append(pos)
        parts: list[str] = []
        titles = frozenset(e.title.casefold() for e in outline if e.page == number)
        for n, segment in enumerate(pdflayout.page_segments(page, styles, titles)):
            text = segment.text
            if segment.kind == "table":
                rows = text.split("\n")
                if n == 0 and header is not None:  # continued from the page before
                    text = _continued(header, text)
                header = text.split("\n")[0] if rows else None
            else:
                header = None
            offset = pos + sum(len(p) + 2 for p in parts)
            if segment.kind == "table":
                tables.append((offset, offset + len(text)))
            elif segment.kind == "heading" and not outline:
                headings.append(_Heading(text, segment.level, offset, True))
            parts.append(text)
        page_text = "\n\n".join(parts)
        texts.append(page_text)
        pos += len(page_text) + 2
    return _Laid("\n\n".join(texts) + "\n", tuple(starts), tuple(tables), tuple(headings))


def _continued(header: str, table: str) -> str:
    """Give a table continued from the previous page its header row, unless it repeats it."""
    first = table.split("\n", 1)[0]
    if first == header or first.count("|") != header.count("|"):
        return table
    rule = "|" + "---|" * (header.count("|") - 1)
    return "\n".join([header, rule, first, *table.split("\n")[2:]])


# --- plain text (pypdf), when pdfplumber cannot read the file ---------------------


def _pypdf_text(reader: PdfReader, count: int, entries: list[_Entry], *, source: str) -> _Laid:
    raw = [_page_lines(reader, i, source=source) for i in range(count)]
    if not any(line.strip() for page in raw for line in page):
        raise DocumentError(source, "no extractable text (a scanned PDF? OCR is not supported)")
    width = max((len(line) for page in raw for line in page), default=0)
    pages = [
        _reflow(lines, {e.title.casefold() for e in entries if e.page == i}, width)
        for i, lines in enumerate(raw)
    ]
    return _Laid("\n\n".join(pages) + "\n", tuple(_page_starts(pages)), (), ())


def _open(data: bytes, *, source: str) -> PdfReader:
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentError(source, "PDF is encrypted with a password")
    except _CORRUPT as exc:
        raise DocumentError(source, f"corrupt or unreadable PDF: {exc}") from exc
    return reader


def _page_count(reader: PdfReader, source: str) -> int:
    try:
        return len(reader.pages)
    except _CORRUPT as exc:
        raise DocumentError(source, f"corrupt or unreadable PDF: {exc}") from exc


def _page_lines(reader: PdfReader, index: int, *, source: str) -> list[str]:
    """Return a page's extracted lines, without a page-number line at its top or foot."""
    try:
        raw = reader.pages[index].extract_text()
    except _CORRUPT as exc:
        logger.warning("%s: page %s could not be read (%s); it is skipped", source, index + 1, exc)
        return []
    lines = [line.rstrip() for line in normalise_newlines(raw.replace("\x00", "")).split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    if lines and _PAGE_NUMBER.match(lines[-1]):
        lines.pop()
    if lines and _PAGE_NUMBER.match(lines[0]):
        lines.pop(0)
    return lines


def _reflow(lines: list[str], headings: set[str], width: int) -> str:
    """Join hard-wrapped lines into paragraphs, one blank line between paragraphs.

    A line that fills the measure and does not end a sentence continues on the
    next line, so "on 28" + "August 2025" becomes "on 28 August 2025". A
    heading (an outline title), a list item, or a short line (a table row, the
    end of a paragraph) keeps its break; a short line ending a sentence, or a
    heading, ends the paragraph.
    """
    out: list[str] = []
    previous = ""
    for line in lines:
        stripped = line.strip()
        if not out:
            out.append(stripped)
        elif not stripped or not previous:
            out.append("\n\n" if stripped else "")
            out.append(stripped)
        else:
            out.append(_joint(previous, stripped, headings, width))
            out.append(stripped)
        previous = stripped
    return "".join(out).strip("\n").replace("\n\n\n\n", "\n\n")


def _joint(before: str, after: str, headings: set[str], width: int) -> str:
    """Return what goes between two non-blank lines: a space, a newline or a blank line."""
    before_heading = collapse(before).casefold() in headings
    if before_heading or collapse(after).casefold() in headings:
        return "\n\n"
    if _LIST_ITEM.match(after):
        return "\n"  # a list stays one block with the line that introduces it
    full = len(before) >= _FULL_LINE * width
    if _SENTENCE_END.search(before) and not full:
        return "\n\n"
    if not full:
        return "\n"
    if before.endswith("-") and before[-2:-1].isalpha():
        return ""  # a word broken at a hyphen: "check-" + "off"
    return " "


def _page_starts(pages: list[str]) -> list[int]:
    starts, pos = [], 0
    for page in pages:
        starts.append(pos)
        pos += len(page) + 2
    return starts


def _title(reader: PdfReader, entries: list[_Entry]) -> str:
    try:
        meta_title = reader.metadata.title if reader.metadata else None
    except _CORRUPT:
        meta_title = None
    if meta_title and collapse(str(meta_title)):
        return collapse(str(meta_title))
    if len(entries) >= 2 and entries[0].depth == 0 and entries[1].depth == 1:
        return entries[0].title
    return ""


def _info_dates(reader: PdfReader) -> tuple[DateClaim, DateClaim]:
    """Return the dates the document info states: custom keys, then the stamps."""
    try:
        info = reader.metadata
        if info is None:
            return DateClaim(PROPERTIES), DateClaim(PROPERTIES)
        values = {str(k).lstrip("/").lower(): str(v) for k, v in info.items()}
    except _CORRUPT:
        return DateClaim(PROPERTIES), DateClaim(PROPERTIES)
    effective = next((parse_date(v) for k, v in values.items() if "effective" in k), "")
    stated = DateClaim(PROPERTIES, effective)
    stamps = DateClaim(
        PROPERTIES, parse_date(values.get("creationdate")), parse_date(values.get("moddate"))
    )
    return stated, stamps


def _xmp_dates(reader: PdfReader) -> tuple[DateClaim, DateClaim]:
    """Return the dates the XMP packet states on purpose.

    A custom property naming "effective" (Word and Acrobat export custom
    document properties there), else ``dc:date``, is the effective date;
    ``xmp:CreateDate``/``xmp:ModifyDate`` are a tool's timestamps (the second
    claim, ranked with the info's stamps).
    """
    try:
        xmp = reader.xmp_metadata
        if xmp is None:
            return DateClaim(XMP), DateClaim(XMP)
        custom = {str(k).lower(): v for k, v in (xmp.custom_properties or {}).items()}
        stated = next((parse_date(v) for k, v in custom.items() if "effective" in k), "")
        dc_dates = xmp.dc_date or []
        effective = stated or (parse_date(dc_dates[0]) if dc_dates else "")
        stamps = DateClaim(XMP, parse_date(xmp.xmp_create_date), parse_date(xmp.xmp_modify_date))
        return DateClaim(XMP, effective), stamps
    except _CORRUPT as exc:
        logger.debug("XMP metadata unreadable: %s", exc)
        return DateClaim(XMP), DateClaim(XMP)


def _outline(reader: PdfReader, *, source: str) -> list[_Entry]:
    entries: list[_Entry] = []

    def walk(items: list[object], depth: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, depth + 1)
                continue
            title = collapse(str(getattr(item, "title", "") or ""))
            page = reader.get_destination_page_number(item)  # type: ignore[arg-type]
            if title and page is not None and page >= 0:
                entries.append(_Entry(title, depth, page))

    try:
        walk(list(reader.outline), 0)
    except _CORRUPT as exc:
        logger.warning("%s: the PDF outline could not be read (%s); using pages", source, exc)
        return []
    return entries


def _place_entries(text: str, starts: tuple[int, ...], entries: list[_Entry]) -> list[_Heading]:
    """Place each outline entry at its heading line when found on its page, else the page start."""
    headings: list[_Heading] = []
    pos = 0
    for entry in entries:
        page = min(entry.page, len(starts) - 1)
        page_end = starts[page + 1] if page + 1 < len(starts) else len(text)
        from_pos = max(starts[page], pos)
        found = _find_line(text, entry.title, from_pos, page_end)
        pos = found if found is not None else from_pos
        headings.append(_Heading(entry.title, entry.depth + 1, pos, is_line=found is not None))
    return headings


def _find_line(text: str, heading: str, start: int, end: int) -> int | None:
    wanted = heading.casefold()
    line_start = start
    while line_start < end:
        line_end = text.find("\n", line_start, end)
        line_end = end if line_end < 0 else line_end
        if collapse(text[line_start:line_end]).casefold() == wanted:
            return line_start
        line_start = line_end + 1
    return None


def _emit(assembler: SectionAssembler, laid: _Laid, headings: list[_Heading]) -> None:
    """Feed headings, paragraph and table blocks to the assembler in text order."""
    text, starts = laid.text, laid.starts
    heading_lines = {h.start for h in headings if h.is_line}
    pending = list(reversed(headings))
    bounds = [*starts[1:], len(text) + 1]
    for number, (page_start, next_start) in enumerate(zip(starts, bounds, strict=True), start=1):
        page_end = next_start - 2
        tables = [t for t in laid.tables if page_start <= t[0] < page_end]
        blocks: list[tuple[BlockKind, int, int]] = []
        cursor = page_start
        for table_start, table_end in [*tables, (page_end, page_end)]:
            blocks += [
                ("paragraph", a, b)
                for a, b in _paragraphs(text, cursor, table_start, heading_lines)
            ]
            if table_start < table_end:
                blocks.append(("table", table_start, table_end))
            cursor = table_end
        for kind, start, end in blocks:
            while pending and pending[-1].start <= start:
                _heading(assembler, pending.pop(), starts)
            assembler.block(kind, start, end, page=number)
    while pending:
        _heading(assembler, pending.pop(), starts)


def _heading(assembler: SectionAssembler, heading: _Heading, starts: tuple[int, ...]) -> None:
    page = bisect.bisect_right(starts, heading.start)
    assembler.heading(heading.title, level=heading.level, start=heading.start, page=page)


def _paragraphs(text: str, start: int, end: int, skip: set[int]) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` into paragraph spans at blank lines, skipped lines and size."""
    spans: list[tuple[int, int]] = []
    first = last = -1
    line_start = start
    while line_start <= end:
        line_end = text.find("\n", line_start, end)
        line_end = end if line_end < 0 else line_end
        line = text[line_start:line_end]
        if not line.strip() or line_start in skip:
            if first >= 0:
                spans.append((first, last))
            first = -1
        else:
            if first < 0:
                first = line_start
            last = line_end
            size = last - first
            if size >= _PARAGRAPH_HARD_CHARS or (
                size >= _PARAGRAPH_SOFT_CHARS and _SENTENCE_END.search(line)
            ):
                spans.append((first, last))
                first = -1
        line_start = line_end + 1
    if first >= 0:
        spans.append((first, last))
    return spans


def load(data: bytes, *, source: str, fallback: str) -> Extracted:
    """Load one PDF file's bytes (the `assistant.documents.loading` entry point)."""
    return parse_pdf(data, source=source, fallback_title=fallback)
