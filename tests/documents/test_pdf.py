"""PDF loader: pages, outline sections, page numbers and bad files."""

from __future__ import annotations

import pytest
from fpdf import FPDF

from assistant.documents.base import Extracted
from assistant.documents.pdf import parse_pdf
from assistant.errors import DocumentError


def _para(pdf: FPDF, text: str) -> None:
    pdf.multi_cell(0, 8, text, new_x="LMARGIN", new_y="NEXT")


def _outlined_pdf() -> bytes:
    pdf = FPDF()
    pdf.set_title("Expenses Handbook")
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    _para(pdf, "Cover note.")
    pdf.start_section("Introduction")
    _para(pdf, "Introduction")
    _para(pdf, "Claims are paid monthly.")
    pdf.start_section("Travel")
    _para(pdf, "Travel")
    _para(pdf, "Economy class only.")
    pdf.add_page()
    pdf.start_section("Hotels", level=1)
    _para(pdf, "Hotels")
    _para(pdf, "Up to 150 a night.")
    pdf.add_page()
    _para(pdf, "Receipts are required.")
    return bytes(pdf.output())


def _plain_pdf(pages: list[str]) -> bytes:
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for text in pages:
        pdf.add_page()
        if text:
            _para(pdf, text)
    return bytes(pdf.output())


def _blocks(doc: Extracted) -> list[tuple[tuple[str, ...], int, str]]:
    return [
        (s.heading_path, b.page, doc.text[b.char_start : b.char_end])
        for s in doc.sections
        for b in s.blocks
    ]


def test_outline_entries_become_sections_with_pages() -> None:
    doc = parse_pdf(_outlined_pdf(), source="e.pdf", fallback_title="Fallback")
    assert doc.meta.title == "Expenses Handbook"
    assert len(doc.page_starts) == 3
    assert [(s.heading_path, s.page) for s in doc.sections] == [
        (("Expenses Handbook",), 1),
        (("Expenses Handbook", "Introduction"), 1),
        (("Expenses Handbook", "Travel"), 1),
        (("Expenses Handbook", "Travel", "Hotels"), 2),
    ]
    title = "Expenses Handbook"
    assert _blocks(doc) == [
        ((title,), 1, "Cover note."),
        ((title, "Introduction"), 1, "Claims are paid monthly."),
        ((title, "Travel"), 1, "Economy class only."),
        ((title, "Travel", "Hotels"), 2, "Up to 150 a night."),
        ((title, "Travel", "Hotels"), 3, "Receipts are required."),
    ]
    assert doc.text[doc.sections[3].char_start :].startswith("Hotels\n")


def test_page_starts_match_block_pages() -> None:
    doc = parse_pdf(_outlined_pdf(), source="e.pdf", fallback_title="Fallback")
    for section in doc.sections:
        for block in section.blocks:
            page_start = doc.page_starts[block.page - 1]
            next_start = (
                doc.page_starts[block.page] if block.page < len(doc.page_starts) else len(doc.text)
            )
            assert page_start <= block.char_start < block.char_end <= next_start


def test_without_outline_each_page_is_a_section() -> None:
    doc = parse_pdf(
        _plain_pdf(["First page.", "", "Third page."]), source="p.pdf", fallback_title="Staff Guide"
    )
    assert doc.meta.title == "Staff Guide"
    assert [(s.heading_path, s.page, len(s.blocks)) for s in doc.sections] == [
        (("Staff Guide", "Page 1"), 1, 1),
        (("Staff Guide", "Page 2"), 2, 0),
        (("Staff Guide", "Page 3"), 3, 1),
    ]
    assert _blocks(doc)[-1] == (("Staff Guide", "Page 3"), 3, "Third page.")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"%PDF-1.4\nthis is not really a pdf", "corrupt or unreadable PDF"),
        (b"plain text, not a pdf", "corrupt or unreadable PDF"),
        (_plain_pdf([""]), "no extractable text"),
    ],
)
def test_bad_pdfs_raise_document_error(data: bytes, reason: str) -> None:
    with pytest.raises(DocumentError, match=reason) as info:
        parse_pdf(data, source="bad.pdf", fallback_title="x")
    assert str(info.value).startswith("bad.pdf: ")


def test_truncated_pdf_raises_document_error() -> None:
    data = _outlined_pdf()
    with pytest.raises(DocumentError, match="corrupt or unreadable PDF"):
        parse_pdf(data[: len(data) // 2], source="cut.pdf", fallback_title="x")


WRAPPED = (
    "Umoja Savings and Credit Cooperative Society Ltd. Approved by the Board of Directors on 28 "
    "August 2025 and effective from 1 September 2025, these rules replace every earlier version "
    "of the procedures and apply to each application received after that date."
)


class _NumberedPages(FPDF):
    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("helvetica", size=9)
        self.cell(0, 10, f"Page {self.page_no()} of 2", align="C")


def _wrapped_pdf() -> bytes:
    pdf = _NumberedPages()
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.start_section("Rules")
    _para(pdf, "Rules")
    _para(pdf, WRAPPED)
    _para(pdf, "A short closing sentence.")
    _para(pdf, "The Committee may:")
    for item in ("- approve the loan;", "- decline it, giving reasons."):
        _para(pdf, item)
    pdf.add_page()
    pdf.start_section("Appeals")
    _para(pdf, "Appeals")
    _para(pdf, "Appeals go to the Board.")
    return bytes(pdf.output())


def test_hard_wrapped_lines_join_into_paragraphs() -> None:
    doc = parse_pdf(_wrapped_pdf(), source="w.pdf", fallback_title="W")
    blocks = _blocks(doc)
    assert blocks[0] == (("W", "Rules"), 1, WRAPPED)
    assert blocks[1] == (("W", "Rules"), 1, "A short closing sentence.")
    assert blocks[2] == (
        ("W", "Rules"),
        1,
        "The Committee may:\n- approve the loan;\n- decline it, giving reasons.",
    )
    assert blocks[3] == (("W", "Appeals"), 2, "Appeals go to the Board.")


def test_page_number_lines_are_dropped_and_pages_kept() -> None:
    doc = parse_pdf(_wrapped_pdf(), source="w.pdf", fallback_title="W")
    assert "Page 1 of 2" not in doc.text
    assert "Page 2 of 2" not in doc.text
    assert [s.page for s in doc.sections] == [1, 2]
    assert doc.text.index("Appeals") >= doc.page_starts[1]
