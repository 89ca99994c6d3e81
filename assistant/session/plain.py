"""Markdown source as plain reading text, for excerpts shown inline in the Sources panel.

An excerpt is escaped before it is shown, so any Markdown left in it appears as raw
syntax: table pipes, ``|---|`` rows, ``#`` headings running into sentences,
``[text](url)`` links. Here tables become "label: value" rows (the header row stays
with every row shown), headings end in a colon, links keep their text, list markers
become bullets and emphasis and code marks go.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from assistant.answering.citations import defuse_markers
from assistant.answering.safety import escape_markdown, unescape_markdown

# The neutraliser's escapes put in and taken out, and a document's own "[2]" defused
# (never a citation), for what the doors render.
__all__ = [
    "defuse_markers",
    "escape_markdown",
    "inert_text",
    "plain_reply",
    "plain_text",
    "table_row_text",
    "unescape_markdown",
]

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-+*]|\d+[.)])\s+")
_QUOTE = re.compile(r"^\s*>\s?")
_FENCE = re.compile(r"^\s*(```|~~~)")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\((?:[^()]|\([^)]*\))*\)")
_REF_LINK = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]+)>")
_EMPHASIS = re.compile(r"(\*\*|__|\*|_|~~)(?=\S)(.+?)(?<=\S)\1")
_CODE = re.compile(r"`+([^`]*)`+")
_HTML_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_SPACES = re.compile(r"[ \t]+")


def plain_text(markdown: str) -> str:
    """Return ``markdown`` as plain text, one line per paragraph, row or item.

    Args:
        markdown: A chunk body (Markdown source, or plain text from other formats).

    Returns:
        The text without Markdown syntax; table rows read "Header: cell; Header: cell".
    """
    lines = markdown.splitlines()
    return "\n".join(line for line in _plain_lines(lines) if line)


def _plain_lines(lines: list[str]) -> Iterable[str]:
    header: list[str] = []
    for index, line in enumerate(lines):
        if _FENCE.match(line) or _RULE.match(line) or _TABLE_SEPARATOR.match(line):
            continue
        if _SETEXT.match(line) and index > 0 and lines[index - 1].strip():
            continue  # the underline of the heading on the previous line
        if _TABLE_ROW.match(line):
            cells = _cells(line)
            if _next_is_separator(lines, index):
                header = cells
                continue
            yield table_row_text(header, cells)
            continue
        header = []
        yield _inline(_line_text(line))


def _next_is_separator(lines: list[str], index: int) -> bool:
    return index + 1 < len(lines) and bool(_TABLE_SEPARATOR.match(lines[index + 1]))


def _line_text(line: str) -> str:
    heading = _HEADING.match(line)
    if heading:
        text = heading[1].strip()
        return text if text.endswith((":", "?", ".", "!")) else f"{text}:"
    line = _QUOTE.sub("", line)
    if _LIST_ITEM.match(line):
        return "• " + _LIST_ITEM.sub("", line, count=1)
    return line


def _cells(line: str) -> list[str]:
    inner = line.strip().strip("|")
    return [_inline(cell) for cell in re.split(r"(?<!\\)\|", inner)]


def table_row_text(header: list[str], cells: list[str]) -> str:
    """Return a table row as "Header: cell; ...", or the cells alone without a header."""
    if header and len(header) == len(cells):
        pairs = zip(header, cells, strict=True)
        return "; ".join(f"{label}: {cell}" if label else cell for label, cell in pairs if cell)
    return "; ".join(cell for cell in cells if cell)


def _inline(text: str) -> str:
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _REF_LINK.sub(r"\1", text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _CODE.sub(r"\1", text)
    for _ in range(2):  # bold inside italics
        text = _EMPHASIS.sub(r"\2", text)
    text = _HTML_TAG.sub("", text).replace("\\|", "|")
    return _SPACES.sub(" ", text).strip()


def inert_text(text: str) -> str:
    """Return ``text`` with no image, link or HTML tag a Markdown client would act on.

    An image keeps its alt text and a link its label; line breaks become spaces.
    """
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    return _SPACES.sub(" ", _HTML_TAG.sub("", text.replace("\n", " "))).strip()


def plain_reply(markdown: str) -> str:
    """Return neutralised answer Markdown as text: no escapes, entities, images, links or tags.

    Line structure (paragraphs, quotes, list items) stays; what ``unescape_markdown``
    turns back into syntax (an escaped image or link of a document) keeps only its text.
    """
    text = unescape_markdown(markdown)
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    return _HTML_TAG.sub("", text)
