"""Deterministic policy-like Markdown for benchmarks.

Usage from another bench (run as ``python bench/NAME.py``, so ``bench/`` is on
``sys.path``)::

    from corpus import write_corpus
    paths = write_corpus(Path(tmp), megabytes=2.0, seed=0)

Each document has an H1 title, numbered H2 sections with H3 and some H4
subsections, paragraphs, bullet and numbered lists, pipe tables, some code
fences, a blockquote now and then, and an FAQ section (questions as H3
headings or as bold ``**...?**`` paragraphs). The same seed always gives the
same bytes. Sizes are in decimal megabytes (10**6 bytes).
"""

from __future__ import annotations

import random
from pathlib import Path

__all__ = ["policy_markdown", "write_corpus"]

TOPICS = (
    "Annual Leave",
    "Expenses and Reimbursement",
    "Remote Working",
    "Data Protection",
    "Information Security",
    "Procurement",
    "Anti-Bribery",
    "Whistleblowing",
    "Travel",
    "Sickness Absence",
    "Parental Leave",
    "Loans to Members",
    "Savings Accounts",
    "Complaints Handling",
    "Records Retention",
    "Business Continuity",
    "Acceptable Use of IT",
    "Health and Safety",
    "Recruitment",
    "Conflicts of Interest",
)
FOLDERS = ("hr", "finance", "it", "governance", "members", "operations")
SUBJECTS = (
    "Employees",
    "Contractors",
    "Line managers",
    "The finance team",
    "New starters",
    "Staff on probation",
    "Part-time workers",
    "The HR department",
    "Team leads",
    "Members of the credit committee",
    "Budget holders",
    "The data protection officer",
    "Board members",
    "Branch staff",
)
VERBS = (
    "must submit",
    "may request",
    "should record",
    "are required to approve",
    "must not share",
    "can carry over",
    "are entitled to",
    "must report",
    "should review",
    "may delegate",
    "must retain",
    "are reimbursed for",
)
OBJECTS = (
    "itemised receipts",
    "annual leave requests",
    "personal data",
    "loan applications",
    "access credentials",
    "supplier quotations",
    "incident reports",
    "travel bookings",
    "fit notes",
    "declarations of interest",
    "overtime claims",
    "security patches",
    "account statements",
    "gifts and hospitality",
    "training records",
)
LIMITS = (
    "within {n} working days",
    "for up to {n} days a year",
    "no later than {n} weeks after the event",
    "above a limit of {n}00 pounds",
    "for at least {n} years",
    "at least {n} days in advance",
    "every {n} months",
    "up to {n} times per quarter",
)
CLAUSES = (
    "unless the director agrees otherwise in writing",
    "as set out in the staff handbook",
    "in line with the organisation's equality policy",
    "and the request is recorded in the HR system",
    "except during the year-end freeze",
    "where the budget holder has signed the form",
    "subject to the approval of the risk committee",
    "after consulting the compliance team",
    "provided that no conflict of interest arises",
    "following the procedure in the appendix",
)
CONNECTIVES = ("In addition,", "However,", "For clarity,", "Where possible,", "In practice,")
ASPECTS = (
    "Scope",
    "Eligibility",
    "Approval",
    "Limits",
    "Exceptions",
    "Records",
    "Responsibilities",
    "Monitoring",
    "Escalation",
    "Timescales",
    "Evidence",
    "Review",
)
QUESTIONS = (
    "Can I {verb} {obj} after the deadline?",
    "Who approves {obj}?",
    "What happens if I do not {verb} {obj}?",
    "How long do we keep {obj}?",
    "Does this policy apply to {subj}?",
    "Where do I send {obj}?",
)
LANGS = ("yaml", "json", "text", "sql")


def _sentence(rng: random.Random) -> str:
    subject = rng.choice(SUBJECTS)
    text = f"{subject} {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
    text += " " + rng.choice(LIMITS).format(n=rng.randint(2, 30))
    if rng.random() < 0.6:
        text += ", " + rng.choice(CLAUSES)
    if rng.random() < 0.2:
        text = f"{rng.choice(CONNECTIVES)} {text[0].lower()}{text[1:]}"
    return text + "."


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(2, 7)))


def _bullets(rng: random.Random) -> str:
    numbered = rng.random() < 0.4
    items = []
    for i in range(rng.randint(3, 8)):
        marker = f"{i + 1}." if numbered else "-"
        items.append(f"{marker} {_sentence(rng)}")
    return "\n".join(items)


def _table(rng: random.Random) -> str:
    header = ("Grade", "Limit (GBP)", "Approver", "Notice", "Notes")[: rng.randint(3, 5)]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for _ in range(rng.randint(3, 14)):
        cells = [
            f"Band {rng.choice('ABCDEFG')}{rng.randint(1, 9)}",
            f"{rng.randint(1, 500) * 10:,}",
            rng.choice(SUBJECTS),
            f"{rng.randint(1, 12)} weeks",
            rng.choice(CLAUSES),
        ]
        rows.append("| " + " | ".join(cells[: len(header)]) + " |")
    return "\n".join(rows)


def _code(rng: random.Random) -> str:
    lang = rng.choice(LANGS)
    lines = [f"{rng.choice(OBJECTS).replace(' ', '_')}: {rng.randint(1, 90)}" for _ in range(4)]
    if lang == "sql":
        lines = [f"SELECT * FROM claims WHERE days_open > {rng.randint(5, 60)};"]
    return f"```{lang}\n" + "\n".join(lines) + "\n```"


def _blocks(rng: random.Random) -> list[str]:
    blocks = [_paragraph(rng)]
    for _ in range(rng.randint(0, 3)):
        roll = rng.random()
        if roll < 0.4:
            blocks.append(_paragraph(rng))
        elif roll < 0.7:
            blocks.append(_bullets(rng))
        elif roll < 0.85:
            blocks.append(_table(rng))
        elif roll < 0.93:
            blocks.append(_code(rng))
        else:
            blocks.append("> **Note:** " + _sentence(rng))
    return blocks


def _section(rng: random.Random, number: int) -> list[str]:
    out = [f"## {number}. {rng.choice(ASPECTS)} and {rng.choice(OBJECTS)}", *_blocks(rng)]
    for sub in range(1, rng.randint(1, 4) + 1):
        out += [f"### {number}.{sub} {rng.choice(ASPECTS)}", *_blocks(rng)]
        if rng.random() < 0.3:
            out += [f"#### {number}.{sub}.1 {rng.choice(ASPECTS)} in detail", *_blocks(rng)]
    return out


def _faq(rng: random.Random) -> list[str]:
    out = ["## Frequently asked questions"]
    for _ in range(rng.randint(3, 8)):
        question = rng.choice(QUESTIONS).format(
            verb=rng.choice(VERBS).split()[-1],
            obj=rng.choice(OBJECTS),
            subj=rng.choice(SUBJECTS).lower(),
        )
        if rng.random() < 0.5:
            out += [f"### {question}", _paragraph(rng)]
        else:
            out += [f"**{question}**", _paragraph(rng)]
    return out


def policy_markdown(rng: random.Random, *, target_bytes: int, title: str) -> str:
    """Return one policy document of about ``target_bytes`` UTF-8 bytes.

    Args:
        rng: The source of randomness (seeded by the caller).
        target_bytes: The size to reach; the last section may overshoot it.
        title: The H1 title.

    Returns:
        Markdown text ending with a newline.
    """
    parts = [f"# {title}", _paragraph(rng)]
    size = sum(len(p) + 2 for p in parts)
    number = 1
    faq_at = rng.randint(2, 6)
    while size < target_bytes:
        new = _faq(rng) if number == faq_at else _section(rng, number)
        parts += new
        size += sum(len(p) + 2 for p in new)
        number += 1
    return "\n\n".join(parts) + "\n"


def write_corpus(
    root: Path, *, megabytes: float, seed: int = 0, min_kb: int = 6, max_kb: int = 60
) -> list[Path]:
    """Write ``.md`` files totalling at least ``megabytes`` MB under ``root``.

    Args:
        root: The directory to fill (created if missing); files go in subfolders.
        megabytes: Total size to reach, in units of 10**6 bytes.
        seed: The same seed gives the same files, byte for byte.
        min_kb: Smallest target size of one file, in kB.
        max_kb: Largest target size of one file, in kB.

    Returns:
        The written paths, in the order written.
    """
    rng = random.Random(seed)
    budget = int(megabytes * 1_000_000)
    paths: list[Path] = []
    written = 0
    while written < budget:
        topic = rng.choice(TOPICS)
        folder = root / rng.choice(FOLDERS)
        folder.mkdir(parents=True, exist_ok=True)
        slug = topic.lower().replace(" ", "-")
        path = folder / f"{slug}-{len(paths):04d}.md"
        target = min(rng.randint(min_kb, max_kb) * 1000, budget - written + 500)
        text = policy_markdown(rng, target_bytes=target, title=f"{topic} Policy")
        data = text.encode("utf-8")
        path.write_bytes(data)
        paths.append(path)
        written += len(data)
    return paths
