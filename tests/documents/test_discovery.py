"""Discovery and `load_document`: dispatch, identity, and clear errors for bad input."""

from __future__ import annotations

import hashlib
import logging
import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from assistant.documents.loading import SUPPORTED_SUFFIXES, discover, load_document
from assistant.errors import ConfigError, DocumentError, EmptyDocumentError
from assistant.types import Document
from tests.support.paths import FIXTURES

FIXTURES = FIXTURES / "docs"


def _write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def _error(path: Path, root: Path) -> DocumentError:
    with pytest.raises(DocumentError) as info:
        load_document(path, root=root)
    assert path.name in str(info.value)
    return info.value


def _check_invariants(doc: Document) -> None:
    previous_end = 0
    for section in doc.sections:
        assert section.char_start >= previous_end or not section.blocks
        for block in section.blocks:
            assert doc.text[block.char_start : block.char_end].strip()
            assert section.char_start <= block.char_start < block.char_end <= section.char_end
            assert block.char_start >= previous_end
            assert (block.page > 0) == (doc.kind == "pdf")
            previous_end = block.char_end
    assert doc.sections[-1].char_end <= len(doc.text)


def _block_texts(doc: Document) -> list[str]:
    return [doc.text[b.char_start : b.char_end] for s in doc.sections for b in s.blocks]


def test_markdown_fixture_loads_with_identity_and_meta() -> None:
    path = FIXTURES / "loan-policy.md"
    doc = load_document(path, root=FIXTURES)
    _check_invariants(doc)
    assert doc.source == "loan-policy.md"
    assert doc.kind == "markdown"
    assert doc.root == str(FIXTURES.resolve())
    assert doc.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert doc.text == path.read_text(encoding="utf-8")
    assert doc.meta.title == "Loan Policy"
    assert doc.meta.effective_date == "2024-01-15"
    assert doc.meta.tags == ("loans", "finance")
    assert [s.heading_path for s in doc.sections] == [
        ("Loan Policy",),
        ("Loan Policy", "Emergency Loans"),
        ("Loan Policy", "Emergency Loans", "Interest"),
        ("Loan Policy", "FAQ"),
    ]
    assert _block_texts(doc)[-1] == "**Can I repay early?**\n\nYes, at any time without a fee."


def test_source_is_relative_posix_path_and_can_be_overridden(tmp_path: Path) -> None:
    path = _write(tmp_path / "hr" / "leave.md", "# Leave\n\nTen days.\n")
    assert load_document(path, root=tmp_path).source == "hr/leave.md"
    assert load_document(path, root=tmp_path, source="x/y.md").source == "x/y.md"


def test_bom_and_crlf_are_normalised(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.md", b"\xef\xbb\xbf# Title\r\n\r\nLine one\r\nline two\r\n")
    doc = load_document(path, root=tmp_path)
    assert doc.text == "# Title\n\nLine one\nline two\n"
    assert _block_texts(doc) == ["Line one\nline two"]
    assert doc.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_utf16_with_bom_is_decoded(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.txt", "Notes\n\nCafé hours.\n".encode("utf-16"))
    assert _block_texts(load_document(path, root=tmp_path))[-1] == "Café hours."


def test_latin1_text_is_decoded_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    text = "Café policy\n\nEmployees may claim the per-diem rate for résumé printing. Naïve.\n"
    path = _write(tmp_path / "cafe.txt", text.encode("latin-1"))
    with caplog.at_level(logging.WARNING, logger="assistant.documents.decode"):
        doc = load_document(path, root=tmp_path)
    assert doc.text == text
    assert "cafe.txt is not UTF-8" in caplog.text


def test_plain_text_dispatch(tmp_path: Path) -> None:
    path = _write(tmp_path / "notes.txt", "Office hours\n\nNine to five.\n")
    doc = load_document(path, root=tmp_path)
    assert doc.kind == "text"
    assert doc.meta.title == "Office hours"


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("a.xyz", b"hello", "unsupported file type '.xyz' (supported: .docx, .htm,"),
        ("README", b"hello", "unsupported file type '(no extension)'"),
        ("empty.md", b"", "file is empty"),
        ("blank.txt", b"  \n\n\t\n", "file is empty"),
        ("bin.md", b"# T\n\x00\x01\x02", "binary content (NUL bytes)"),
        ("only-front.md", b"---\ntitle: X\n---\n", "no text found"),
        ("bad-yaml.md", b"---\ntitle: [x\n---\n# T\n\nBody\n", "invalid YAML front matter"),
        ("long.md", b"# T\n\n" + b"x" * 1_000_001 + b"\n", "line 3 is longer than 1,000,000"),
    ],
)
def test_bad_inputs_name_file_and_reason(
    tmp_path: Path, name: str, data: bytes, reason: str
) -> None:
    error = _error(_write(tmp_path / name, data), tmp_path)
    assert reason in error.reason


def test_a_long_title_is_cut_at_a_word_whatever_the_format(tmp_path: Path) -> None:
    title = " ".join(["Very long policy title"] * 10)
    for name, data in [
        ("t.md", f"---\ntitle: {title}\n---\nBody.\n"),
        ("t.html", f"<html><head><title>{title}</title></head><body><p>Body.</p></body></html>"),
    ]:
        doc = load_document(_write(tmp_path / name, data.encode()), root=tmp_path)
        assert doc.meta.title.endswith("title…")
        assert len(doc.meta.title) <= 120
        assert title.startswith(doc.meta.title[:-1])


@pytest.mark.parametrize(
    ("name", "data", "empty"),
    [
        ("empty.md", b"", True),
        ("redirect.md", b"---\nredirect_to: /terms\n---\n", True),
        ("blank.html", b"<html><script>x()</script></html>", True),
        ("bin.md", b"# T\n\x00\x01\x02", False),
        ("a.xyz", b"", False),
    ],
)
def test_only_files_without_text_raise_the_empty_document_error(
    tmp_path: Path, name: str, data: bytes, empty: bool
) -> None:
    error = _error(_write(tmp_path / name, data), tmp_path)
    assert isinstance(error, EmptyDocumentError) is empty


def test_undetectable_bytes_are_reported_as_not_utf8(tmp_path: Path) -> None:
    noise = bytes(b or 1 for b in random.Random(0).randbytes(400))
    error = _error(_write(tmp_path / "noise.txt", noise), tmp_path)
    assert error.reason.startswith("not UTF-8 text")


def test_file_over_size_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "huge.md"
    with path.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024 + 1)
    assert "larger than 50 MB" in _error(path, tmp_path).reason


def test_unreadable_path_is_a_document_error(tmp_path: Path) -> None:
    (tmp_path / "dir.md").mkdir()
    assert "not a regular file" in _error(tmp_path / "dir.md", tmp_path).reason


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads anything")
def test_permission_denied_is_a_document_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "secret.md", "# S\n\nx\n")
    path.chmod(0)
    assert "Permission denied" in _error(path, tmp_path).reason


def test_symlink_outside_root_is_refused_inside_is_fine(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = _write(tmp_path / "outside.md", "# O\n\nsecret\n")
    inside = _write(root / "real.md", "# R\n\nfine\n")
    (root / "escape.md").symlink_to(outside)
    (root / "alias.md").symlink_to(inside)
    assert "outside the data directory" in _error(root / "escape.md", root).reason
    assert load_document(root / "alias.md", root=root).source == "alias.md"


def test_discover_lists_sorted_non_hidden_files(tmp_path: Path) -> None:
    for name in ["b.md", "a/z.txt", "a/y.xyz", ".hidden.md", ".git/config", "a/.x/q.md"]:
        _write(tmp_path / name, "x")
    single = _write(tmp_path / "other" / "one.md", "x")
    pairs = discover([tmp_path / "a", tmp_path, single])
    assert pairs == sorted(pairs)
    assert [(r.name, f.relative_to(r).as_posix()) for r, f in pairs] == [
        (tmp_path.name, "a/y.xyz"),
        (tmp_path.name, "a/z.txt"),
        (tmp_path.name, "b.md"),
        (tmp_path.name, "other/one.md"),
        ("a", "y.xyz"),
        ("a", "z.txt"),
        ("other", "one.md"),
    ]


def test_discover_missing_root_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        discover([tmp_path / "nope"])


def test_supported_suffixes() -> None:
    assert {".md", ".markdown", ".txt", ".html", ".htm", ".pdf", ".docx"} == SUPPORTED_SUFFIXES


def _pdf_bytes() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 8, "Receipts are required.")
    return bytes(pdf.output())


def _docx_bytes() -> bytes:
    import io

    import docx

    document = docx.Document()
    document.add_heading("Guide", level=1)
    document.add_paragraph("Be on time.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("name", "kind", "make", "first_block"),
    [
        ("page.html", "html", lambda: b"<h1>Guide</h1><p>Be on time.</p>", "Be on time."),
        ("page.htm", "html", lambda: b"<h1>Guide</h1><p>Be on time.</p>", "Be on time."),
        ("guide.docx", "docx", _docx_bytes, "Be on time."),
        ("scan.pdf", "pdf", _pdf_bytes, "Receipts are required."),
        ("notes.markdown", "markdown", lambda: b"# Guide\n\nBe on time.\n", "Be on time."),
    ],
)
def test_dispatch_by_suffix(
    tmp_path: Path, name: str, kind: str, make: Callable[[], bytes], first_block: str
) -> None:
    doc = load_document(_write(tmp_path / name, make()), root=tmp_path)
    _check_invariants(doc)
    assert doc.kind == kind
    assert _block_texts(doc)[0] == first_block
    assert bool(doc.page_starts) == (kind == "pdf")


@pytest.mark.parametrize(
    ("name", "reason"),
    [("report.pdf", "corrupt or unreadable PDF"), ("memo.docx", "corrupt or unreadable DOCX")],
)
def test_corrupt_binary_documents_name_file(tmp_path: Path, name: str, reason: str) -> None:
    assert reason in _error(_write(tmp_path / name, b"just some text"), tmp_path).reason


def test_html_without_text_is_reported(tmp_path: Path) -> None:
    path = _write(tmp_path / "blank.html", b"<html><script>x()</script></html>")
    assert "no text found" in _error(path, tmp_path).reason
