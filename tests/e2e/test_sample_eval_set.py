"""The sample corpus answers its own evaluation set, and the binary samples are reproducible.

Plain Python on purpose: these checks must not depend on the project's loaders, so that a
loader bug cannot hide a broken eval set (or the other way round).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from functools import cache
from pathlib import Path

import docx
import pytest
from bs4 import BeautifulSoup
from pypdf import PdfReader

from tests.support import eval_sets
from tests.support.eval_sets import normalise
from tests.support.paths import ROOT

POLICIES = ROOT / "data" / "policies"
QUESTIONS = ROOT / "data" / "eval" / "questions.jsonl"
SCRIPT = ROOT / "scripts" / "make_sample_docs.py"
GENERATED = ("credit-committee-procedures.pdf", "member-dividend-policy.docx")


def pdf_text(path: Path) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(path).pages)


def docx_text(path: Path) -> str:
    document = docx.Document(str(path))
    parts = [p.text for p in document.paragraphs]
    parts += [cell.text for table in document.tables for row in table.rows for cell in row.cells]
    return "\n".join(parts)


@cache
def document_text(relative: str) -> str:
    """Return the normalised, indexable text of one corpus file."""
    path = POLICIES / relative
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        text = pdf_text(path)
    elif suffix == ".docx":
        text = docx_text(path)
    elif suffix in {".html", ".htm"}:
        soup = BeautifulSoup(path.read_text(encoding="utf-8"), "lxml")
        for tag in soup(["script", "style"]):
            tag.decompose()
        text = soup.get_text(" ")
    else:
        text = path.read_text(encoding="utf-8")
    return normalise(text)


def load_questions() -> list[dict[str, object]]:
    return eval_sets.load_questions(QUESTIONS)


def gold_entries() -> list[tuple[str, dict[str, str]]]:
    return eval_sets.gold_entries(QUESTIONS)


def test_questions_are_well_formed() -> None:
    questions = load_questions()
    ids = [q["id"] for q in questions]
    assert len(questions) >= 70
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]
    for q in questions:
        assert set(q) - {"answer", "follow_up"} == {"id", "question", "kind", "gold"}, q
        eval_sets.assert_follow_up(q, {other["question"] for other in questions})
        assert re.fullmatch(r"q\d{3}", str(q["id"])), q["id"]
        assert q["kind"] in eval_sets.KINDS, q
        assert isinstance(q["question"], str), q
        assert len(q["question"].split()) >= 3, q
        gold = q["gold"]
        assert isinstance(gold, list)
        if q["kind"] == "unanswerable":
            assert gold == [], q
        else:
            assert gold, q
        if q["kind"] == "multi":
            assert len(gold) >= 2, q


def test_answerable_questions_have_a_reference_answer() -> None:
    for q in load_questions():
        if q["kind"] == "unanswerable":
            assert "answer" not in q, q
        else:
            answer = q.get("answer")
            assert isinstance(answer, str), q
            assert answer.strip(), q


def test_every_kind_is_represented_in_the_planned_mix() -> None:
    counts = Counter(str(q["kind"]) for q in load_questions())
    assert counts["fact"] >= 25
    assert counts["broad"] >= 8
    assert counts["multi"] >= 6
    assert counts["paraphrase"] >= 10
    assert counts["unanswerable"] >= 10


@pytest.mark.parametrize(("qid", "entry"), eval_sets.gold_params(QUESTIONS))
def test_gold_phrase_occurs_in_gold_file(qid: str, entry: dict[str, str]) -> None:
    assert set(entry) == {"file", "heading_path", "must_contain"}
    relative = entry["file"]
    assert "\\" not in relative, relative
    assert not relative.startswith("/"), relative
    assert (POLICIES / relative).is_file(), f"{qid}: {relative} does not exist"
    phrase = entry["must_contain"]
    assert 3 <= len(phrase.split()) <= 8, f"{qid}: phrase should be 3-8 words: {phrase!r}"
    assert normalise(phrase) in document_text(relative), f"{qid}: {phrase!r} not in {relative}"


def test_gold_files_cover_every_format() -> None:
    suffixes = {Path(entry["file"]).suffix for _, entry in gold_entries()}
    assert {".md", ".txt", ".html", ".pdf", ".docx"} <= suffixes


def test_no_gold_points_at_the_superseded_loan_policy() -> None:
    assert all(not entry["file"].startswith("archive/") for _, entry in gold_entries())


def test_current_and_archived_loan_policies_disagree_on_the_emergency_rate() -> None:
    current = document_text("loan-policy.md")
    archived = document_text("archive/loan-policy-2023.md")
    assert "supersedes: archive/loan-policy-2023.md" in current
    assert "emergency loans carry interest at 12% per annum" in current
    assert "emergency loans carry interest at 15% per annum" in archived
    assert "12% per annum" not in archived


def test_html_script_and_style_are_not_indexable() -> None:
    raw = (POLICIES / "mobile-banking-terms.html").read_text(encoding="utf-8")
    assert "SCRIPT-TRACKER-MARKER" in raw
    assert "SITE-THEME-MARKER" in raw
    text = document_text("mobile-banking-terms.html")
    assert "marker" not in text
    assert "trackpageview" not in text


def test_corpus_size_and_formats() -> None:
    files = sorted(p for p in POLICIES.rglob("*") if p.is_file())
    assert 20 <= len(files) <= 24
    assert {p.suffix for p in files} == {".md", ".txt", ".html", ".pdf", ".docx"}


def test_pdf_has_pages_and_an_outline() -> None:
    reader = PdfReader(POLICIES / "credit-committee-procedures.pdf")
    assert len(reader.pages) >= 3
    top = [str(item["/Title"]) for item in reader.outline if not isinstance(item, list)]
    assert top == ["Credit Committee Procedures"]
    nested = reader.outline[1]
    assert isinstance(nested, list)
    second = [str(item["/Title"]) for item in nested if not isinstance(item, list)]
    assert "Appeals" in second
    assert "Insider Loans" in second


def test_docx_uses_heading_styles_a_table_and_bullets() -> None:
    document = docx.Document(str(POLICIES / "member-dividend-policy.docx"))
    styles = Counter(p.style.name if p.style else "" for p in document.paragraphs)
    assert styles["Heading 1"] == 1
    assert styles["Heading 2"] >= 5
    assert styles["List Bullet"] >= 3
    assert len(document.tables) == 1


def test_generator_reproduces_the_committed_binaries(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    assert pdf_text(tmp_path / GENERATED[0]) == pdf_text(POLICIES / GENERATED[0])
    assert docx_text(tmp_path / GENERATED[1]) == docx_text(POLICIES / GENERATED[1])
    for name in GENERATED:
        assert (tmp_path / name).read_bytes() == (POLICIES / name).read_bytes(), name
