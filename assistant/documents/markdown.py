"""Markdown → `DocMeta` and `Section` values, from markdown-it-py tokens.

This is the only module that imports ``markdown_it``. Structure comes from the
token stream and each block token's ``map`` (its source line range); line
numbers are turned into char offsets with a line-start index, so every block's
span is exactly its source lines.

`parse_blocks` and `plain_text` serve answering: a chunk's text as blocks of
plain words (`TextBlock`), so answer units never come from regexes over lines.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from markdown_it import MarkdownIt
from markdown_it.token import Token

from assistant.documents.assemble import SectionAssembler
from assistant.documents.base import Extracted
from assistant.documents.dates import resolve_dates
from assistant.documents.decode import decode_text
from assistant.documents.frontmatter import parse_front_matter, split_front_matter
from assistant.types import BlockKind, DocMeta, Section, TextBlock, TextBlockKind, TextLine

__all__ = [
    "inline_constructs",
    "load",
    "parse_blocks",
    "parse_markdown",
    "plain_text",
    "render_html",
]

_BLOCK_KINDS: dict[str, BlockKind] = {
    "paragraph_open": "paragraph",
    "table_open": "table",
    "fence": "code",
    "code_block": "code",
    "blockquote_open": "other",
    "html_block": "other",
}
_SKIPPED = frozenset({"hr"})
_EMPHASIS_MARKS = frozenset({"strong_open", "strong_close", "em_open", "em_close"})
_LIST_MARKS = frozenset(
    {"bullet_list_open", "bullet_list_close", "ordered_list_open", "ordered_list_close"}
)
_TITLE_AFTER_BLOCKS = 1


@dataclass(frozen=True, slots=True)
class _Heading:
    text: str
    level: int
    start: int


@dataclass(frozen=True, slots=True)
class _Block:
    kind: BlockKind
    start: int
    end: int
    question: bool = False


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


@cache
def _renderer() -> MarkdownIt:
    # html=False: raw HTML in a document is shown as text, never interpreted.
    # No images: a page must not fetch anything a document names (CSP blocks
    # it too); ``![alt](url)`` is shown as a link the reader may follow.
    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    return md.disable("image")


def render_html(text: str) -> str:
    """Return Markdown ``text`` as HTML with raw HTML escaped and images disabled."""
    return str(_renderer().render(text))


class _Lines:
    """Char offsets of the lines of a text (0-based line numbers)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0, *itertools.accumulate(len(line) + 1 for line in text.split("\n"))]
        self.starts.pop()  # the offset past the last line is not a line start

    def end(self, line: int) -> int:
        """Return the offset just past the text of ``line`` (before its newline)."""
        if line + 1 < len(self.starts):
            return self.starts[line + 1] - 1
        return len(self.text)

    def is_blank(self, line: int) -> bool:
        return not self.text[self.starts[line] : self.end(line)].strip()

    def span(self, first: int, stop: int) -> tuple[int, int]:
        """Return the char span of lines ``first:stop`` without trailing blank lines."""
        stop = min(stop, len(self.starts))
        while stop > first + 1 and self.is_blank(stop - 1):
            stop -= 1
        return self.starts[first], self.end(stop - 1)


def parse_markdown(
    text: str, *, fallback_title: str, source: str = "<markdown>"
) -> tuple[DocMeta, tuple[Section, ...]]:
    """Parse Markdown (with optional YAML front matter) into metadata and sections.

    Args:
        text: The decoded file text with newline line ends; offsets refer to it.
        fallback_title: Title used when neither front matter nor an H1 at the top
            gives one.
        source: The document's name, for errors.

    Returns:
        The metadata (title always set) and the sections in document order.

    Raises:
        DocumentError: The front matter is invalid.
    """
    front = split_front_matter(text)
    meta = DocMeta(title="")
    body_start, body_line = 0, 0
    if front is not None:
        meta = parse_front_matter(front, source=source)
        body_start, body_line = front.body_start, front.body_line
    lines = _Lines(text)
    tokens = _parser().parse(text[body_start:])
    events = _group_faq(_events(tokens, lines, line_offset=body_line))
    title = meta.title or _title_heading(events) or fallback_title
    assembler = SectionAssembler(title=title, start=body_start)
    for event in events:
        if isinstance(event, _Heading):
            assembler.heading(event.text, level=event.level, start=event.start)
        elif text[event.start : event.end].strip():
            # A code block of only Unicode spaces (U+2028...) has no text to index.
            assembler.block(event.kind, event.start, event.end)
    meta = resolve_dates(dataclasses.replace(meta, title=title), text[body_start:])
    return meta, assembler.finish(end=len(text))


def _title_heading(events: Sequence[_Heading | _Block]) -> str:
    """Return the first H1 if it opens the document, else "".

    Only a heading near the top names the document: a lone ``=`` line further
    down makes the paragraph above it a setext H1, and the title is repeated in
    the heading path of every chunk. The H1 may follow at most
    `_TITLE_AFTER_BLOCKS` blocks (a notice or a badge line); other headings
    before it do not count.
    """
    blocks = 0
    for event in events:
        if isinstance(event, _Heading):
            if event.level == 1:
                return event.text
        else:
            blocks += 1
            if blocks > _TITLE_AFTER_BLOCKS:
                return ""
    return ""


def _events(tokens: Sequence[Token], lines: _Lines, *, line_offset: int) -> list[_Heading | _Block]:
    events: list[_Heading | _Block] = []
    for i, token in enumerate(tokens):
        if token.level != 0 or token.nesting == -1 or token.map is None:
            continue
        first, stop = token.map[0] + line_offset, token.map[1] + line_offset
        if token.type == "heading_open":
            text = _plain(tokens[i + 1])
            if text:
                events.append(_Heading(text, int(token.tag[1:]), lines.starts[first]))
        elif token.type in ("bullet_list_open", "ordered_list_open"):
            events.extend(_list_items(tokens, i, lines, line_offset=line_offset))
        elif token.type not in _SKIPPED:
            kind = _BLOCK_KINDS.get(token.type, "other")
            question = token.type == "paragraph_open" and _is_question(tokens[i + 1])
            events.append(_Block(kind, *lines.span(first, stop), question=question))
    return events


def _list_items(
    tokens: Sequence[Token], open_index: int, lines: _Lines, *, line_offset: int
) -> list[_Block]:
    items: list[_Block] = []
    index = open_index + 1
    while index < len(tokens) and tokens[index].level > 0:  # up to the matching *_list_close
        token = tokens[index]
        if token.type == "list_item_open" and token.level == 1 and token.map is not None:
            first, stop = token.map[0] + line_offset, token.map[1] + line_offset
            items.append(_Block("list_item", *lines.span(first, stop)))
        index += 1
    return items


def _plain(inline: Token) -> str:
    """Return the plain text of an inline token (emphasis, links and code unwrapped)."""
    parts: list[str] = []
    for child in inline.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(_plain(child))
    return " ".join("".join(parts).split())


def _is_question(inline: Token) -> bool:
    """Tell whether a paragraph opens an FAQ entry: ``**...?**`` or ``Q:`` first."""
    if inline.content.lstrip().startswith("Q:"):
        return True
    children = [c for c in inline.children or [] if c.type != "text" or c.content.strip()]
    if not children or children[0].type != "strong_open":
        return False
    strong: list[str] = []
    for child in children[1:]:
        if child.type == "strong_close":
            break
        strong.append(child.content)
    bold = "".join(strong).strip()
    return bold.endswith("?") or bold.startswith("Q:")


def _group_faq(events: list[_Heading | _Block]) -> list[_Heading | _Block]:
    """Merge each question paragraph and its answer blocks into one ``faq`` block."""
    grouped: list[_Heading | _Block] = []
    for event in events:
        last = grouped[-1] if grouped else None
        if isinstance(event, _Block) and event.question:
            grouped.append(_Block("faq", event.start, event.end))
        elif isinstance(event, _Block) and isinstance(last, _Block) and last.kind == "faq":
            grouped[-1] = _Block("faq", last.start, event.end)
        else:
            grouped.append(event)
    return grouped


def load(data: bytes, *, source: str, fallback: str) -> Extracted:
    """Load one Markdown file's bytes (the `assistant.documents.loading` entry point)."""
    text = decode_text(data, source=source)
    meta, sections = parse_markdown(text, fallback_title=fallback, source=source)
    return Extracted(text=text, meta=meta, sections=sections)


def plain_text(markdown: str) -> str:
    """Return inline Markdown as plain words (links by their text, emphasis and tags dropped)."""
    tokens = _parser().parseInline(markdown)
    return "".join(line.text + brk for line, brk in _inline_lines(tokens[0] if tokens else None))


def inline_constructs(text: str) -> Counter[str]:
    """Count the inline constructs of Markdown ``text`` by token type (links, code, emphasis).

    Plain text and line breaks are not counted: two texts with equal counts read
    with the same links, images and code spans, whatever words were added.
    """
    found: Counter[str] = Counter()
    for token in _parser().parse(text):
        found.update(
            child.type
            for child in token.children or ()
            if child.type not in {"text", "softbreak", "hardbreak"}
        )
    return found


def parse_blocks(text: str) -> tuple[TextBlock, ...]:
    """Return the blocks of a Markdown text as plain words, in order (see `TextBlock`)."""
    source = text.split("\n")
    tokens = _parser().parse(text)
    blocks: list[TextBlock] = []
    depth = quotes = 0
    for i, token in enumerate(tokens):
        kind = token.type
        if kind in _LIST_MARKS:
            depth += token.nesting
        elif kind in ("blockquote_open", "blockquote_close"):
            quotes += token.nesting
        elif kind == "heading_open":
            block = _inline_block("heading", tokens[i + 1], source, depth)
            blocks.append(dataclasses.replace(block, level=int(token.tag[1:])))
        elif kind == "paragraph_open":
            opens_item = i > 0 and tokens[i - 1].type == "list_item_open"
            block_kind: TextBlockKind = "item" if opens_item else "quote" if quotes else "paragraph"
            blocks.append(_inline_block(block_kind, tokens[i + 1], source, depth))
        elif kind == "table_open":
            blocks.append(_table_block(tokens, i, depth))
        elif kind in ("fence", "code_block", "html_block"):
            blocks.append(_raw_block(token, depth))
    return tuple(blocks)


def _raw_block(token: Token, depth: int) -> TextBlock:
    """A code or HTML block: its content as is, one `TextLine` per line."""
    lines = tuple(TextLine(line) for line in token.content.rstrip("\n").split("\n"))
    kind: TextBlockKind = "html" if token.type == "html_block" else "code"
    return TextBlock(kind, token.content, depth=depth, lines=lines, span=_span(token))


def _span(token: Token) -> tuple[int, int]:
    return (token.map[0], token.map[1]) if token.map else (0, 0)


def _inline_block(kind: TextBlockKind, inline: Token, source: list[str], depth: int) -> TextBlock:
    start, end = _span(inline)
    pieces = _inline_lines(inline)
    lines = []
    for number, (line, _) in enumerate(pieces, start=start):
        raw = source[number] if number < min(end, len(source)) else ""
        lines.append(dataclasses.replace(line, indent=len(raw) - len(raw.lstrip(" "))))
    text = "".join(line.text + brk for line, brk in pieces).strip()
    return TextBlock(kind, text, depth=depth, lines=tuple(lines), span=(start, end))


def _inline_lines(inline: Token | None) -> list[tuple[TextLine, str]]:
    """Split an inline token's plain words into its lines, each with the break after it.

    A soft break is followed by a space, a hard break by a newline, the last line by "".
    """
    children = inline.children or [] if inline is not None else []
    literal = _intraword_marks(children)
    out: list[tuple[TextLine, str]] = []
    line: list[Token] = []
    for index, child in enumerate(children):
        if child.type in ("softbreak", "hardbreak"):
            out.append((_line(line), " " if child.type == "softbreak" else "\n"))
            line = []
        elif index in literal:
            line.append(Token("text", "", 0, content=child.markup))
        else:
            line.append(child)
    out.append((_line(line), ""))
    return out


def _line(children: Sequence[Token]) -> TextLine:
    text = "".join(_child_text(c) for c in children)
    strong, at = _first_bold(children)
    return TextLine(text, strong, at)


def _first_bold(children: Sequence[Token]) -> tuple[str, int]:
    """Return the text of a line's first bold (or bold italic) span and its offset, or ("", -1)."""
    nesting, bold, start = 0, False, 0
    before: list[str] = []
    pieces: list[str] = []
    for child in children:
        if child.type in _EMPHASIS_MARKS:
            if nesting == 0:
                bold, start, pieces = False, len("".join(before)), []
            nesting += child.nesting
            bold = bold or child.type == "strong_open"
            if nesting == 0 and bold:
                return "".join(pieces).strip(), start
        elif nesting:
            pieces.append(_child_text(child))
        if nesting == 0 or child.type not in _EMPHASIS_MARKS:
            before.append(_child_text(child))
    return "", -1


def _intraword_marks(children: Sequence[Token]) -> set[int]:
    """Return the indices of emphasis marks touching a digit outside, which are literal text.

    CommonMark reads ``Dial *483*20#`` as an emphasised 483; in a policy it is a
    USSD code, and dropping the stars would misquote it.
    """
    literal: set[int] = set()
    stack: list[int] = []
    for index, child in enumerate(children):
        if child.type in ("em_open", "strong_open"):
            stack.append(index)
        elif child.type in ("em_close", "strong_close") and stack:
            start = stack.pop()
            before = children[start - 1].content if start > 0 else ""
            after = children[index + 1].content if index + 1 < len(children) else ""
            if before[-1:].isdigit() or after[:1].isdigit():
                literal |= {start, index}
    return literal


def _child_text(child: Token) -> str:
    if child.type in ("text", "text_special", "code_inline"):
        return child.content
    if child.type == "image":  # its alt text, itself inline Markdown
        return "".join(_child_text(c) for c in child.children or [])
    return ""  # link and emphasis marks, inline HTML


def _table_block(tokens: Sequence[Token], open_index: int, depth: int) -> TextBlock:
    header: list[str] = []
    rows: list[tuple[str, ...]] = []
    cells: list[str] = []
    in_head = False
    index = open_index + 1
    while index < len(tokens) and tokens[index].type != "table_close":
        token = tokens[index]
        if token.type in ("thead_open", "thead_close"):
            in_head = token.nesting == 1
        elif token.type == "inline":
            cells.append(" ".join("".join(t.text + b for t, b in _inline_lines(token)).split()))
        elif token.type == "tr_close":
            if in_head:
                header = cells
            else:
                rows.append(tuple(cells))
            cells = []
        index += 1
    return TextBlock(
        "table",
        "\n".join(" | ".join(row) for row in [tuple(header), *rows]),
        depth=depth,
        header=tuple(header),
        rows=tuple(rows),
        span=_span(tokens[open_index]),
    )
