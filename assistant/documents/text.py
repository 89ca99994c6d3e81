"""Plain text → sections of paragraphs.

Paragraphs are runs of non-blank lines. A line underlined with ``===`` (level 1)
or ``---`` (level 2), or a short ALL-CAPS line standing alone (level 2), is a
heading. The title is the first non-blank line when it is short, else the
fallback title; dates come from an "Effective: ..." line near the top.
"""

from __future__ import annotations

from assistant.documents.assemble import SectionAssembler
from assistant.documents.base import Extracted
from assistant.documents.dates import resolve_dates
from assistant.documents.decode import decode_text
from assistant.types import DocMeta

__all__ = ["MAX_TITLE_CHARS", "load", "parse_text"]

MAX_TITLE_CHARS = 100
_MAX_CAPS_HEADING = 80


def parse_text(text: str, *, fallback_title: str) -> Extracted:
    """Split plain text into sections and paragraph blocks.

    Args:
        text: The decoded text with newline line ends; offsets refer to it.
        fallback_title: Title used when the first line is not a usable title.

    Returns:
        The text, its metadata (title only) and its sections.
    """
    first_line = next((line.strip() for line in text.split("\n") if line.strip()), "")
    title = first_line if 0 < len(first_line) <= MAX_TITLE_CHARS else fallback_title
    assembler = SectionAssembler(title=title)
    for start, lines in _paragraphs(text):
        _add_paragraph(assembler, start, lines)
    meta = resolve_dates(DocMeta(title=title), text)
    return Extracted(text=text, meta=meta, sections=assembler.finish(end=len(text)))


def _paragraphs(text: str) -> list[tuple[int, list[str]]]:
    """Return (start offset, lines) for each run of non-blank lines."""
    runs: list[tuple[int, list[str]]] = []
    pos = 0
    current: list[str] = []
    start = 0
    for line in text.split("\n"):
        if line.strip():
            if not current:
                start = pos
            current.append(line)
        elif current:
            runs.append((start, current))
            current = []
        pos += len(line) + 1
    if current:
        runs.append((start, current))
    return runs


def _underline_level(line: str) -> int:
    stripped = line.strip()
    if len(stripped) >= 3 and set(stripped) == {"="}:
        return 1
    if len(stripped) >= 3 and set(stripped) == {"-"}:
        return 2
    return 0


def _is_caps_heading(lines: list[str]) -> bool:
    line = lines[0].strip()
    return (
        len(lines) == 1
        and len(line) <= _MAX_CAPS_HEADING
        and any(ch.isalpha() for ch in line)
        and line == line.upper()
        and not line.endswith((".", ",", ";"))
    )


def _add_paragraph(assembler: SectionAssembler, start: int, lines: list[str]) -> None:
    level = _underline_level(lines[1]) if len(lines) >= 2 else 0
    if level:
        assembler.heading(lines[0].strip(), level=level, start=start)
        rest = lines[2:]
        if rest:
            body_start = start + len(lines[0]) + len(lines[1]) + 2
            assembler.block("paragraph", body_start, body_start + len("\n".join(rest)))
        return
    if _is_caps_heading(lines):
        assembler.heading(lines[0].strip(), level=2, start=start)
        return
    assembler.block("paragraph", start, start + len("\n".join(lines)))


def load(data: bytes, *, source: str, fallback: str) -> Extracted:
    """Load one plain-text file's bytes (the `assistant.documents.loading` entry point)."""
    return parse_text(decode_text(data, source=source), fallback_title=fallback)
