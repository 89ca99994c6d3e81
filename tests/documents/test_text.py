"""Plain-text loader: title, headings and paragraph blocks."""

from __future__ import annotations

from assistant.documents.text import parse_text


def _blocks(text: str) -> list[tuple[tuple[str, ...], str, str]]:
    doc = parse_text(text, fallback_title="Fallback")
    return [
        (s.heading_path, b.kind, text[b.char_start : b.char_end])
        for s in doc.sections
        for b in s.blocks
    ]


def test_paragraphs_split_on_blank_lines_with_first_line_title() -> None:
    text = "Staff handbook\n\nFirst para\nstill first.\n\n\nSecond.\n"
    doc = parse_text(text, fallback_title="Fallback")
    assert doc.meta.title == "Staff handbook"
    assert _blocks(text) == [
        (("Staff handbook",), "paragraph", "Staff handbook"),
        (("Staff handbook",), "paragraph", "First para\nstill first."),
        (("Staff handbook",), "paragraph", "Second."),
    ]


def test_underlined_and_caps_headings_make_sections() -> None:
    text = (
        "Leave Rules\n===========\n\nIntro.\n\nSICK LEAVE\n\nTen days.\n\nNotes\n-----\nBe kind.\n"
    )
    doc = parse_text(text, fallback_title="Fallback")
    assert [s.heading_path for s in doc.sections] == [
        ("Leave Rules",),
        ("Leave Rules", "SICK LEAVE"),
        ("Leave Rules", "Notes"),
    ]
    assert _blocks(text)[-1] == (("Leave Rules", "Notes"), "paragraph", "Be kind.")


def test_long_first_line_uses_fallback_title() -> None:
    text = "x" * 150 + "\n"
    assert parse_text(text, fallback_title="Fallback").meta.title == "Fallback"
