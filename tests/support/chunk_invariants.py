"""Invariants every chunking of every document must satisfy, shared by property tests.

`tests/chunking/test_invariants.py` checks them on generated documents;
`tests/documents/test_hostile_files.py` on whatever the real loaders make of fuzzed
files. Each function raises `AssertionError` naming what broke.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import strategies as st

from assistant.config import ChunkingSettings
from assistant.tokens import Tokenizer
from assistant.types import (
    Chunk,
    Document,
    Section,
    chunk_id,
    compose_chunk_text,
    shown_heading_path,
)


@st.composite
def chunk_settings(
    draw: st.DrawFn,
    *,
    min_budget: int = 16,
    max_budget: int = 300,
    max_overlap: float = 0.49,
    min_share: int = 1,
    fill: bool | None = None,
) -> ChunkingSettings:
    """Draw valid chunking settings with a token budget of ``min_budget`` to ``max_budget``.

    ``min_tokens`` stays under ``max_tokens / min_share``; ``fill`` is drawn when None.
    """
    max_tokens = draw(st.integers(min_budget, max_budget))
    return ChunkingSettings(
        max_tokens=max_tokens,
        overlap=draw(st.floats(0, max_overlap)),
        min_tokens=draw(st.integers(0, max_tokens // min_share - (min_share == 1))),
        fill=draw(st.booleans()) if fill is None else fill,
    )


def check_chunk_fields(
    doc: Document, chunks: Sequence[Chunk], config: ChunkingSettings, tokenizer: Tokenizer
) -> None:
    """Each chunk's ID, span, text, token count, lines and section range are consistent."""
    for ordinal, chunk in enumerate(chunks):
        assert chunk.ordinal == ordinal
        assert chunk.chunk_id == chunk_id(doc.source, ordinal)
        assert chunk.body == doc.text[chunk.char_start : chunk.char_end]
        assert chunk.body.strip() == chunk.body != ""
        assert chunk.text == compose_chunk_text(chunk.heading_path, chunk.prefix, chunk.body)
        assert chunk.token_count == tokenizer.count(chunk.text) <= config.max_tokens
        assert chunk.start_line == doc.text.count("\n", 0, chunk.char_start)
        assert chunk.end_line == doc.text.count("\n", 0, chunk.char_end - 1) + 1
        assert chunk.section_start <= chunk.char_start < chunk.char_end <= chunk.section_end


def check_coverage(doc: Document, chunks: Sequence[Chunk]) -> None:
    """Every non-blank character of every block lies in some chunk (nothing lost)."""
    covered = bytearray(len(doc.text))
    for chunk in chunks:
        covered[chunk.char_start : chunk.char_end] = b"\x01" * (chunk.char_end - chunk.char_start)
    for section in doc.sections:
        for block in section.blocks:
            lost = [
                i
                for i in range(block.char_start, block.char_end)
                if not covered[i] and not doc.text[i].isspace()
            ]
            assert not lost, doc.text[lost[0] : lost[0] + 40]


def rigid_spans(doc: Document) -> list[tuple[int, int]]:
    """Return the spans of table and code blocks (never part of an overlap)."""
    return [
        (b.char_start, b.char_end)
        for s in doc.sections
        for b in s.blocks
        if b.kind in ("table", "code")
    ]


def check_overlap(
    doc: Document, chunks: Sequence[Chunk], config: ChunkingSettings, tokenizer: Tokenizer
) -> None:
    """Neighbours advance and overlap within one section by at most the overlap, never in tables."""
    rigid = rigid_spans(doc)
    for before, after in itertools.pairwise(chunks):
        assert after.char_start > before.char_start
        if after.char_start >= before.char_end:
            continue
        assert after.section_start == before.section_start  # only within one section
        shared = doc.text[after.char_start : before.char_end]
        assert tokenizer.count(shared) <= config.overlap_tokens
        for start, end in rigid:
            assert not (start < before.char_end and after.char_start < end), shared


def check_all(
    doc: Document, chunks: Sequence[Chunk], config: ChunkingSettings, tokenizer: Tokenizer
) -> None:
    """Run every check above."""
    check_chunk_fields(doc, chunks, config, tokenizer)
    check_coverage(doc, chunks)
    check_overlap(doc, chunks, config, tokenizer)


def _extent(doc: Document, index: int) -> tuple[int, int]:
    """The span of a section together with its subsections."""
    section = doc.sections[index]
    later = doc.sections[index + 1 :]
    if section.level == 0:
        end = later[0].char_start if later else len(doc.text)
    else:
        end = next((s.char_start for s in later if s.level <= section.level), len(doc.text))
    return section.char_start, end


def innermost_section(doc: Document, chunk: Chunk) -> Section:
    """Return the deepest section that holds all of ``chunk``'s text (subsections included)."""
    holding = [
        (len(section.heading_path), i, section)
        for i, section in enumerate(doc.sections)
        if _extent(doc, i)[0] <= chunk.char_start and chunk.char_end <= _extent(doc, i)[1]
    ]
    assert holding, f"{chunk.chunk_id} lies in no section"
    return max(holding, key=lambda entry: entry[:2])[2]


def check_heading_paths(doc: Document, chunks: Sequence[Chunk]) -> None:
    """Each path ends with its innermost section's heading; no heading line in a body unnamed.

    The path may lose leading ancestors (a path over half the budget), and a
    lone heading over the budget is cut and ends with "…".
    """
    for chunk in chunks:
        expected = shown_heading_path(innermost_section(doc, chunk).heading_path)
        last = chunk.heading_path[-1]
        assert last == expected[-1] or (
            last.endswith("…") and expected[-1].startswith(last[:-1])
        ), f"{chunk.chunk_id}: {chunk.breadcrumb!r} is not in {expected!r}"
        assert expected[len(expected) - len(chunk.heading_path) : -1] == chunk.heading_path[:-1]
        inside = [
            s.heading_path[-1]
            for s in doc.sections
            if s.level > 0 and chunk.char_start <= s.char_start < chunk.char_end
        ]
        stray = [heading for heading in inside if heading not in chunk.heading_path]
        assert not stray, f"{chunk.chunk_id} ({chunk.breadcrumb}) has heading lines {stray}"
