"""Generate real-world-style PDF and DOCX policies from our own Markdown samples.

Real policy libraries are not the tidy single-column files of `make_sample_docs.py`:
they have running headers and footers with page numbers, two columns, tables that
cross a page break, footnotes and no outline. This script renders sample policies
from `data/policies/` that way, so the loaders can be measured on them
(`docs/formats.md`, "Real-world-style files"):

- ``fees-and-charges.pdf``: one column, no outline, headings only by font size and
  weight, a running header and a "Page n of N" footer, the 38-row fee table crossing
  a page break (its header row repeated, as Word and fpdf2 do), two footnotes;
- ``savings-and-membership-2col.pdf``: the same furniture on two columns;
- ``fees-and-charges.docx``: Word headings, the table, a running header and footer,
  and the effective date only as a custom document property;
- ``scanned-notice.pdf``: a page that is only an image (a scan), no text at all.

Dates and metadata are fixed, so re-running gives the same content.

Usage: ``python scripts/make_format_samples.py OUT_DIR``.
"""

from __future__ import annotations

import argparse
import io
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import docx
from doc_blocks import Block, Bullets, Heading, Para, Table, add_docx_blocks, fixed_entry
from fpdf import FPDF

POLICIES = Path(__file__).resolve().parent.parent / "data" / "policies"
FIXED_DATE = datetime(2025, 12, 15, 9, 0, 0, tzinfo=UTC)
ORG = "Umoja Savings & Credit Cooperative Society Ltd"
# Footnotes: (text the marker follows, the note). Markers are latin-1 superscripts.
FOOTNOTES = {
    "fees-and-charges.md": (
        (
            "include excise duty where it applies",
            "Excise duty is charged at 20% of the fee, as the Excise Duty Act requires.",
        ),
        (
            "recorded in the waiver register",
            "The waiver register is kept by the Finance Manager and audited every year.",
        ),
    ),
}
_SUPERSCRIPTS = "\u00b9\u00b2\u00b3"


def read_markdown(path: Path) -> list[Block]:
    """Read a sample policy's Markdown into blocks (headings, paragraphs, lists, tables)."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = lines.index("---", 1) + 1 if lines and lines[0] == "---" else 0  # no front matter
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("#"):
            marks, _, text = line.partition(" ")
            blocks.append(Heading(len(marks), _plain(text)))
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                cells = tuple(_plain(c.strip()) for c in lines[i].strip().strip("|").split("|"))
                if not all(set(c) <= set("-: ") for c in cells):
                    rows.append(cells)
                i += 1
            blocks.append(Table(tuple(rows)))
            continue
        elif line.startswith(("- ", "* ")) or re.match(r"\d+\. ", line):
            items = []
            while i < len(lines) and re.match(r"\s*(?:[-*]|\d+\.) ", lines[i]):
                items.append(_plain(re.sub(r"^\s*(?:[-*]|\d+\.) ", "", lines[i])))
                i += 1
            blocks.append(Bullets(tuple(items)))
            continue
        elif line:
            para = [line]
            while i + 1 < len(lines) and lines[i + 1].strip() and not _starts_block(lines[i + 1]):
                i += 1
                para.append(lines[i].strip())
            blocks.append(Para(_plain(" ".join(para))))
        i += 1
    return blocks


def _starts_block(line: str) -> bool:
    return bool(re.match(r"\s*(?:#|\||[-*] |\d+\. )", line))


def _plain(text: str) -> str:
    text = re.sub(r"\*\*(.+?)\*\*|\*(.+?)\*", lambda m: m.group(1) or m.group(2), text)
    text = re.sub(r"\[(.+?)\]\(.+?\)", r"\1", text)
    return text.replace("\u2019", "'").replace("\u2013", "-").replace("\u2014", "-")


def _with_footnotes(blocks: list[Block], notes: Sequence[tuple[str, str]]) -> list[Block]:
    """Put a superscript marker after each note's anchor text."""
    out: list[Block] = []
    for block in blocks:
        if isinstance(block, Para):
            text = block.text
            for n, (anchor, _) in enumerate(notes):
                if anchor and anchor in text:
                    text = text.replace(anchor, anchor + _SUPERSCRIPTS[n], 1)
            block = Para(text)
        out.append(block)
    return out


@dataclass
class _Furniture:
    header: str
    notes: dict[int, list[str]] = field(default_factory=dict)  # page -> footnotes on it


class PolicyPDF(FPDF):
    """An FPDF with a running header, a "Page n of N" footer, footnotes and columns."""

    def __init__(self, header: str, columns: int) -> None:
        super().__init__(format="A4")
        self.furniture = _Furniture(header)
        self.columns = columns
        self.column = 0
        self.gutter = 8.0
        self.set_margins(left=20, top=22, right=20)
        self.set_auto_page_break(auto=True, margin=32)
        self.col_width = (self.w - 40 - self.gutter * (columns - 1)) / columns

    def header(self) -> None:
        """Draw the running header on every page."""
        self.set_font("Helvetica", size=8)
        self.set_xy(20, 10)
        self.cell(self.w - 40, 5, self.furniture.header, align="L")
        self.set_xy(20, 10)
        self.cell(self.w - 40, 5, "Controlled copy - do not print", align="R")
        self.line(20, 16, self.w - 20, 16)
        self.set_xy(self._column_x(), 22)

    def footer(self) -> None:
        """Draw this page's footnotes and the "Page n of N" footer."""
        notes = self.furniture.notes.get(self.page_no(), [])
        if notes:
            self.set_y(-30 - 4 * len(notes))
            self.line(20, self.get_y(), 70, self.get_y())
            self.set_font("Helvetica", size=7)
            for note in notes:
                self.set_x(20)
                self.multi_cell(self.w - 40, 4, note, new_x="LMARGIN", new_y="NEXT")
        self.set_xy(20, -15)
        self.set_font("Helvetica", size=8)
        self.cell(self.w - 40, 5, f"Page {self.page_no()} of {{nb}}", align="C")

    def _column_x(self) -> float:
        return 20 + self.column * (self.col_width + self.gutter)

    @property
    def accept_page_break(self) -> bool:
        """Move to the next column; a new page only after the last one."""
        if self.column + 1 < self.columns:
            self.column += 1
            self.set_left_margin(self._column_x())
            self.set_right_margin(self.w - self._column_x() - self.col_width)
            self.set_y(22)
            return False
        self.column = 0
        self.set_left_margin(self._column_x())
        self.set_right_margin(self.w - self._column_x() - self.col_width)
        return True


def build_pdf(blocks: Sequence[Block], notes: Sequence[tuple[str, str]], *, columns: int) -> bytes:
    """Render blocks with furniture; headings only by font size and weight (no outline)."""
    title = next(b.text for b in blocks if isinstance(b, Heading))
    pdf = PolicyPDF(f"{ORG} - {title}", columns)
    pdf.set_creation_date(FIXED_DATE)
    pdf.set_title(title)
    pdf.set_author(ORG)
    pdf.set_creator("scripts/make_format_samples.py")
    pdf.set_right_margin(pdf.w - 20 - pdf.col_width)
    pdf.add_page()
    for block in blocks:
        _pdf_block(pdf, block, notes)
    return bytes(pdf.output())


def _pdf_block(pdf: PolicyPDF, block: Block, notes: Sequence[tuple[str, str]]) -> None:
    width = pdf.col_width
    if isinstance(block, Heading):
        sizes = {1: 18, 2: 13, 3: 11.5}
        if pdf.will_page_break(24) and pdf.accept_page_break:
            pdf.add_page()
        pdf.ln(3 if block.level > 1 else 0)
        pdf.set_font("Helvetica", style="B", size=sizes.get(block.level, 11))
        pdf.multi_cell(width, 7, block.text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(1)
    elif isinstance(block, Para):
        pdf.set_font("Helvetica", size=10)
        pdf.multi_cell(width, 5, block.text, new_x="LMARGIN", new_y="NEXT")
        for n, (anchor, note) in enumerate(notes):
            if anchor and anchor + _SUPERSCRIPTS[n] in block.text:
                pdf.furniture.notes.setdefault(pdf.page_no(), []).append(
                    _SUPERSCRIPTS[n] + " " + note
                )
        pdf.ln(2)
    elif isinstance(block, Bullets):
        pdf.set_font("Helvetica", size=10)
        for item in block.items:
            pdf.set_x(pdf.l_margin + 4)
            pdf.multi_cell(width - 4, 5, "- " + item, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)
    else:
        pdf.set_font("Helvetica", size=9)
        with pdf.table(first_row_as_headings=True, width=width, align="LEFT") as table:
            for row in block.rows:
                table.row(row)
        pdf.ln(2)


def build_scanned(text: str) -> bytes:
    """Render ``text`` into a bitmap and embed only the image: a PDF with no text layer."""
    from PIL import Image, ImageDraw  # fpdf2 requires Pillow

    image = Image.new("L", (1240, 1754), 255)
    draw = ImageDraw.Draw(image)
    for n, line in enumerate(text.splitlines()):
        draw.text((100, 120 + 30 * n), line, fill=0)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    pdf = FPDF(format="A4")
    pdf.set_creation_date(FIXED_DATE)
    pdf.add_page()
    pdf.image(io.BytesIO(buffer.getvalue()), x=0, y=0, w=pdf.w, h=pdf.h)
    return bytes(pdf.output())


def build_docx(blocks: Sequence[Block], *, effective: str) -> bytes:
    """Render blocks as a DOCX with a running header and footer, and a custom date property."""
    document = docx.Document()
    title = next(b.text for b in blocks if isinstance(b, Heading))
    props = document.core_properties
    props.title = title
    props.author = ORG
    props.created = FIXED_DATE.replace(tzinfo=None)
    props.modified = FIXED_DATE.replace(tzinfo=None)
    section = document.sections[0]
    section.header.paragraphs[0].text = f"{ORG} - {title}"
    section.footer.paragraphs[0].text = "Controlled copy - do not print"
    add_docx_blocks(document, blocks, paragraph=_drop_date_line)
    buffer = io.BytesIO()
    document.save(buffer)
    return _with_custom_properties(buffer.getvalue(), {"Effective Date": effective})


def _drop_date_line(text: str) -> str:
    """Remove the sentence stating the effective date: the custom property must say it."""
    return re.sub(r"\s*It takes effect on [^.]+ and", " It", text)


def _with_custom_properties(data: bytes, values: dict[str, str]) -> bytes:
    """Add ``docProps/custom.xml`` (Word's File > Properties > Custom), fixed timestamps."""
    props = "".join(
        f'<property fmtid="{{D5CDD505-2E9C-101B-9397-08002B2CF9AE}}" pid="{n}" name="{name}">'
        f"<vt:lpwstr>{value}</vt:lpwstr></property>"
        for n, (name, value) in enumerate(values.items(), start=2)
    )
    custom = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/'
        'custom-properties" xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes">'
        f"{props}</Properties>"
    )
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for name in source.namelist():
            body = source.read(name)
            if name == "[Content_Types].xml":
                body = body.replace(
                    b"</Types>",
                    b'<Override PartName="/docProps/custom.xml" ContentType="application/'
                    b'vnd.openxmlformats-officedocument.custom-properties+xml"/></Types>',
                )
            if name == "_rels/.rels":
                body = body.replace(
                    b"</Relationships>",
                    b'<Relationship Id="rIdCustom" Type="http://schemas.openxmlformats.org/'
                    b'officeDocument/2006/relationships/custom-properties" '
                    b'Target="docProps/custom.xml"/></Relationships>',
                )
            target.writestr(fixed_entry(name, FIXED_DATE), body)
        target.writestr(fixed_entry("docProps/custom.xml", FIXED_DATE), custom)
    return out.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    """Write the real-world-style files into the directory given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out", type=Path, help="output directory (created if missing)")
    out: Path = parser.parse_args(argv).out
    out.mkdir(parents=True, exist_ok=True)
    fees = read_markdown(POLICIES / "fees-and-charges.md")
    notes = FOOTNOTES["fees-and-charges.md"]
    savings = read_markdown(POLICIES / "savings-and-membership.md")
    files = {
        "fees-and-charges.pdf": build_pdf(_with_footnotes(fees, notes), notes, columns=1),
        "savings-and-membership-2col.pdf": build_pdf(savings, (), columns=2),
        "fees-and-charges.docx": build_docx(fees, effective="2026-01-01"),
        "scanned-notice.pdf": build_scanned(
            "NOTICE TO MEMBERS\n\nThe annual general meeting is held on 14 March 2026."
        ),
    }
    for name, data in files.items():
        (out / name).write_bytes(data)
        print(f"wrote {out / name} ({len(data):,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
