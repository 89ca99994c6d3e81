"""Generate the sample corpus's PDF and DOCX policies from text kept in this script.

Writes ``credit-committee-procedures.pdf`` (fpdf2, core fonts, with an outline) and
``member-dividend-policy.docx`` (python-docx, real Heading styles). Dates and metadata are
fixed, and the DOCX zip entries get a fixed timestamp, so re-running produces the same bytes.

Usage: ``python scripts/make_sample_docs.py [--out DIR]`` (default ``data/policies``).
"""

from __future__ import annotations

import argparse
import io
import zipfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import docx
from doc_blocks import Block, Bullets, Heading, Para, Table, add_docx_blocks, fixed_entry
from fpdf import FPDF

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "data" / "policies"
PDF_NAME = "credit-committee-procedures.pdf"
DOCX_NAME = "member-dividend-policy.docx"
FIXED_DATE = datetime(2025, 9, 1, 9, 0, 0, tzinfo=UTC)
AUTHOR = "Umoja Savings & Credit Cooperative Society Ltd"


CREDIT_COMMITTEE: tuple[Block, ...] = (
    Heading(1, "Credit Committee Procedures"),
    Para(
        "Umoja Savings & Credit Cooperative Society Ltd. Approved by the Board of Directors "
        "on 28 August 2025 and effective from 1 September 2025. Owner: Chairperson of the "
        "Credit Committee."
    ),
    Heading(2, "Purpose and Authority"),
    Para(
        "These procedures describe how the Credit Committee considers loan applications, "
        "how it monitors the loan book and how members may appeal against its decisions. "
        "The Committee acts under authority delegated by the Board of Directors and applies "
        "the Loan Policy in force at the time of each application. Where these procedures "
        "and the Loan Policy differ, the Loan Policy prevails."
    ),
    Para(
        "The Committee exists so that large loans are never decided by one person. Its "
        "members bring independent judgement to each application and share responsibility "
        "for the quality of the Sacco's lending."
    ),
    Heading(2, "Composition"),
    Heading(3, "Members of the Committee"),
    Para(
        "The Credit Committee has three members, all of them directors appointed by the "
        "Board after each annual general meeting. At least one member must have experience "
        "in banking, credit or accounting. A member of the Audit Committee may not sit on "
        "the Credit Committee."
    ),
    Heading(3, "Chairperson and Secretary"),
    Para(
        "The members elect a Chairperson from among themselves at their first meeting. "
        "The Credit Manager acts as secretary to the Committee. "
        "The Credit Manager presents applications and advises the Committee but has no vote."
    ),
    Heading(2, "Meetings"),
    Heading(3, "Regular Meetings"),
    Para(
        "The Committee meets every Tuesday at 2:00 p.m. at the head office in Nakuru. "
        "Members may join by video call when they cannot attend in person. "
        "The quorum for a meeting is two members."
    ),
    Para(
        "The Credit Manager circulates the list of applications and the appraisal "
        "summaries by noon on the Monday before each meeting. Applications received after "
        "that time are considered at the following meeting."
    ),
    Heading(3, "Urgent Applications"),
    Para(
        "Between meetings, the Chairperson may circulate an urgent application by email. "
        "An urgent application is approved if at least two members approve it in writing. "
        "Decisions taken this way are recorded in the minutes of the next regular meeting."
    ),
    Heading(2, "Approval Limits"),
    Para("The authority to approve a loan depends on its amount, as set out below."),
    Table(
        (
            ("Loan amount", "Approved by"),
            ("Up to KES 200,000", "Credit officer"),
            ("KES 200,001 to KES 2,000,000", "Credit Committee"),
            ("Above KES 2,000,000", "Board, on the Committee's recommendation"),
        )
    ),
    Heading(3, "Loans above KES 2,000,000"),
    Para(
        "For loans above KES 2,000,000, the Committee appraises the application in the "
        "usual way and, if it supports the loan, sends a written recommendation to the "
        "Board. The Board decides at its next meeting or by written resolution. "
        "The Committee may not split one application into smaller loans to stay within "
        "its own limit."
    ),
    Heading(2, "Considering an Application"),
    Para(
        "For each application the Credit Manager presents the appraisal summary prepared "
        "by the credit officer. The summary states the amount applied for, the amount "
        "recommended, the repayment capacity calculation, the security offered and any "
        "risks noted. Members of the Committee may ask for any document in the loan file."
    ),
    Heading(3, "Possible Decisions"),
    Para("For each application the Committee may take one of these decisions:"),
    Bullets(
        (
            "approve the loan as applied for;",
            "approve a lower amount or a shorter period;",
            "defer the application and ask for more information;",
            "decline the application, giving reasons.",
        )
    ),
    Para(
        "Decisions are taken by majority. The reasons for every decision are written in "
        "the minutes. The applicant is informed in writing within three working days of "
        "the meeting. A declined applicant is always told the reasons."
    ),
    Heading(2, "Conflicts of Interest"),
    Para(
        "A Committee member must declare any interest in an application before it is "
        "discussed. An interest includes being the applicant, a guarantor, a relative of "
        "the applicant, or a business partner of the applicant."
    ),
    Para(
        "A member with an interest leaves the room for that item. "
        "The minutes record the declaration and the member's absence. "
        "If the remaining members do not form a quorum, the application goes to the Board."
    ),
    Heading(2, "Insider Loans"),
    Para(
        "Loans to directors, Supervisory Committee members and staff are insider loans. "
        "They are granted on the same terms as loans to other members and receive no "
        "special rate, no waiver of fees and no relaxation of the security rules."
    ),
    Heading(3, "Approval of Insider Loans"),
    Para(
        "Every insider loan is considered by the Credit Committee, whatever its amount. "
        "Loans to directors are then approved by the full Board, with the applicant absent. "
        "Staff loans are appraised by the Credit Manager, never by a junior officer."
    ),
    Heading(3, "Limit on Insider Lending"),
    Para(
        "Insider loans together must not exceed 10% of the total loan portfolio. "
        "The Credit Manager reports the insider lending total to the Board every quarter."
    ),
    Heading(2, "Appeals"),
    Para(
        "A member whose application is declined, or approved for a lower amount, may "
        "appeal to the Board. The appeal must be made in writing within 14 days of the "
        "decision letter. The Board considers the appeal at its next meeting. "
        "The Board's decision on an appeal is final."
    ),
    Para(
        "Committee members who took part in the original decision may explain it to the "
        "Board but do not vote on the appeal."
    ),
    Heading(2, "Monitoring the Loan Book"),
    Heading(3, "Monthly Review"),
    Para(
        "On the first Tuesday of each month, the Committee reviews the loan portfolio "
        "report prepared by the Credit Manager. The report shows new loans, repayments, "
        "loans in arrears by age, and the portfolio at risk. The Committee aims to keep "
        "loans more than 30 days in arrears below 5% of the loan book."
    ),
    Heading(3, "Non-Performing Loans"),
    Para(
        "For each non-performing loan, the Committee reviews the recovery steps taken "
        "against the borrower and the guarantors. A loan that remains non-performing for "
        "12 months may be recommended to the Board for write-off. "
        "Writing off a loan does not cancel the debt, and recovery continues."
    ),
    Heading(2, "Records"),
    Para(
        "The Credit Manager keeps the minutes of every meeting and a loan decisions "
        "register showing each application, the decision and the members present. "
        "The Chairperson signs the minutes once they are approved. Records are kept in "
        "line with the Records Retention Schedule."
    ),
    Heading(2, "Review of These Procedures"),
    Para(
        "The Committee reviews these procedures every two years, or sooner if the Loan "
        "Policy changes, and submits any amendments to the Board for approval."
    ),
)

DIVIDEND_POLICY: tuple[Block, ...] = (
    Heading(1, "Member Dividend Policy"),
    Para(
        "This policy explains how Umoja Savings & Credit Cooperative Society Ltd rewards "
        "members each year from its surplus. Effective from 1 January 2025. "
        "Owner: Finance Manager."
    ),
    Heading(2, "Sources of Dividends"),
    Para(
        "Dividends and interest on deposits are paid only from the net surplus of a "
        "financial year, as shown in the audited accounts. Before any payment, 20% of "
        "the net surplus is transferred to the statutory reserve."
    ),
    Para(
        "The Board recommends the rates, and the annual general meeting approves them. "
        "The meeting may lower the recommended rates but may not raise them."
    ),
    Heading(2, "Dividend on Share Capital"),
    Para(
        "The dividend is calculated on the share capital each member holds. "
        "Shares bought during the year earn a dividend pro rata by month. "
        "Shares transferred during the year earn the dividend for the buyer from the "
        "month of transfer."
    ),
    Heading(2, "Interest on Deposits"),
    Para(
        "Interest on deposits is calculated on the average monthly balance. "
        "Lump-sum deposits made in December earn interest only for that month. "
        "Deposits pledged as security for loans still earn interest in full."
    ),
    Heading(2, "Rates Declared in Recent Years"),
    Table(
        (
            ("Financial year", "Dividend on share capital", "Interest on deposits"),
            ("2022", "10%", "7.5%"),
            ("2023", "10%", "8%"),
            ("2024", "11%", "8.5%"),
            ("2025", "11.5%", "9%"),
        )
    ),
    Heading(2, "Tax"),
    Para(
        "Withholding tax at 5% is deducted from dividends and from interest on deposits "
        "before payment, and remitted to the Kenya Revenue Authority. Members can download "
        "a withholding tax certificate from the mobile app."
    ),
    Heading(2, "Payment"),
    Heading(3, "Payment Options"),
    Para("Each member chooses how to receive their dividend and interest:"),
    Bullets(
        (
            "credited to their Ordinary Savings Account (the default);",
            "sent to their registered M-Pesa number;",
            "transferred to a bank account in their name;",
            "reinvested to buy more share capital or added to their deposits.",
        )
    ),
    Para(
        "Members choose an option in the mobile app or at a branch before 31 March. "
        "Members who do not choose receive payment into their Ordinary Savings Account."
    ),
    Heading(3, "Payment Timetable"),
    Para(
        "Dividends and interest are paid within 21 days after the annual general meeting. "
        "No fee is charged for receiving them."
    ),
    Heading(2, "Members with Loans in Arrears"),
    Para(
        "Where a member has a loan in arrears on the payment date, the dividend and "
        "interest are first applied to clear the arrears. Any balance is then paid "
        "according to the member's chosen option."
    ),
    Heading(2, "Unclaimed Dividends"),
    Para(
        "Payments that fail, for example because an M-Pesa number is no longer in use, "
        "are held in an unclaimed dividends account. Unclaimed dividends are held for "
        "five years, after which they are dealt with as the law requires."
    ),
)


def build_pdf(blocks: Sequence[Block]) -> bytes:
    """Render blocks as a PDF with an outline entry for every heading.

    Args:
        blocks: The document, title heading first.

    Returns:
        The PDF file's bytes.
    """
    pdf = FPDF(format="A4")
    pdf.set_creation_date(FIXED_DATE)
    pdf.set_title(_title(blocks))
    pdf.set_author(AUTHOR)
    pdf.set_creator("scripts/make_sample_docs.py")
    pdf.set_producer("fpdf2")
    pdf.set_lang("en")
    pdf.set_auto_page_break(auto=True, margin=20)
    pdf.set_margins(left=22, top=20, right=22)
    pdf.add_page()
    for block in blocks:
        _pdf_block(pdf, block)
    return bytes(pdf.output())


def _pdf_block(pdf: FPDF, block: Block) -> None:
    if isinstance(block, Heading):
        sizes = {1: 20, 2: 14, 3: 12}
        pdf.ln(4 if block.level > 1 else 0)
        # Keep a heading with its first lines; this also keeps the outline entry (recorded
        # before the heading is drawn) on the page where the heading actually appears.
        if pdf.will_page_break(30):
            pdf.add_page()
        pdf.start_section(block.text, level=block.level - 1)
        pdf.set_font("Helvetica", style="B", size=sizes[block.level])
        pdf.multi_cell(0, 8, block.text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(1)
    elif isinstance(block, Para):
        pdf.set_font("Helvetica", size=11)
        pdf.multi_cell(0, 6, block.text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(3)
    elif isinstance(block, Bullets):
        pdf.set_font("Helvetica", size=11)
        for item in block.items:
            pdf.set_x(pdf.l_margin + 6)
            pdf.multi_cell(0, 6, "- " + item, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(3)
    else:
        pdf.set_font("Helvetica", size=10)
        with pdf.table(first_row_as_headings=True) as table:
            for row in block.rows:
                table.row(row)
        pdf.ln(3)


def build_docx(blocks: Sequence[Block]) -> bytes:
    """Render blocks as a DOCX with Heading 1-3 styles, a table and a bullet list.

    Args:
        blocks: The document, title heading first.

    Returns:
        The DOCX file's bytes, with fixed zip timestamps.
    """
    document = docx.Document()
    props = document.core_properties
    props.title = _title(blocks)
    props.author = AUTHOR
    props.last_modified_by = AUTHOR
    props.created = FIXED_DATE.replace(tzinfo=None)
    props.modified = FIXED_DATE.replace(tzinfo=None)
    props.revision = 1
    add_docx_blocks(document, blocks)
    buffer = io.BytesIO()
    document.save(buffer)
    return _normalise_zip(buffer.getvalue())


def _normalise_zip(data: bytes) -> bytes:
    """Rewrite a zip with fixed timestamps so identical content gives identical bytes."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for name in source.namelist():
            target.writestr(fixed_entry(name, FIXED_DATE), source.read(name))
    return out.getvalue()


def _title(blocks: Sequence[Block]) -> str:
    first = blocks[0]
    if not isinstance(first, Heading):
        raise ValueError(f"document must start with a heading, got {first!r}")
    return first.text


def main(argv: Sequence[str] | None = None) -> int:
    """Write the sample PDF and DOCX into ``--out``.

    Args:
        argv: Command-line arguments; ``sys.argv[1:]`` when None.

    Returns:
        The process exit code.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    args = parser.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / PDF_NAME).write_bytes(build_pdf(CREDIT_COMMITTEE))
    (out / DOCX_NAME).write_bytes(build_docx(DIVIDEND_POLICY))
    print(f"wrote {out / PDF_NAME} and {out / DOCX_NAME}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
