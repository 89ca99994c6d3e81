"""Dates from every format: metadata first, then an "Effective ..." line, then timestamps."""

from __future__ import annotations

import datetime as dt
import io

import docx
import pytest
from fpdf import FPDF

from assistant.documents.dates import dates_in_text, parse_date
from assistant.documents.docx import parse_docx
from assistant.documents.html import parse_html
from assistant.documents.loading import load_document
from assistant.documents.markdown import parse_markdown
from assistant.documents.pdf import parse_pdf
from assistant.documents.text import parse_text
from assistant.index.codec import decode_doc_meta, encode_chunk
from assistant.types import Chunk, Document
from assistant.web.viewer import render_document
from tests.support.paths import ROOT

POLICIES = ROOT / "data" / "policies"


@pytest.mark.parametrize(
    ("raw", "iso"),
    [
        ("1 September 2025", "2025-09-01"),
        ("1st Sept. 2025", "2025-09-01"),
        ("September 1, 2025", "2025-09-01"),
        ("Sep 1 2025", "2025-09-01"),
        ("2025-09-01", "2025-09-01"),
        ("2025-09-01T09:00:00+03:00", "2025-09-01"),
        ("D:20250901090000Z", "2025-09-01"),
        ("Mon, 01 Sep 2025 09:00:00 GMT", "2025-09-01"),
        (dt.datetime(2025, 9, 1, 9, 0), "2025-09-01"),
        ("01/09/2025", ""),  # day or month first? refused, not guessed
        ("31 February 2025", ""),
        ("soon", ""),
        (None, ""),
    ],
)
def test_parse_date_reads_the_usual_spellings(raw: object, iso: str) -> None:
    assert parse_date(raw) == iso


@pytest.mark.parametrize(
    ("text", "effective", "updated"),
    [
        ("Policy\n\nEffective: 1 January 2026\n", "2026-01-01", ""),
        ("Approved on 28\nAugust 2025 and effective from 1 September 2025.", "2025-09-01", ""),
        (
            "Effective date - September 1, 2025. Last updated 2025-10-02.",
            "2025-09-01",
            "2025-10-02",
        ),
        ("These terms took effect on 1 March 2025.", "2025-03-01", ""),
        ("It comes into force on 2 June 2025.", "2025-06-02", ""),
        ("Last revised: 3rd May 2024", "", "2024-05-03"),
        ("Approved on 28 August 2025 by the Board.", "", ""),
    ],
)
def test_dates_in_text_finds_effective_and_updated_lines(
    text: str, effective: str, updated: str
) -> None:
    claim = dates_in_text(text)
    assert (claim.effective, claim.updated) == (effective, updated)


def test_only_the_top_of_a_document_dates_it() -> None:
    text = "Leave rules.\n\n" + "Staff take leave in agreed blocks. " * 60
    text += "A change is effective from 1 July 2030."
    assert parse_text(text, fallback_title="Leave").meta.effective_date == ""


@pytest.mark.parametrize(
    ("name", "effective", "source"),
    [
        ("credit-committee-procedures.pdf", "2025-09-01", "text"),
        ("member-dividend-policy.docx", "2025-01-01", "text"),
        ("mobile-banking-terms.html", "2025-03-01", "text"),
        ("office-hours-and-holidays.txt", "2026-01-01", "text"),
        ("loan-policy.md", "2026-01-01", "front matter"),
    ],
)
def test_every_sample_format_gets_its_stated_effective_date(
    name: str, effective: str, source: str
) -> None:
    meta = load_document(POLICIES / name, root=POLICIES).meta
    assert (meta.effective_date, meta.date_source) == (effective, source)


def test_front_matter_wins_over_the_text() -> None:
    text = "---\neffective_date: 2024-01-01\n---\n# P\n\nEffective from 1 June 2025.\n"
    meta, _ = parse_markdown(text, fallback_title="P")
    assert (meta.effective_date, meta.date_source) == ("2024-01-01", "front matter")


def test_markdown_without_front_matter_dates_from_its_text() -> None:
    meta, _ = parse_markdown("# P\n\nLast updated 2 May 2025.\n", fallback_title="P")
    assert (meta.effective_date, meta.updated_date, meta.date_source) == ("", "2025-05-02", "text")


def test_html_meta_tags_win_over_the_text() -> None:
    page = (
        b"<html><head><title>T</title>"
        b'<meta name="DC.date" content="2024-05-01">'
        b'<meta property="article:modified_time" content="2025-02-03T10:00:00Z">'
        b"</head><body><h1>T</h1><p>Effective from 1 June 2025.</p></body></html>"
    )
    meta = parse_html(page, source="t.html", fallback_title="T").meta
    assert (meta.effective_date, meta.updated_date, meta.date_source) == (
        "2024-05-01",
        "2025-02-03",
        "meta tag",
    )


def test_html_last_modified_header_tag_gives_the_updated_date() -> None:
    page = (
        b'<html><head><meta http-equiv="Last-Modified" content="Mon, 01 Sep 2025 09:00:00 GMT">'
        b"</head><body><p>Text.</p></body></html>"
    )
    meta = parse_html(page, source="t.html", fallback_title="T").meta
    assert (meta.updated_date, meta.date_source) == ("2025-09-01", "meta tag")


def _docx(paragraph: str) -> bytes:
    document = docx.Document()
    document.core_properties.created = dt.datetime(2019, 3, 4, 8, 0)
    document.core_properties.modified = dt.datetime(2025, 9, 1, 8, 0)
    document.add_heading("Dividends", level=1)
    document.add_paragraph(paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_docx_stated_date_beats_its_timestamps() -> None:
    meta = parse_docx(_docx("Effective from 1 January 2025."), source="d.docx", fallback_title="D")
    assert (meta.meta.effective_date, meta.meta.updated_date) == ("2025-01-01", "2025-09-01")
    assert meta.meta.date_source == "text"


def test_docx_without_a_stated_date_falls_back_to_its_properties() -> None:
    meta = parse_docx(_docx("Dividends are paid yearly."), source="d.docx", fallback_title="D")
    assert (meta.meta.effective_date, meta.meta.date_source) == (
        "2019-03-04",
        "document properties",
    )


def _pdf(text: str) -> bytes:
    pdf = FPDF()
    pdf.set_creation_date(dt.datetime(2023, 5, 6, tzinfo=dt.UTC))
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 8, text, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def test_pdf_stated_date_beats_its_creation_date() -> None:
    meta = parse_pdf(_pdf("Effective: 1 July 2025."), source="p.pdf", fallback_title="P").meta
    assert (meta.effective_date, meta.date_source) == ("2025-07-01", "text")
    bare = parse_pdf(_pdf("No date here."), source="p.pdf", fallback_title="P").meta
    assert (bare.effective_date, bare.date_source) == ("2023-05-06", "document properties")


def test_viewer_and_index_say_where_the_date_came_from() -> None:
    doc = load_document(POLICIES / "office-hours-and-holidays.txt", root=POLICIES)
    assert "effective 2026-01-01 (from text)" in render_document(doc)
    record = encode_chunk(_first_chunk(doc), doc=doc, chunk_count=1, doc_key="k", indexed_at="now")
    assert decode_doc_meta(record.metadata).date_source == "text"


def _first_chunk(doc: Document) -> Chunk:
    from assistant.chunking.chunker import chunk_document
    from assistant.config import ChunkingSettings
    from assistant.tokens import get_tokenizer

    settings = ChunkingSettings()
    return chunk_document(doc, settings=settings, tokenizer=get_tokenizer(settings.encoding))[0]


def _xmp(*descriptions: str) -> str:
    body = "".join(f'<rdf:Description rdf:about="" {d}</rdf:Description>' for d in descriptions)
    return (
        '<x:xmpmeta xmlns:x="adobe:ns:meta/">'
        f'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">{body}</rdf:RDF>'
        "</x:xmpmeta>"
    )


DC_DATE = (
    'xmlns:dc="http://purl.org/dc/elements/1.1/">'
    "<dc:date><rdf:Seq><rdf:li>2024-02-01</rdf:li></rdf:Seq></dc:date>"
)
PDFX_EFFECTIVE = (
    'xmlns:pdfx="http://ns.adobe.com/pdfx/1.3/"><pdfx:EffectiveDate>2024-03-01</pdfx:EffectiveDate>'
)


def _pdf_with_xmp(text: str, xmp: str) -> bytes:
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 8, text, new_x="LMARGIN", new_y="NEXT")
    pdf.set_xmp_metadata(xmp)
    return bytes(pdf.output())


def test_pdf_xmp_dates_are_explicit_metadata_and_win_over_the_text() -> None:
    stated = _pdf_with_xmp("Effective: 1 July 2025.", _xmp(DC_DATE, PDFX_EFFECTIVE))
    meta = parse_pdf(stated, source="x.pdf", fallback_title="X").meta
    assert (meta.effective_date, meta.date_source) == ("2024-03-01", "XMP metadata")
    dc_only = _pdf_with_xmp("Effective: 1 July 2025.", _xmp(DC_DATE))
    meta = parse_pdf(dc_only, source="x.pdf", fallback_title="X").meta
    assert (meta.effective_date, meta.date_source) == ("2024-02-01", "XMP metadata")


def test_pdf_with_broken_xmp_still_dates_from_its_text() -> None:
    broken = _pdf_with_xmp("Effective: 1 July 2025.", "<x:xmpmeta><rdf:RDF>")
    meta = parse_pdf(broken, source="x.pdf", fallback_title="X").meta
    assert (meta.effective_date, meta.date_source) == ("2025-07-01", "text")


def _with_custom(data: bytes, name: str, value: str) -> bytes:
    """Add a custom document property, as Word's File > Properties > Custom does."""
    import zipfile

    custom = (
        '<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/'
        'custom-properties" xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/'
        f'docPropsVTypes"><property fmtid="{{D5CDD505-2E9C-101B-9397-08002B2CF9AE}}" pid="2" '
        f'name="{name}"><vt:lpwstr>{value}</vt:lpwstr></property></Properties>'
    )
    extra = {
        "[Content_Types].xml": (
            b"</Types>",
            b'<Override PartName="/docProps/custom.xml" ContentType="application/vnd.'
            b'openxmlformats-officedocument.custom-properties+xml"/></Types>',
        ),
        "_rels/.rels": (
            b"</Relationships>",
            b'<Relationship Id="rIdC" Type="http://schemas.openxmlformats.org/officeDocument/'
            b'2006/relationships/custom-properties" Target="docProps/custom.xml"/>'
            b"</Relationships>",
        ),
    }
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.namelist():
            body = src.read(item)
            if item in extra:
                body = body.replace(*extra[item])
            dst.writestr(item, body)
        dst.writestr("docProps/custom.xml", custom)
    return out.getvalue()


def test_docx_custom_properties_win_over_the_text_and_the_timestamps() -> None:
    data = _with_custom(_docx("Effective from 1 January 2025."), "Effective Date", "2026-01-01")
    meta = parse_docx(data, source="d.docx", fallback_title="D").meta
    assert (meta.effective_date, meta.date_source) == ("2026-01-01", "custom properties")
    revised = _with_custom(_docx("Dividends are paid yearly."), "Last Revised", "2025-11-30")
    meta = parse_docx(revised, source="d.docx", fallback_title="D").meta
    assert meta.updated_date == "2025-11-30"
    assert meta.effective_date == "2019-03-04"  # still the created stamp: nothing states it
