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
        ("Booking", "list_item", "- Second"),
        (
            "Booking",
            "table",
            "| Class | Limit |\n| --- | --- |\n| Economy | Any |\n| Merged note |",
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
