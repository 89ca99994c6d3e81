"""Answer units: the pieces of a section that can be quoted on their own.

A unit is a sentence, a list item (or one sentence of a long item), a table
row shown with its header, or a definition kept with its term. Units are cut
from the blocks markdown-it-py finds (`parse_blocks`), reduced to plain words:
links are quoted by their text, autolinks by their address, never a raw link
target; sentences never break inside a URL, a decimal ("12.5") or an
abbreviation ("e.g.", "No."). Headings are not units but are remembered as the
heading path each unit sits under, so ranking can match them. Code and HTML
blocks are not units, except a short code block (an address) right after a
lead-in ending in ":", which is quoted with it.

Text from PDF, Word and HTML loaders is Markdown-ish: inside each paragraph,
lines are also read as plain text, where a bullet line ("•", "(a)"), a dot
leader line ("Saturday ........ 9:00") or a short line on its own without
final punctuation (a heading) starts a new piece.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from assistant.documents.markdown import parse_blocks, plain_text
from assistant.types import TextBlock, TextLine
from assistant.words import split_sentences

__all__ = ["AnswerUnit", "UnitKind", "segment", "split_sentences", "unlink"]

UnitKind = Literal["sentence", "item", "row", "definition"]

# Bullets of plain text (PDF, Word) that Markdown does not read as list markers.
_BULLET = re.compile(r"^(?:[-*+•]|\(?\d{1,3}[.)]|\(?[a-z][.)])\s+")
_COLON_TERM = re.compile(r"^([A-Z][\w'\u2019 /&()-]{1,48}):\s+(?=\S)")
_QUOTED_TERM = re.compile(r"^[\"“]([^\"”]{1,60})[\"”]\s+(?:means|refers to|is|includes)\b")
# "Example: An employee finds..." introduces prose, it defines no term "Example".
_NOT_TERMS = frozenset(
    (
        *("example", "for example", "note", "please note", "tip", "warning", "important"),
        *("summary", "short version", "in short", "tl;dr", "caution", "reminder", "update"),
    )
)
_TERM_SEPARATOR = re.compile(r"^\s*[:.\u2013\u2014-]?\s*")
_MAX_TERM_CHARS = 80
_MIN_WORDS = 3
# "Saturday ........ 9:00 a.m. to 1:00 p.m.": a key and its value set apart by dot leaders.
_LEADER = re.compile(r"\s*\.{4,}\s*")
# A list item longer than this is split into its sentences.
_LONG_ITEM_WORDS = 45


@dataclass(frozen=True, slots=True)
class AnswerUnit:
    """One quotable piece of a section.

    Attributes:
        text: What is quoted: plain prose (links by their text), or for a
            table row the header, rule and row as Markdown table lines.
        kind: What sort of piece it is.
        headings: The heading path the unit sits under, outermost first.
        context: Words around the unit that explain it without being quoted
            (a list's lead-in sentence, a table's header).
        position: Order of the unit in its section.
    """

    text: str
    kind: UnitKind
    headings: tuple[str, ...] = ()
    context: str = ""
    position: int = 0

    @property
    def is_table(self) -> bool:
        """Return whether the unit is a table row shown with its header."""
        return self.kind == "row"


def unlink(text: str) -> str:
    """Return inline Markdown reduced to words: links by their text, emphasis and tags dropped."""
    return plain_text(text)


def segment(text: str, *, headings: Sequence[str] = (), table_header: str = "") -> list[AnswerUnit]:
    """Return the answer units of a section's Markdown-ish text, in order.

    Args:
        text: The section text (Markdown, or plain text from PDF/Word/HTML).
        headings: The heading path of the section; headings met inside the
            text extend it for the units below them.
        table_header: The chunk's prefix: header and rule lines for a table
            whose header lies before ``text`` (the second piece of a split
            table), or the opening line of a split code block.
    """
    scanner = _Scanner(tuple(headings))
    scanner.table_header = next(
        (b.header for b in parse_blocks(table_header) if b.kind == "table"), ()
    )
    for block in _parse(_with_prefix(text, table_header)):
        _read(block, scanner)
    return [
        AnswerUnit(u.text, u.kind, u.headings, u.context, position)
        for position, u in enumerate(scanner.units)
    ]


class _Scanner:
    """What reading a section has found so far: the heading path, lead-ins and units."""

    def __init__(self, headings: tuple[str, ...]) -> None:
        self.base = headings
        self.inner: list[tuple[int, str]] = []
        self.lead = ""  # the last paragraph when it ends with ":", context for the items below
        self.item_leads: dict[int, str] = {}  # the last item at each list depth
        self.lead_in = ""  # the sentence ending with ":" just before, for a code block
        self.table_header: tuple[str, ...] = ()  # the last table's, for rows cut off from it
        self.units: list[AnswerUnit] = []

    @property
    def headings(self) -> tuple[str, ...]:
        return (*self.base, *(title for _, title in self.inner))

    def heading(self, level: int, title: str) -> None:
        self.inner = [(lv, t) for lv, t in self.inner if lv < level]
        self.inner.append((level, title))
        self.lead = ""
        self.item_leads.clear()
        self.table_header = ()


def _with_prefix(text: str, prefix: str) -> str:
    """Put a split table's header, or a split code block's opening fence, before ``text``."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if prefix.lstrip().startswith("|") and first.startswith("|"):
        if len(lines) > 1 and not lines[1].strip("|:- "):
            return text  # the text has its own header and rule
        return prefix.rstrip("\n") + "\n" + text
    fences = ("```", "~~~")
    if prefix.lstrip().startswith(fences) and not any(line.startswith(fences) for line in lines):
        # A middle piece of a split code block; a piece with its closing fence is
        # mended by `_parse`, and a whole section holds its own opening fence.
        return prefix.rstrip("\n") + "\n" + text
    return text


def _parse(text: str) -> tuple[TextBlock, ...]:
    """Parse ``text``, mending a window of a section that starts inside a code block.

    Then the code block's closing fence comes first and opens a fence that never
    closes, which would swallow every block after it. A bare fence left open
    and followed by a blank line (code never starts with one) is read as the
    closing fence it is.
    """
    blocks = parse_blocks(text)
    last = blocks[-1] if blocks else None
    if last is None or last.kind != "code":
        return blocks
    lines = [*text.split("\n"), ""]
    first, end = last.span
    opening, after = lines[first].strip(), lines[first + 1].strip()
    closed = end > first + 1 and lines[end - 1].strip() == opening
    if opening in ("```", "~~~") and not after and not closed:
        return parse_blocks(f"{opening}\n{text}")
    return blocks


def _read(block: TextBlock, scanner: _Scanner) -> None:
    lead_in, scanner.lead_in = scanner.lead_in, ""
    if block.kind == "heading":
        scanner.heading(block.level, block.text.strip())
    elif block.kind in ("paragraph", "quote") and _all_rows(block.lines):
        _loose_rows(block.lines, scanner)
    elif block.kind == "quote" and lead_in and len(split_sentences(block.text)) == 1:
        _join_lead_in(scanner, lead_in, " ".join(block.text.split()))
    elif block.kind in ("paragraph", "quote"):
        _walk(block.lines, 0, scanner)
    elif block.kind == "item":
        _item_block(block, scanner)
    elif block.kind == "table":
        _table(block, scanner)
    elif block.kind == "code":
        _code(block, scanner, lead_in)
    # HTML blocks are markup, not policy text.


def _walk(lines: Sequence[TextLine], index: int, scanner: _Scanner) -> None:
    """Read the plain-text structure of a paragraph's lines from ``index`` on."""
    while index < len(lines):
        scanner.lead_in = ""
        stripped = lines[index].text.strip()
        if not stripped:
            index += 1
        elif _LEADER.search(stripped):
            scanner.units.append(_leader_unit(stripped, scanner))
            index += 1
        elif (bullet := _plain_bullet(lines[index])) is not None:
            line = lines[index]
            parts, index = _item_lines(lines, index, stripped[bullet:], line.indent)
            _add_item(parts, _opening_bold(line, skip=bullet), scanner, depth=1)
        else:
            index = _paragraph(lines, index, scanner)


def _item_block(block: TextBlock, scanner: _Scanner) -> None:
    """Read a Markdown list item: its own lines, then any plain text its paragraph runs into."""
    if not block.lines:
        return
    first = block.lines[0]
    parts, index = _item_lines(block.lines, 0, first.text.strip(), first.indent)
    _add_item(parts, _opening_bold(first), scanner, depth=block.depth)
    _walk(block.lines, index, scanner)


def _plain_bullet(line: TextLine) -> int | None:
    """Return where the text of a plain-text list item starts ("(a) ", "• "), or None.

    A marker inside a bold span ("**(a) Grant.** ...") is a term, not a bullet.
    """
    stripped = line.text.strip()
    marker = _BULLET.match(stripped)
    if marker is None or _opening_bold(line):
        return None
    return marker.end()


def _opening_bold(line: TextLine, *, skip: int = 0) -> str:
    """Return the bold span that opens ``line`` (after ``skip`` chars of its words), or ""."""
    lead = len(line.text) - len(line.text.lstrip())
    return line.strong if line.strong and line.strong_at == lead + skip else ""


def _item_lines(
    lines: Sequence[TextLine], index: int, first: str, indent: int
) -> tuple[list[str], int]:
    """Return an item's lines from ``index`` and the index after them.

    A line less indented than the item's continuation ends it when the item
    so far ends a sentence or clause, or when the line starts with a capital:
    plain text has no other sign that the list is over.
    """
    parts = [first]
    index += 1
    while index < len(lines):
        line = lines[index]
        stripped = line.text.strip()
        if not stripped or _plain_bullet(line) is not None or _LEADER.search(stripped):
            break
        if line.indent <= indent and (
            parts[-1].endswith((".", "!", "?", ":", ";")) or stripped[0].isupper()
        ):
            break
        parts.append(stripped)
        index += 1
    return parts, index


def _add_item(parts: list[str], strong: str, scanner: _Scanner, *, depth: int) -> None:
    body = " ".join(parts)
    parent = scanner.item_leads.get(depth - 1, "") if depth > 1 else ""
    context = parent if parent.endswith(":") else scanner.lead
    scanner.item_leads = {d: t for d, t in scanner.item_leads.items() if d < depth}
    scanner.item_leads[depth] = body
    scanner.units.extend(_prose_units(body, strong, scanner, kind="item", context=context))


def _paragraph(lines: Sequence[TextLine], index: int, scanner: _Scanner) -> int:
    start = index
    parts: list[str] = []
    while index < len(lines):
        line = lines[index]
        stripped = line.text.strip()
        if not stripped or _plain_bullet(line) is not None or _LEADER.search(stripped):
            break
        if _looks_like_heading(line, parts, lines, index):
            if parts:
                break
            scanner.heading(7, stripped.strip("*_ :"))
            return index + 1
        parts.append(stripped)
        index += 1
    if parts:
        body = " ".join(parts)
        units = _prose_units(body, _opening_bold(lines[start]), scanner, kind="sentence")
        scanner.units.extend(units)
        scanner.lead = body if body.endswith(":") else ""
        scanner.lead_in = (split_sentences(body) or [""])[-1] if scanner.lead else ""
    return index


def _looks_like_heading(
    line: TextLine, parts: list[str], lines: Sequence[TextLine], index: int
) -> bool:
    """A short line on its own without final punctuation ("Appeals", "**Eligibility**")."""
    if parts and not parts[-1].endswith((".", "!", "?", ":")):
        return False
    plain = line.text.strip()
    if not plain or plain.endswith((".", "!", "?", ":", ";", ",")) or len(plain.split()) > 8:
        return False
    if not (plain[0].isupper() or plain[0].isdigit()):
        return False
    after = lines[index + 1].text.strip() if index + 1 < len(lines) else ""
    bold = line.strong == plain
    return bold or not after or after[0].isupper() or bool(_BULLET.match(after))


def _table(block: TextBlock, scanner: _Scanner) -> None:
    scanner.table_header = block.header
    _rows(block.rows, scanner)


def _rows(rows: Sequence[Sequence[str]], scanner: _Scanner) -> None:
    header = scanner.table_header
    shown = [_row(header), "|" + "|".join("---" for _ in header) + "|"] if header else []
    context = " ".join(cell for cell in header if cell)
    for row in rows:
        text = "\n".join([*shown, _row(row)])
        scanner.units.append(AnswerUnit(text, "row", scanner.headings, context))


def _all_rows(lines: Sequence[TextLine]) -> bool:
    """Tell whether a paragraph is table rows cut off from their header by a blank line.

    Merged pieces of a split table are one blank line apart, which ends a Markdown table.
    """
    texts = [line.text.strip() for line in lines if line.text.strip()]
    return bool(texts) and all(t.startswith("|") and t.endswith("|") and len(t) > 1 for t in texts)


def _loose_rows(lines: Sequence[TextLine], scanner: _Scanner) -> None:
    rows = [
        [cell.strip() for cell in line.text.strip()[1:-1].split("|")]
        for line in lines
        if line.text.strip()
    ]
    _rows(rows, scanner)


def _row(cells: Sequence[str]) -> str:
    escaped = (cell.replace("|", "\\|") for cell in cells)
    return "|" + "|".join(f" {cell} " if cell else " " for cell in escaped) + "|"


# A code block this short after a lead-in ending in ":" is what the lead-in announces
# (an address, a phone line), not code.
_ANNOUNCED_LINES = 6


def _code(block: TextBlock, scanner: _Scanner, lead_in: str) -> None:
    lines = [line.text.strip() for line in block.lines if line.text.strip()]
    if lines and all(_LEADER.search(line) for line in lines):
        scanner.units.extend(_leader_unit(line, scanner) for line in lines)
        return
    if not lead_in or not lines or len(lines) > _ANNOUNCED_LINES:
        return
    _join_lead_in(scanner, lead_in, ", ".join(line.rstrip(",;") for line in lines))


def _join_lead_in(scanner: _Scanner, lead_in: str, announced: str) -> None:
    """Quote what a lead-in ending in ":" announces (an address, a quoted rule) with it."""
    text = f"{lead_in} {announced}"
    last = scanner.units[-1] if scanner.units else None
    if last is not None and last.text == lead_in:
        scanner.units[-1] = AnswerUnit(text, last.kind, last.headings, last.context)
    else:
        scanner.units.append(AnswerUnit(text, "sentence", scanner.headings))


def _leader_unit(line: str, scanner: _Scanner) -> AnswerUnit:
    key, value = [*_LEADER.split(line, maxsplit=1), ""][:2]
    text = f"{key.strip()}: {value.strip()}".strip(" :")
    return AnswerUnit(text, "item", scanner.headings, scanner.lead)


def _prose_units(
    body: str, strong: str, scanner: _Scanner, *, kind: UnitKind, context: str = ""
) -> list[AnswerUnit]:
    term, rest = _definition(body, strong)
    headings = scanner.headings
    if term:
        sentences = split_sentences(rest)
        joint = " " if term.endswith((".", ":", "?", "!")) else ": "
        first = f"{term}{joint}{sentences[0]}" if sentences else term
        units = [AnswerUnit(first, "definition", headings, context)]
        units += [
            AnswerUnit(s, "sentence", (*headings, term.rstrip(".:")), context)
            for s in sentences[1:]
            if len(s.split()) >= _MIN_WORDS
        ]
        return units
    if kind == "item" and len(rest.split()) <= _LONG_ITEM_WORDS:
        return [AnswerUnit(rest.strip(), "item", headings, context)] if rest.strip() else []
    return [
        AnswerUnit(s, kind if index == 0 else "sentence", headings, context)
        for index, s in enumerate(split_sentences(rest))
        if len(s.split()) >= _MIN_WORDS
    ]


def _definition(body: str, strong: str) -> tuple[str, str]:
    """Split ``**Term:** text``, ``Term: text`` or ``"Term" means ...`` into term and text.

    ``strong`` is the bold span that opens ``body``, if any.
    """
    if strong and len(strong) <= _MAX_TERM_CHARS and body.startswith(strong):
        rest = _TERM_SEPARATOR.sub("", body[len(strong) :], count=1)
        if rest:
            return strong, rest
    if _QUOTED_TERM.match(body):
        return "", body  # the term is already part of the sentence
    colon = _COLON_TERM.match(body)
    if colon and len(colon.group(1).split()) <= 6 and colon.group(1).lower() not in _NOT_TERMS:
        return colon.group(1).strip(), body[colon.end() :]
    return "", body
