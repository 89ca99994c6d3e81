"""DOCX loader: title, headings, lists and tables in body order."""

from __future__ import annotations

import io

import docx
import pytest

from assistant.documents.base import Extracted
from assistant.documents.docx import parse_docx
from assistant.errors import DocumentError


def _handbook(*, with_title: bool = True) -> bytes:
    document = docx.Document()
    if with_title:
        document.add_paragraph("Travel Handbook", style="Title")
    document.add_paragraph("Read this first.")
    document.add_heading("Booking", level=1)
    document.add_paragraph("Book early.")
    document.add_paragraph("First", style="List Bullet")
    document.add_paragraph("Nested", style="List Bullet 2")
    document.add_paragraph("Second", style="List Number")
    table = document.add_table(rows=3, cols=2)
    for (r, c), text in {
        (0, 0): "Class",
        (0, 1): "Limit",
        (1, 0): "Economy",
        (1, 1): "Any",
    }.items():
        table.cell(r, c).text = text
    table.cell(2, 0).merge(table.cell(2, 1)).text = "Merged note"
    document.add_heading("Hotels", level=2)
    document.add_paragraph("Hotels text.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _blocks(doc: Extracted) -> list[tuple[str, str, str]]:
    return [
        (s.heading_path[-1], b.kind, doc.text[b.char_start : b.char_end])
        for s in doc.sections
        for b in s.blocks
    ]


def test_title_headings_lists_and_table_in_order() -> None:
    doc = parse_docx(_handbook(), source="t.docx", fallback_title="Fallback")
    assert doc.meta.title == "Travel Handbook"
    assert [(s.heading_path, s.level) for s in doc.sections] == [
        (("Travel Handbook",), 0),
        (("Travel Handbook", "Booking"), 1),
        (("Travel Handbook", "Booking", "Hotels"), 2),
    ]
    assert _blocks(doc) == [
        ("Travel Handbook", "paragraph", "Read this first."),
        ("Booking", "paragraph", "Book early."),
        ("Booking", "list_item", "- First"),
        ("Booking", "list_item", "  - Nested"),
        ("Booking", "list_item", "1. Second"),
        (
            "Booking",
            "table",
            "| Class | Limit |\n| --- | --- |\n| Economy | Any |\n| Merged note |  |",
        ),
        ("Hotels", "paragraph", "Hotels text."),
    ]


def test_without_title_style_first_heading_1_is_the_title() -> None:
    doc = parse_docx(_handbook(with_title=False), source="t.docx", fallback_title="Fallback")
    assert doc.meta.title == "Booking"
    assert doc.sections[-1].heading_path == ("Booking", "Hotels")


@pytest.mark.parametrize("data", [b"not a zip", b"PK\x03\x04broken", _handbook()[:1500]])
def test_corrupt_docx_raises_document_error(data: bytes) -> None:
    with pytest.raises(DocumentError, match="corrupt or unreadable DOCX") as info:
        parse_docx(data, source="bad.docx", fallback_title="x")
    assert info.value.source == "bad.docx"


def test_numbered_list_items_keep_their_numbers() -> None:
    document = docx.Document()
    document.add_heading("Loans", level=1)
    for text, style in [
        ("Apply in writing.", "List Number"),
        ("Attach payslips.", "List Number 2"),
        ("Name two guarantors.", "List Number"),
        ("Any branch.", "List Bullet"),
    ]:
        document.add_paragraph(text, style=style)
    buffer = io.BytesIO()
    document.save(buffer)
    doc = parse_docx(buffer.getvalue(), source="l.docx", fallback_title="L")
    assert [text for _, kind, text in _blocks(doc) if kind == "list_item"] == [
        "1. Apply in writing.",
        "  1. Attach payslips.",
        "2. Name two guarantors.",
        "- Any branch.",
    ]


_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _numbered_headings() -> bytes:
    """Headings numbered by a multilevel list, as Word's "1 / 1.1" heading numbering does."""
    from docx.oxml import parse_xml

    document = docx.Document()
    numbering = document.part.numbering_part.element
    numbering.insert(
        0,
        parse_xml(
            f'<w:abstractNum xmlns:w="{_W}" w:abstractNumId="90">'
            '<w:lvl w:ilvl="0"><w:start w:val="4"/><w:numFmt w:val="decimal"/>'
            '<w:lvlText w:val="%1"/></w:lvl>'
            '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/>'
            '<w:lvlText w:val="%1.%2"/></w:lvl>'
            '<w:lvl w:ilvl="2"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/>'
            '<w:lvlText w:val="(%3)"/></w:lvl></w:abstractNum>'
        ),
    )
    numbering.append(
        parse_xml(f'<w:num xmlns:w="{_W}" w:numId="90"><w:abstractNumId w:val="90"/></w:num>')
    )
    for text, level, style in [
        ("Loans", 0, "Heading 1"),
        ("Eligibility", 1, "Heading 2"),
        ("Repayment", 1, "Heading 2"),
        ("by check-off;", 2, "Normal"),
        ("in cash.", 2, "Normal"),
    ]:
        paragraph = document.add_paragraph(text, style=style)
        num_pr = parse_xml(
            f'<w:numPr xmlns:w="{_W}"><w:ilvl w:val="{level}"/><w:numId w:val="90"/></w:numPr>'
        )
        paragraph._p.get_or_add_pPr().append(num_pr)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_numbered_clauses_keep_their_numbers_in_heading_paths() -> None:
    doc = parse_docx(_numbered_headings(), source="n.docx", fallback_title="N")
    assert [s.heading_path for s in doc.sections] == [
        ("4 Loans",),
        ("4 Loans", "4.1 Eligibility"),
        ("4 Loans", "4.2 Repayment"),
    ]
    assert [text for _, _, text in _blocks(doc)] == ["    (a) by check-off;", "    (b) in cash."]
