"""Build `Document` values for chunking tests without the Markdown loader.

`make_doc` renders sections of typed blocks into Markdown-looking text and
records every block's exact span, so tests control the structure precisely.
"""

from __future__ import annotations

from collections.abc import Sequence

from assistant.types import Block, BlockKind, DocMeta, Document, Section

Part = tuple[int, str, Sequence[tuple[BlockKind, str]]]
"""A section: heading level (0 = no heading line), heading text, blocks."""


def make_doc(parts: Sequence[Part], *, title: str = "Doc", source: str = "doc.md") -> Document:
    """Render ``parts`` and return the document with exact section and block spans."""
    text = ""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    for n, (level, heading, blocks) in enumerate(parts):
        start = len(text)
        if level:
            text += "#" * level + " " + heading + "\n\n"
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, heading))
        path = tuple(h for _, h in stack) or (title,)
        spans = []
        for kind, body in blocks:
            spans.append(Block(kind=kind, char_start=len(text), char_end=len(text) + len(body)))
            text += body + "\n\n"
        sections.append(
            Section(
                heading_path=path,
                level=level,
                anchor=f"s{n}",
                char_start=start,
                char_end=len(text),
                blocks=tuple(spans),
            )
        )
    return markdown_document(source, text, DocMeta(title=title), sections)


def doc_from_markdown(text: str, *, source: str = "doc.md") -> Document:
    """Parse Markdown with the real loader and wrap it into a `Document`."""
    from assistant.documents.markdown import parse_markdown

    meta, sections = parse_markdown(text, fallback_title="Doc", source=source)
    return markdown_document(source, text, meta, sections)


def markdown_document(
    source: str, text: str, meta: DocMeta, sections: Sequence[Section]
) -> Document:
    """Wrap parsed or hand-built sections into a Markdown `Document` (root and hash faked)."""
    return Document(
        source=source,
        root="/tmp",
        kind="markdown",
        text=text,
        sha256="0" * 64,
        meta=meta,
        sections=tuple(sections),
    )
