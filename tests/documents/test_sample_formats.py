"""The non-Markdown sample policies come through as faithfully as the Markdown ones."""

from __future__ import annotations

import pytest

from assistant.chunking.chunker import chunk_document
from assistant.config import ChunkingSettings
from assistant.documents.loading import load_document
from assistant.tokens import get_tokenizer
from assistant.types import Chunk
from tests.support.paths import ROOT

POLICIES = ROOT / "data" / "policies"
SETTINGS = ChunkingSettings()
TOKENIZER = get_tokenizer(SETTINGS.encoding)


def chunks_of(name: str) -> tuple[Chunk, ...]:
    doc = load_document(POLICIES / name, root=POLICIES)
    return chunk_document(doc, settings=SETTINGS, tokenizer=TOKENIZER)


def path_of(chunks: tuple[Chunk, ...], phrase: str) -> tuple[str, ...]:
    (found,) = [c for c in chunks if phrase in c.body]
    return found.heading_path


def test_html_navigation_and_footer_are_not_indexed() -> None:
    chunks = chunks_of("mobile-banking-terms.html")
    assert not [c.chunk_id for c in chunks if "Home | Policies" in c.text or "©" in c.text]


@pytest.mark.parametrize(
    ("phrase", "section"),
    [
        ("Only one phone number", "Registration"),
        ("request a mini-statement", "Services Available"),
        ("Schedule of Fees and Charges", "Charges"),
        ("does not guarantee uninterrupted", "Service Availability"),
    ],
)
def test_html_sibling_sections_keep_their_own_paths(phrase: str, section: str) -> None:
    title = "Umoja Mobile Banking Terms and Conditions"
    assert path_of(chunks_of("mobile-banking-terms.html"), phrase) == (title, section)


def test_docx_chunk_paths_name_their_own_heading_once() -> None:
    chunks = chunks_of("member-dividend-policy.docx")
    (tax,) = [c for c in chunks if "Withholding tax at 5%" in c.body]
    assert tax.heading_path == ("Member Dividend Policy", "Tax")
    assert "Tax" not in tax.body.splitlines()
    assert path_of(chunks, "registered M-Pesa number") == (
        "Member Dividend Policy",
        "Payment",
        "Payment Options",
    )


def test_docx_table_keeps_its_header_row() -> None:
    (table,) = [c for c in chunks_of("member-dividend-policy.docx") if c.kind == "table"]
    assert table.body.splitlines()[:2] == [
        "| Financial year | Dividend on share capital | Interest on deposits |",
        "| --- | --- | --- |",
    ]


def test_pdf_lines_wrapped_mid_sentence_are_joined() -> None:
    chunks = chunks_of("credit-committee-procedures.pdf")
    assert any("on 28 August 2025 and effective" in c.body for c in chunks)
    assert not [c.chunk_id for c in chunks if "on 28\nAugust" in c.body]


@pytest.mark.parametrize(
    ("phrase", "path", "page"),
    [
        ("appeal to the Board", ("Appeals",), 3),
        ("loan decisions register", ("Records",), 4),
        ("approved by the full Board", ("Insider Loans", "Approval of Insider Loans"), 3),
    ],
)
def test_pdf_chunks_carry_their_outline_path_and_page(
    phrase: str, path: tuple[str, ...], page: int
) -> None:
    chunks = chunks_of("credit-committee-procedures.pdf")
    (found,) = [c for c in chunks if phrase in c.body]
    assert found.heading_path == ("Credit Committee Procedures", *path)
    assert found.page == page
