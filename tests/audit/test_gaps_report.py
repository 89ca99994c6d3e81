"""The gaps report on a seeded audit log with known topics."""

from __future__ import annotations

import argparse
import base64
import io
import re
from pathlib import Path

import numpy as np

from assistant.audit.log import AuditLog
from assistant.audit.report import build_report, cluster, report_html
from assistant.cli.report import run_report
from assistant.config import Settings, StoreSettings
from assistant.types import AuditRecord, AuditSource, Feedback, SearchFilters
from tests.conftest import FakeEmbedder

PARKING = (
    "Is staff parking free at the head office?",
    "Where is staff parking at the head office?",
    "Who pays for staff parking at the head office?",
)
GYM = (
    "Does the cooperative pay gym membership fees?",
    "Are gym membership fees refunded?",
    "Can I claim my gym membership fees?",
)
LOANS = (
    "What is the emergency loan interest rate?",
    "Emergency loan interest rate per annum?",
    "How much interest on an emergency loan?",
    "Emergency loan interest charged monthly?",
)
# The bag-of-words test embedder scores paraphrases lower than a real model does.
BOW = 0.4
DOCUMENTS = {
    "loan-policy.md": "Loan Policy",
    "hr/leave-policy.md": "Leave Policy",
    "procurement-policy.md": "Procurement Policy",
}


def seeded(n: int, question: str, *, day: int, answered: bool) -> AuditRecord:
    source = AuditSource(
        1,
        "loan-policy.md#3",
        "loan-policy.md",
        "Loan Policy",
        "Loan Policy > Interest",
        0,
        "2026-01-01",
        "3",
        0.8,
        answered,
    )
    return AuditRecord(
        record_id=f"r{n:03d}",
        time=f"2026-11-{day:02d}T09:00:00+00:00",
        user="anonymous",
        question=question,
        query=question,
        filters=SearchFilters(),
        sources=(source,),
        answer="...",
        mode="extractive" if answered else "no good match",
        no_match=not answered,
        not_covered=False,
    )


def seeded_rows() -> list[tuple[AuditRecord, Feedback | None]]:
    rows: list[tuple[AuditRecord, Feedback | None]] = []
    questions = [(q, False) for q in PARKING + GYM] + [(q, True) for q in LOANS]
    for n, (question, answered) in enumerate(questions):
        rows.append((seeded(n, question, day=1 + n % 3, answered=answered), None))
    record = rows[-1][0]
    rows[-1] = (
        record,
        Feedback(
            record.record_id,
            record.time,
            "anonymous",
            "down",
            reason="says monthly, policy says per annum",
            correction="12% per annum",
        ),
    )
    return rows


def test_unanswered_questions_group_into_their_known_topics() -> None:
    report = build_report(
        seeded_rows(), embedder=FakeEmbedder(256), documents=DOCUMENTS, threshold=BOW
    )
    assert report.asked == 10
    assert report.unanswered == 6
    groups = {frozenset(t.examples) for t in report.gaps}
    assert groups == {frozenset(PARKING), frozenset(GYM)}
    labels = {t.label for t in report.gaps}
    assert any("parking" in label for label in labels)
    assert any("gym" in label for label in labels)
    assert all(t.count == 3 for t in report.gaps)


def test_topics_cite_documents_and_the_uncited_ones_are_listed() -> None:
    report = build_report(
        seeded_rows(), embedder=FakeEmbedder(256), documents=DOCUMENTS, threshold=BOW
    )
    (loans,) = report.topics
    assert loans.count == 4
    assert "emergency" in loans.label
    assert loans.documents == (("Loan Policy", 4),)
    assert report.never_cited == (
        ("hr/leave-policy.md", "Leave Policy"),
        ("procurement-policy.md", "Procurement Policy"),
    )
    (disliked,) = report.disliked
    assert disliked.reason == "says monthly, policy says per annum"
    assert disliked.correction == "12% per annum"
    assert report.per_day == (
        ("2026-11-01", 2, 2),
        ("2026-11-02", 1, 2),
        ("2026-11-03", 1, 2),
    )


def test_clusters_of_orthogonal_directions_are_found() -> None:
    rng = np.random.default_rng(7)
    centres = np.eye(8, dtype=np.float32)[:3]
    rows = np.concatenate([c + 0.05 * rng.standard_normal((5, 8)) for c in centres])
    order = rng.permutation(len(rows))
    groups = cluster(rows[order].astype(np.float32), threshold=0.6)
    found = sorted(sorted(int(order[i]) // 5 for i in g) for g in groups)
    assert found == [[0] * 5, [1] * 5, [2] * 5]


def test_the_report_command_writes_html_with_an_embedded_chart(tmp_path: Path) -> None:
    settings = Settings(store=StoreSettings(path=tmp_path / "index"))
    log = AuditLog(settings.audit.audit_path(settings.store.path))
    for record, feedback in seeded_rows():
        log.record(record)
        if feedback:
            log.feedback(feedback)
    log.close()
    rows = log.store.records()
    out = io.StringIO()
    page = tmp_path / "report.html"
    args = argparse.Namespace(since="", html=page)
    assert run_report(args, settings, rows, out=out, embedder=FakeEmbedder(256)) == 0
    text = out.getvalue()
    assert "Questions: 10 (4 answered, 6 not answered)" in text
    assert "Is staff parking free at the head office?" in text
    html = page.read_text()
    png = re.search(r'src="data:image/png;base64,([^"]+)"', html)
    assert png is not None
    assert base64.b64decode(png[1]).startswith(b"\x89PNG")
    assert "says monthly, policy says per annum" in html
    assert "<script" not in report_html(build_report(rows, embedder=None, documents={}))


def test_the_packaged_embedding_model_finds_the_same_topics_at_the_default_threshold() -> None:
    from assistant.embeddings.factory import make_embedder

    embedder = make_embedder(Settings().embedding)
    report = build_report(seeded_rows(), embedder=embedder, documents=DOCUMENTS)
    assert {frozenset(t.examples) for t in report.gaps} == {frozenset(PARKING), frozenset(GYM)}
    assert [t.count for t in report.topics] == [4]
