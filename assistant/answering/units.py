"""Answer units: the pieces of a section that can be quoted on their own.

A unit is a sentence, a list item (or one sentence of a long item), a table
row shown with its header, or a definition kept with its term. Units respect
the document: sentences never break inside a URL, a decimal ("12.5"), an
abbreviation ("e.g.", "No.") or a Markdown link; links are quoted by their
text, never by their raw URL; headings are not units but are remembered as
the heading path each unit sits under, so ranking can match them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from assistant.words import split_sentences

__all__ = ["AnswerUnit", "UnitKind", "segment", "split_sentences", "unlink"]

UnitKind = Literal["sentence", "item", "row", "definition"]

_LINK = re.compile(r"!?\[([^\]\n]*)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"]*\")?\)")
_REF_LINK = re.compile(r"\[([^\]\n]+)\]\[[^\]\n]*\]")
_AUTOLINK = re.compile(r"<(https?://[^>\s]+)>")
_EMPHASIS = re.compile(
    r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1|(?<![\w*])([*_])(?=\S)(.+?)(?<=\S)\3(?![\w*])"
)
_HTML_TAG = re.compile(r"</?[a-zA-Z][^>\n]*>")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+•]|\(?\d{1,3}[.)]|\(?[a-z][.)])\s+")
_TABLE_RULE = re.compile(r"^\|?\s*:?-{2,}")
_TERM = re.compile(r"^\*\*([^*\n]{1,80}?)\*\*\s*[:.\u2013\u2014-]?\s*(?=\S)")
_COLON_TERM = re.compile(r"^([A-Z][\w'\u2019 /&()-]{1,48}):\s+(?=\S)")
_QUOTED_TERM = re.compile(r"^[\"“]([^\"”]{1,60})[\"”]\s+(?:means|refers to|is|includes)\b")
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
    """Return ``text`` with Markdown links, images, emphasis and HTML tags reduced to words."""
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _REF_LINK.sub(lambda m: m.group(1), text)
    text = _AUTOLINK.sub(lambda m: m.group(1), text)
    text = _HTML_TAG.sub("", text)
    for _ in range(2):  # nested emphasis (**_a_**)
        text = _EMPHASIS.sub(lambda m: m.group(2) or m.group(4) or "", text)
    return text


def segment(text: str, *, headings: Sequence[str] = (), table_header: str = "") -> list[AnswerUnit]:
    """Return the answer units of a section's Markdown-ish text, in order.

    Args:
        text: The section text (Markdown, or plain text from PDF/Word/HTML).
        headings: The heading path of the section; headings met inside the
            text extend it for the units below them.
        table_header: Header and rule lines for a table whose header lies
            before ``text`` (the second piece of a split table).
    """
    units: list[AnswerUnit] = []
    for block in _blocks(text, tuple(headings), table_header):
        units.extend(block)
    return [
        AnswerUnit(u.text, u.kind, u.headings, u.context, position)
        for position, u in enumerate(units)
    ]


class _Scanner:
    """Walks the lines of a section, grouping them into paragraphs, items and tables."""

    def __init__(self, headings: tuple[str, ...], table_header: str) -> None:
        self.base = headings
        self.inner: list[tuple[int, str]] = []
        self.table_header = table_header.splitlines()
        self.lead = ""

    @property
    def headings(self) -> tuple[str, ...]:
        return (*self.base, *(title for _, title in self.inner))

    def heading(self, level: int, title: str) -> None:
        self.inner = [(lv, t) for lv, t in self.inner if lv < level]
        self.inner.append((level, title))
        self.lead = ""


def _blocks(text: str, headings: tuple[str, ...], table_header: str) -> Iterator[list[AnswerUnit]]:
    scanner = _Scanner(headings, table_header)
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if not stripped or re.fullmatch(r"[-*_=]{3,}", stripped):
            index += 1
            continue
        heading = _HEADING.match(line)
        if heading:
            scanner.heading(len(heading.group(1)), unlink(heading.group(2)).strip())
            index += 1
        elif _LEADER.search(stripped):
            yield [_leader_unit(stripped, scanner)]
            index += 1
        else:
            read = (
                _table if stripped.startswith("|") else _item if _BULLET.match(line) else _paragraph
            )
            out: list[AnswerUnit] = []
            index = read(lines, index, scanner, out)
            yield out


def _table(lines: list[str], index: int, scanner: _Scanner, out: list[AnswerUnit]) -> int:
    header: list[str] = []
    rows: list[str] = []
    while index < len(lines) and lines[index].strip().startswith("|"):
        row = lines[index].strip()
        index += 1
        is_rule = bool(_TABLE_RULE.match(row.lstrip("|").strip()))
        if is_rule or (not rows and not header and _next_is_rule(lines, index)):
            header.append(row)
        else:
            rows.append(row)
    if not header and scanner.table_header:
        header = scanner.table_header[:2]
    context = " ".join(_cells(header[0])) if header else ""
    for row in rows:
        shown = "\n".join([*header[:2], unlink(row)])
        out.append(AnswerUnit(shown, "row", scanner.headings, context))
    return index


def _leader_unit(line: str, scanner: _Scanner) -> AnswerUnit:
    key, value = [*_LEADER.split(line, maxsplit=1), ""][:2]
    text = f"{unlink(key).strip()}: {unlink(value).strip()}".strip(" :")
    return AnswerUnit(text, "item", scanner.headings, scanner.lead)


def _next_is_rule(lines: list[str], index: int) -> bool:
    return index < len(lines) and bool(_TABLE_RULE.match(lines[index].strip().lstrip("|").strip()))


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|") if c.strip()]


def _item(lines: list[str], index: int, scanner: _Scanner, out: list[AnswerUnit]) -> int:
    first = lines[index]
    marker = _BULLET.match(first)
    assert marker is not None
    indent = len(marker.group(1))
    parts = [first[marker.end() :].strip()]
    index += 1
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if not stripped or _BULLET.match(line) or stripped.startswith(("|", "#")):
            break
        continued = len(line) - len(line.lstrip()) > indent
        if not continued and (
            parts[-1].endswith((".", "!", "?", ":", ";")) or stripped[0].isupper()
        ):
            break
        parts.append(stripped)
        index += 1
    body = " ".join(parts)
    out.extend(_prose_units(body, scanner, kind="item"))
    return index


def _paragraph(lines: list[str], index: int, scanner: _Scanner, out: list[AnswerUnit]) -> int:
    parts: list[str] = []
    while index < len(lines):
        line = lines[index]
        stripped = line.strip().lstrip("> ").strip()
        if (
            not stripped
            or _HEADING.match(line)
            or _BULLET.match(line)
            or stripped.startswith("|")
            or _LEADER.search(stripped)
        ):
            break
        if _looks_like_heading(stripped, parts, lines, index):
            if parts:
                break
            scanner.heading(7, unlink(stripped).strip("*_ :"))
            index += 1
            return index
        parts.append(stripped)
        index += 1
    if parts:
        body = " ".join(parts)
        out.extend(_prose_units(body, scanner, kind="sentence"))
        scanner.lead = body if body.endswith(":") else ""
    return index


def _looks_like_heading(stripped: str, parts: list[str], lines: list[str], index: int) -> bool:
    """A short line on its own without final punctuation ("Appeals", "**Eligibility**")."""
    if parts and not parts[-1].endswith((".", "!", "?", ":")):
        return False
    plain = unlink(stripped).strip()
    if not plain or plain.endswith((".", "!", "?", ":", ";", ",")) or len(plain.split()) > 8:
        return False
    if not (plain[0].isupper() or plain[0].isdigit()):
        return False
    after = lines[index + 1].strip() if index + 1 < len(lines) else ""
    bold = stripped.startswith("**") and stripped.endswith("**")
    return bold or not after or after[0].isupper() or bool(_BULLET.match(lines[index + 1]))


def _prose_units(body: str, scanner: _Scanner, *, kind: UnitKind) -> list[AnswerUnit]:
    context = scanner.lead if kind == "item" else ""
    term, rest = _definition(body)
    plain = unlink(rest)
    headings = scanner.headings
    if term:
        sentences = split_sentences(plain)
        joint = " " if term.endswith((".", ":", "?", "!")) else ": "
        first = f"{term}{joint}{sentences[0]}" if sentences else term
        units = [AnswerUnit(first, "definition", headings, context)]
        units += [
            AnswerUnit(s, "sentence", (*headings, term.rstrip(".:")), context)
            for s in sentences[1:]
            if len(s.split()) >= _MIN_WORDS
        ]
        return units
    if kind == "item" and len(plain.split()) <= _LONG_ITEM_WORDS:
        return [AnswerUnit(plain.strip(), "item", headings, context)] if plain.strip() else []
    return [
        AnswerUnit(s, kind if index == 0 else "sentence", headings, context)
        for index, s in enumerate(split_sentences(plain))
        if len(s.split()) >= _MIN_WORDS
    ]


def _definition(body: str) -> tuple[str, str]:
    """Split ``**Term:** text``, ``Term: text`` or ``"Term" means ...`` into term and text."""
    bold = _TERM.match(body)
    if bold:
        return unlink(bold.group(1)).strip(), body[bold.end() :]
    quoted = _QUOTED_TERM.match(body)
    if quoted:
        return "", body  # the term is already part of the sentence
    colon = _COLON_TERM.match(body)
    if colon and len(colon.group(1).split()) <= 6:
        return unlink(colon.group(1)).strip(), body[colon.end() :]
    return "", body
