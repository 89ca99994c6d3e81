"""PDF → text, page offsets and sections (pypdf).

Pages are joined with a blank line; ``page_starts`` records where each begins.
With an outline (bookmarks), each entry starts a section at its heading line
when that line is found on its page, else at the page start; without one, each
page is a section ``(title, "Page n")``. Hard-wrapped lines are joined into
paragraphs (`_reflow`); a page-number line at a page's top or foot is dropped.
Blocks are those paragraphs, kept to a moderate size. Dates come from a custom
info key naming "effective", an "Effective ..." line near the top, then the info's
creation and modification dates.
"""

from __future__ import annotations

import bisect
import io
import logging
import re
import zlib
from dataclasses import dataclass

from pypdf import PdfReader
from pypdf.errors import PyPdfError

from assistant.documents.assemble import SectionAssembler
from assistant.documents.base import Extracted
from assistant.documents.builder import collapse
from assistant.documents.dates import PROPERTIES, DateClaim, parse_date, resolve_dates
from assistant.documents.decode import check_line_lengths, normalise_newlines
from assistant.errors import DocumentError
from assistant.types import DocMeta

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


def parse_pdf(data: bytes, *, source: str, fallback_title: str) -> Extracted:
    """Extract text, page offsets and sections from a PDF.

    Args:
        data: The raw file bytes.
        source: The document's name, for errors.
        fallback_title: Title used without PDF metadata or an outline parent.

    Returns:
        The extracted text, metadata, sections and ``page_starts``.

    Raises:
        DocumentError: The PDF is corrupt, encrypted, or has no extractable text.
    """
    reader = _open(data, source=source)
    raw = [_page_lines(reader, i, source=source) for i in range(_page_count(reader, source))]
    if not any(line.strip() for page in raw for line in page):
        raise DocumentError(source, "no extractable text (a scanned PDF? OCR is not supported)")
    entries = _outline(reader, source=source)
    width = max((len(line) for page in raw for line in page), default=0)
    pages = [
        _reflow(lines, {e.title.casefold() for e in entries if e.page == i}, width)
        for i, lines in enumerate(raw)
    ]
    text = "\n\n".join(pages) + "\n"
    check_line_lengths(text, source=source)
    starts = tuple(_page_starts(pages))
    title = _title(reader, entries) or fallback_title
    assembler = SectionAssembler(title=title, title_level=0, start_page=1)
    if entries:
        headings = _place_entries(text, starts, entries)
    else:
        headings = [_Heading(f"Page {n}", 1, s, False) for n, s in enumerate(starts, start=1)]
    _emit(assembler, text, starts, headings)
    explicit, implied = _info_dates(reader)
    meta = resolve_dates(DocMeta(title=title), text, explicit=(explicit,), implied=(implied,))
    return Extracted(text, meta, assembler.finish(end=len(text)), page_starts=starts)


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


def _emit(
    assembler: SectionAssembler, text: str, starts: tuple[int, ...], headings: list[_Heading]
) -> None:
    """Feed headings and paragraph blocks to the assembler in text order."""
    heading_lines = {h.start for h in headings if h.is_line}
    pending = list(reversed(headings))
    bounds = [*starts[1:], len(text) + 1]
    for number, (page_start, next_start) in enumerate(zip(starts, bounds, strict=True), start=1):
        for start, end in _paragraphs(text, page_start, next_start - 2, heading_lines):
            while pending and pending[-1].start <= start:
                _heading(assembler, pending.pop(), starts)
            assembler.block("paragraph", start, end, page=number)
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
