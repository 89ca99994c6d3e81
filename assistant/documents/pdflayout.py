"""PDF page layout → reading order, paragraphs, headings and tables (no PDF library here).

`assistant.documents.pdf` reads each page with pdfplumber into `Word` and
`TableBox` values; this module decides what they mean:

- **furniture**: a line in a page's top or bottom band that recurs on other pages
  (digits ignored: "Page 2 of 7"), or is a bare page number, is a running header
  or footer and is dropped (chunks keep their page number all the same);
- **columns**: a vertical gutter no line crosses, with text on both sides, splits
  a page into columns, read left column first (a line across the gutter, such as
  a full-width title, starts a new band);
- **paragraphs**: lines join with a space unless the gap above is larger than the
  line pitch, the line opens a list item, or the line before is short and ends
  a sentence (its text stopped before the column's edge);
- **headings**: without an outline, a line set larger than the body text, or a
  short line all in bold at body size, is a heading; each distinct (size, bold)
  style is a level, larger first;
- **tables**: rows become ``| a | b |`` lines under their header and a rule, the
  shape every other loader gives the chunker; a table continued on the next page
  gets its header again when the page does not repeat it.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "Page",
    "Segment",
    "TableBox",
    "Word",
    "heading_styles",
    "page_segments",
    "strip_furniture",
]

_BAND = 0.07  # share of the page height at its top and bottom that holds furniture
_PAGE_NUMBER = re.compile(
    r"^\s*(?:(?:page\s+)?\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?|[-\u2013]\s*\d{1,4}\s*[-\u2013])\s*$",
    re.IGNORECASE,
)
_LIST_ITEM = re.compile(r"^(?:[-*\u2022\u2013\u00b7]|\(?(?:\d{1,3}|[a-z]|[ivx]{1,5})[.)])\s")
_SENTENCE_END = re.compile(r"[.!?:;][\"')\u2019\u201d]*$")
_BOLD = re.compile(r"bold|black|heavy|semibold|demi", re.IGNORECASE)
_HEADING_CHARS = 120


@dataclass(frozen=True, slots=True)
class Word:
    """A word on a page, in PDF points from the page's top-left corner."""

    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    size: float
    bold: bool


@dataclass(frozen=True, slots=True)
class TableBox:
    """A table pdfplumber found: its box and cell texts, first row the header."""

    x0: float
    x1: float
    top: float
    bottom: float
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class Page:
    """What one page holds, before reading order."""

    width: float
    height: float
    words: tuple[Word, ...]
    tables: tuple[TableBox, ...]


@dataclass(frozen=True, slots=True)
class _Line:
    words: tuple[Word, ...]
    column: int = 0  # 0 left (or only), 1 right, -1 across the gutter

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)

    @property
    def x0(self) -> float:
        return min(w.x0 for w in self.words)

    @property
    def x1(self) -> float:
        return max(w.x1 for w in self.words)

    @property
    def top(self) -> float:
        return min(w.top for w in self.words)

    @property
    def bottom(self) -> float:
        return max(w.bottom for w in self.words)

    @property
    def style(self) -> tuple[float, bool]:
        sizes = Counter[float]()
        for word in self.words:
            sizes[round(word.size, 1)] += len(word.text)
        return sizes.most_common(1)[0][0], all(w.bold for w in self.words)


@dataclass(frozen=True, slots=True)
class Segment:
    """One piece of a page's text: a heading, a paragraph run or a table."""

    kind: str  # "heading", "text" or "table"
    text: str
    level: int = 0


def is_bold(fontname: str) -> bool:
    """Tell whether a PDF font name is a bold face ("Helvetica-Bold", "ABCDEF+Arial,Bold")."""
    return bool(_BOLD.search(fontname))


def _lines(words: Sequence[Word], column: int = 0) -> list[_Line]:
    """Group words into lines: same baseline band, left to right."""
    lines: list[list[Word]] = []
    for word in sorted(words, key=lambda w: (round(w.top), w.x0)):
        if lines and abs(lines[-1][0].top - word.top) <= 2.5:
            lines[-1].append(word)
        else:
            lines.append([word])
    return [_Line(tuple(sorted(line, key=lambda w: w.x0)), column) for line in lines]


def _furniture_key(text: str) -> str:
    return re.sub(r"\d+", "#", " ".join(text.split())).casefold()


def strip_furniture(pages: Sequence[Page]) -> list[Page]:
    """Drop running headers, footers and page numbers from every page.

    A line in the top or bottom band is furniture when it is a bare page
    number, or when the same line (digits ignored) is in a band of another page.
    """
    banded = [[line for line in _lines(page.words) if _in_band(line, page)] for page in pages]
    seen = Counter(key for lines in banded for key in {_furniture_key(ln.text) for ln in lines})
    out = []
    for page, lines in zip(pages, banded, strict=True):
        drop = {
            id(word)
            for line in lines
            if _PAGE_NUMBER.match(line.text) or seen[_furniture_key(line.text)] > 1
            for word in line.words
        }
        kept = tuple(w for w in page.words if id(w) not in drop)
        out.append(Page(page.width, page.height, kept, page.tables))
    return out


def _in_band(line: _Line, page: Page) -> bool:
    return line.bottom <= page.height * _BAND or line.top >= page.height * (1 - _BAND)


def heading_styles(pages: Sequence[Page]) -> dict[tuple[float, bool], int]:
    """Return the heading level of each (size, bold) style that marks headings.

    The body style is the one with the most characters; a larger style, or bold
    at body size on short lines only, is a heading style. Larger is higher.
    """
    chars: Counter[tuple[float, bool]] = Counter()
    longest: dict[tuple[float, bool], int] = {}
    for page in pages:
        for line in _column_lines(page, _outside_tables(page)):
            chars[line.style] += len(line.text)
            longest[line.style] = max(longest.get(line.style, 0), len(line.text))
    if not chars:
        return {}
    body_size, _ = chars.most_common(1)[0][0]
    styles = [
        style
        for style in chars
        if longest[style] <= _HEADING_CHARS
        and (style[0] >= body_size * 1.12 or (style[1] and style[0] >= body_size * 0.97))
    ]
    ranked = sorted(styles, key=lambda s: (-s[0], not s[1]))
    return {style: level for level, style in enumerate(ranked[:6], start=1)}


def page_segments(
    page: Page, styles: dict[tuple[float, bool], int], titles: frozenset[str] = frozenset()
) -> list[Segment]:
    """Return a page's headings, paragraph runs and tables in reading order.

    A line whose text is one of ``titles`` (the outline's, casefolded) is a
    heading whatever its font.
    """
    items = _reading_order(page)
    segments: list[Segment] = []
    run: list[_Line] = []
    for item in items:
        level = styles.get(item.style, 0) if isinstance(item, _Line) else 0
        if isinstance(item, _Line) and " ".join(item.text.split()).casefold() in titles:
            level = level or 1
        if isinstance(item, _Line) and not level:
            run.append(item)
            continue
        _flush(segments, run)
        run = []
        if isinstance(item, TableBox):
            segments.append(Segment("table", render_table(item.rows)))
        elif segments and segments[-1].kind == "heading" and segments[-1].level == level:
            last = segments[-1]  # a heading set on two lines
            segments[-1] = Segment("heading", f"{last.text} {item.text}", level)
        else:
            segments.append(Segment("heading", item.text, level))
    _flush(segments, run)
    return segments


def _flush(segments: list[Segment], run: list[_Line]) -> None:
    if run:
        segments.append(Segment("text", _reflow(run)))


def render_table(rows: Sequence[Sequence[str]]) -> str:
    """Render rows as pipe-table lines: header, rule, then one line per row."""
    width = max(len(row) for row in rows)

    def line(row: Sequence[str]) -> str:
        cells = [" ".join(cell.split()).replace("|", "/") for cell in row]
        cells += [""] * (width - len(cells))
        return "| " + " | ".join(cells) + " |"

    return "\n".join([line(rows[0]), "|" + "---|" * width, *(line(row) for row in rows[1:])])


def continue_table(
    previous: Sequence[str], rows: tuple[tuple[str, ...], ...]
) -> tuple[tuple[str, ...], ...]:
    """Give a table continued from the previous page its header, unless it repeats it."""
    header = tuple(previous)
    if not rows or len(rows[0]) != len(header) or rows[0] == header:
        return rows
    return (header, *rows)


# --- reading order --------------------------------------------------------------


def _reading_order(page: Page) -> list[_Line | TableBox]:
    """Lines and tables in reading order: by band, then column, then top to bottom."""
    words = _outside_tables(page)
    gutter = _gutter(words, page)
    lines = _column_lines(page, words, gutter)
    items: list[_Line | TableBox] = [*lines, *page.tables]
    if gutter is None:
        return sorted(items, key=lambda item: item.top)
    spanning = sorted(i.top for i in items if i.x0 < gutter < i.x1)

    def key(item: _Line | TableBox) -> tuple[int, int, float]:
        band = sum(1 for top in spanning if top < item.top)
        if item.x0 < gutter < item.x1:
            return band, -1, item.top
        return band, int(item.x0 >= gutter), item.top

    return sorted(items, key=key)


def _column_lines(page: Page, words: Sequence[Word], gutter: float | None = -1.0) -> list[_Line]:
    """Group words into lines within each column; a line across the gutter stays whole."""
    if gutter is not None and gutter < 0:
        gutter = _gutter(words, page)
    if gutter is None:
        return _lines(words)
    across = [w.top for w in words if w.x0 < gutter < w.x1]
    full = [w for w in words if any(abs(w.top - top) <= 2.5 for top in across)]
    rest = [w for w in words if not any(abs(w.top - top) <= 2.5 for top in across)]
    return [
        *_lines(full, -1),
        *_lines([w for w in rest if w.x1 <= gutter], 0),
        *_lines([w for w in rest if w.x1 > gutter], 1),
    ]


def _outside_tables(page: Page) -> list[Word]:
    return [
        w
        for w in page.words
        if not any(
            t.x0 - 1 <= (w.x0 + w.x1) / 2 <= t.x1 + 1 and t.top - 1 <= w.top <= t.bottom + 1
            for t in page.tables
        )
    ]


_MIN_GUTTER = 7.0  # points: wider than any space between words


def _gutter(words: Sequence[Word], page: Page) -> float | None:
    """Return the x of a gutter between two columns, or None for a one-column page.

    A gutter is a run at least `_MIN_GUTTER` wide in the middle of the page that
    (almost) no word crosses, with at least five lines of text on each side.
    """
    if len(words) < 20:
        return None
    allowed = max(1, len(words) // 200)  # a full-width title or two
    run: list[float] = []
    best: list[float] = []
    x = page.width * 0.3
    while x <= page.width * 0.7:
        if sum(1 for w in words if w.x0 < x < w.x1) <= allowed:
            run.append(x)
            if len(run) > len(best):
                best = list(run)
        else:
            run = []
        x += 1.0
    if not best or best[-1] - best[0] < _MIN_GUTTER:
        return None
    middle = (best[0] + best[-1]) / 2
    left = {round(w.top) for w in words if w.x1 <= middle}
    right = {round(w.top) for w in words if w.x0 >= middle}
    return middle if min(len(left), len(right)) >= 5 else None


# --- paragraphs -----------------------------------------------------------------


def _reflow(lines: Sequence[_Line]) -> str:
    """Join a column's lines into paragraphs (blank line between), lists line by line."""
    gaps = [b.top - a.bottom for a, b in itertools.pairwise(lines) if b.top > a.top]
    pitch = statistics.median(gaps) if gaps else 0.0
    right = {c: max(ln.x1 for ln in lines if ln.column == c) for c in {ln.column for ln in lines}}
    left = {c: min(ln.x0 for ln in lines if ln.column == c) for c in right}
    out = [lines[0].text]
    for before, after in itertools.pairwise(lines):
        edges = left[before.column], right[before.column]
        if after.column != before.column:  # a sentence may run on into the next column
            runs_on = before.x1 >= edges[1] - 0.15 * (edges[1] - edges[0])
            out.append(" " if runs_on and not _SENTENCE_END.search(before.text) else "\n\n")
        else:
            out.append(_joint(before, after, pitch=pitch, left=edges[0], right=edges[1]))
        out.append(after.text)
    return "".join(out)


def _joint(before: _Line, after: _Line, *, pitch: float, left: float, right: float) -> str:
    if after.top - before.bottom > max(pitch * 1.6, pitch + 2.5) or after.top < before.top:
        return "\n\n"  # the gap of a new paragraph, or a new column
    text = after.text
    if _LIST_ITEM.match(text):
        return "\n"
    full = before.x1 >= right - 0.15 * (right - left)
    if _SENTENCE_END.search(before.text) and not full:
        return "\n\n"
    if not full:
        return "\n"
    if before.text.endswith("-") and before.text[-2:-1].isalpha():
        return ""  # a word broken at a hyphen: "check-" + "off"
    return " "
