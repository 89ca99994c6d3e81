"""The document viewer: safe path resolution and HTML with one anchor per section."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.documents.loading import load_document
from assistant.errors import IndexNotFoundError
from assistant.web.viewer import CSP, DocumentViewer, render_document
from tests.support.paths import ROOT

LEAVE = """---
title: Leave Policy
effective_date: 2025-07-01
tags: [hr, leave]
---

# Leave Policy

Intro text.

## Annual Leave

Staff get **25 days** of annual leave.

<script>alert("x")</script>

![tracker](https://evil.example/pixel.png)

## Sick Leave

Up to 10 days with a note.
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "hr").mkdir(parents=True)
    (docs / "hr" / "leave.md").write_text(LEAVE, encoding="utf-8")
    (docs / "hours.txt").write_text("OFFICE HOURS\n\nOpen 8 to 5 <b>weekdays</b>.\n")
    (docs / ".env").write_text("OPENAI_API_KEY=sk-secret\n")
    (docs / ".hidden").mkdir()
    (docs / ".hidden" / "x.md").write_text("# Hidden\n\nsecret\n")
    (docs / "index").mkdir()
    (docs / "index" / "notes.md").write_text("# Index notes\n\ninternal\n")
    (tmp_path / "outside.md").write_text("# Outside\n\nsecret outside\n")
    (docs / "escape.md").symlink_to(tmp_path / "outside.md")
    return docs


@pytest.fixture
def viewer(root: Path) -> DocumentViewer:
    return DocumentViewer(roots=[root], blocked=[root / "index"])


def test_markdown_page_has_an_anchor_for_every_indexed_section(
    root: Path, viewer: DocumentViewer
) -> None:
    page = viewer.page("hr/leave.md")

    assert page.status == 200
    document = load_document(root / "hr" / "leave.md", root=root)
    anchors = [s.anchor for s in document.sections if s.anchor]
    assert "annual-leave" in anchors
    for anchor in anchors:
        assert f'<section id="{anchor}">' in page.html
    annual = page.html.split('<section id="annual-leave">')[1].split("</section>")[0]
    assert "<strong>25 days</strong>" in annual
    assert "Sick Leave" not in annual


def test_markdown_raw_html_is_escaped_and_nothing_can_load(viewer: DocumentViewer) -> None:
    page = viewer.page("hr/leave.md")

    assert "<script" not in page.html
    assert "&lt;script&gt;" in page.html
    # Markdown images become plain links, and the CSP forbids loading images anyway.
    assert "default-src 'none'" in CSP
    assert "img-src" not in CSP
    assert "title: Leave Policy" not in page.html  # front matter is not shown as text


def test_text_file_reads_as_a_document_and_is_escaped(viewer: DocumentViewer) -> None:
    page = viewer.page("hours.txt")

    assert page.status == 200
    assert "<p>Open 8 to 5 &lt;b&gt;weekdays&lt;/b&gt;.</p>" in page.html
    assert "<pre>" not in page.html, "a monospace dump"
    assert len(re.findall(r"<h\d>OFFICE HOURS</h\d>", page.html)) == 1, "the heading once"


def test_pdf_docx_and_html_headings_show_once_and_tables_as_tables() -> None:
    sample = ROOT / "data" / "policies"
    for name in (
        "credit-committee-procedures.pdf",
        "member-dividend-policy.docx",
        "mobile-banking-terms.html",
    ):
        document = load_document(sample / name, root=sample, source=name)
        page = render_document(document)
        assert "<pre>" not in page, name
        for section in document.sections[1:]:
            heading = html.escape(section.heading_path[-1], quote=False)
            assert page.count(f">{heading}<") + page.count(f">{heading} <") == 1, (name, heading)
    docx = load_document(
        sample / "member-dividend-policy.docx", root=sample, source="member-dividend-policy.docx"
    )
    assert "<table><thead><tr><th>Financial year</th>" in render_document(docx)


@pytest.mark.parametrize(
    "path",
    [
        "../outside.md",
        "hr/../../outside.md",
        "hr/../hr/leave.md",
        "/etc/passwd",
        "C:/Windows/win.ini",
        "hr\\leave.md",
        ".env",
        ".hidden/x.md",
        "index/notes.md",
        "escape.md",
        "missing.md",
        "hr",
        "",
        "hr/leave.md\x00.txt",
    ],
)
def test_unsafe_or_unknown_paths_are_refused(viewer: DocumentViewer, path: str) -> None:
    page = viewer.page(path)

    assert page.status == 404
    assert "secret" not in page.html
    assert "Index notes" not in page.html


def test_a_file_the_loader_rejects_gives_a_readable_error(root: Path) -> None:
    (root / "empty.md").write_text("   \n")
    page = DocumentViewer(roots=[root]).page("empty.md")

    assert page.status == 422
    assert "empty.md" in page.html
    assert "Traceback" not in page.html


def test_sample_policies_render(viewer: DocumentViewer) -> None:
    sample = ROOT / "data" / "policies"
    page = DocumentViewer(roots=[sample]).page("loan-policy.md")

    assert page.status == 200
    assert '<section id="emergency-loans">' in page.html
    assert re.search(r"12% per annum", page.html)


def test_viewer_and_formatting_do_not_import_gradio() -> None:
    code = (
        "import sys, assistant.web.viewer, assistant.web.format; "
        "sys.exit(1 if 'gradio' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_with_a_catalog_only_indexed_sources_are_shown(root: Path) -> None:
    viewer = DocumentViewer(roots=[root], catalog=lambda user: {"hr/leave.md": str(root)})

    assert viewer.page("hr/leave.md").status == 200
    assert viewer.page("hours.txt").status == 404  # on disk, but not indexed


def test_a_catalog_root_is_still_checked_for_escapes(root: Path, tmp_path: Path) -> None:
    viewer = DocumentViewer(roots=[], catalog=lambda user: {"escape.md": str(root)})

    page = viewer.page("escape.md")

    assert page.status == 404
    assert "secret outside" not in page.html


def test_without_an_index_nothing_is_shown(root: Path) -> None:
    """D8: the configured roots never stand in for a catalog that cannot be read."""

    def no_index(user: object) -> dict[str, str]:
        raise IndexNotFoundError("run `python ingest.py` first")

    viewer = DocumentViewer(roots=[root], catalog=no_index)

    assert viewer.page("hours.txt").status == 404


def test_hostile_files_get_a_page_never_a_500(tmp_path: Path) -> None:
    """Issue 28, D13: HTML nested 2,500 deep answered 500; a symlink loop must not either."""
    docs = tmp_path / "docs"
    docs.mkdir()
    deep = "<html><body><h1>D</h1>" + "<div>" * 2500 + "<p>x</p>" + "</div>" * 2500
    (docs / "deep.html").write_text(deep + "</body></html>")
    (docs / "a.md").symlink_to("b")
    (docs / "b").symlink_to("a.md")
    viewer = DocumentViewer(roots=[docs])
    page = viewer.page("deep.html")
    assert page.status == 422
    assert "nested too deeply" in page.html
    assert viewer.page("a.md").status == 404
