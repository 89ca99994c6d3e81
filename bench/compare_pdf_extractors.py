"""Compare what pypdf and pdfplumber give on our PDFs (the figures in docs/formats.md).

For each PDF: the share of the source's sentences found verbatim in the extracted text
(reading order: two columns read line across line lose it), the table rows recovered
with their cells apart, the running header/footer lines left in, and the time taken.
"Ours" is the loader (`assistant.documents.pdf`: pdfplumber words and tables through
`assistant.documents.pdflayout`).

Usage: ``python bench/compare_pdf_extractors.py SAMPLES_DIR`` where SAMPLES_DIR holds the
output of ``scripts/make_format_samples.py``.
"""

from __future__ import annotations

import io
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pdfplumber
from pypdf import PdfReader

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from make_format_samples import read_markdown  # noqa: E402
from make_sample_docs import CREDIT_COMMITTEE  # noqa: E402

from assistant.documents.pdf import parse_pdf  # noqa: E402

FURNITURE = re.compile(r"Controlled copy|Page \d+ of \d+")


def _collapse(text: str) -> str:
    return " ".join(text.replace("\u00b9", "").replace("\u00b2", "").split())


def sentences(blocks: object) -> tuple[list[str], list[tuple[str, ...]]]:
    """The source's sentences and table rows."""
    out: list[str] = []
    rows: list[tuple[str, ...]] = []
    for block in blocks:  # type: ignore[attr-defined]
        kind = type(block).__name__  # both scripts' block classes have these names
        if kind == "Para":
            out += [s for s in re.split(r"(?<=[.!?])\s+", block.text) if len(s) > 30]
        elif kind == "Bullets":
            out += [i for i in block.items if len(i) > 30]
        elif kind == "Table":
            rows += list(block.rows)
    return out, rows


def pypdf_text(data: bytes) -> tuple[str, list[list[str]]]:
    reader = PdfReader(io.BytesIO(data))
    return "\n".join(page.extract_text() for page in reader.pages), []


def plumber_text(data: bytes) -> tuple[str, list[list[str]]]:
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        text = "\n".join(page.extract_text() for page in pdf.pages)
        tables = [
            [" ".join((c or "").split()) for c in row]
            for page in pdf.pages
            for table in page.extract_tables()
            for row in table
        ]
    return text, tables


def our_text(data: bytes) -> tuple[str, list[list[str]]]:
    doc = parse_pdf(data, source="x.pdf", fallback_title="x")
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in doc.text.splitlines()
        if line.startswith("| ")
    ]
    return doc.text, rows


def measure(name: str, data: bytes, source: object) -> None:
    wanted, table_rows = sentences(source)
    readers: dict[str, Callable[[bytes], tuple[str, list[list[str]]]]] = {
        "pypdf": pypdf_text,
        "pdfplumber": plumber_text,
        "ours": our_text,
    }
    for label, read in readers.items():
        started = time.perf_counter()
        text, rows = read(data)
        seconds = time.perf_counter() - started
        flat = _collapse(text)
        found = sum(1 for s in wanted if _collapse(s) in flat)
        got = {tuple(r) for r in rows}
        kept = sum(1 for r in table_rows if tuple(_collapse(c) for c in r) in got)
        furniture = len(FURNITURE.findall(text))
        print(
            f"| {name} | {label} | {found}/{len(wanted)} | {kept}/{len(table_rows)} "
            f"| {furniture} | {seconds:.2f} s |"
        )


def main() -> int:
    """Print the comparison as a Markdown table."""
    samples = Path(sys.argv[1])
    print("| file | reader | sentences in order | table rows, cells apart | furniture | time |")
    print("|---|---|---|---|---|---|")
    credit = ROOT / "data" / "policies" / "credit-committee-procedures.pdf"
    measure(credit.name, credit.read_bytes(), CREDIT_COMMITTEE)
    fees = read_markdown(ROOT / "data" / "policies" / "fees-and-charges.md")
    measure("fees-and-charges.pdf", (samples / "fees-and-charges.pdf").read_bytes(), fees)
    savings = read_markdown(ROOT / "data" / "policies" / "savings-and-membership.md")
    two = (samples / "savings-and-membership-2col.pdf").read_bytes()
    measure("savings-and-membership-2col.pdf", two, savings)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
