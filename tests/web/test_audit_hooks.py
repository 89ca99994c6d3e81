"""The chat's audit hooks without a browser: records, thumbs, and a conversation to keep."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from assistant.audit.log import AuditLog
from assistant.session import Desk
from assistant.types import DocMeta
from assistant.web.feedback import RECORD_PREFIX, ChatAudit, record_id_at
from assistant.web.format import unlinked_markers
from assistant.web.history import conversation_html, conversation_markdown
from assistant.web.ui import make_responder
from tests.support.ui_fakes import FakeService, loan_hit

QUESTION = "What is the emergency loan interest rate?"


def answer_messages(
    audit: ChatAudit | None, service: FakeService | None = None, doc_meta: Any = None
) -> list[Any]:
    desk = Desk(service or FakeService(), log=audit.log if audit else None, doc_meta=doc_meta)
    respond = make_responder(desk, audit=audit)
    *_, final = respond(QUESTION, [], ["loan-policy.md"], [], 3)
    return final


def as_history(messages: list[Any]) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "user", "content": QUESTION, "metadata": None}]
    for message in messages:
        history.append(
            {
                "role": "assistant",
                "content": message.content,
                "metadata": dict(message.metadata or {}),
            }
        )
    return history


def test_an_answer_is_recorded_and_its_message_carries_the_record_id(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.sqlite3")
    audit = ChatAudit(log)
    body, *_ = answer_messages(
        audit, doc_meta=lambda source: DocMeta(title="Loan Policy", version="3")
    )
    assert body.metadata["id"].startswith(RECORD_PREFIX)
    assert "title" not in body.metadata  # still shown as the answer, not as a collapsed box
    assert log.flush()
    ((record, feedback),) = log.store.records()
    log.close()
    assert body.metadata["id"] == RECORD_PREFIX + record.record_id
    assert record.question == QUESTION
    assert record.user == "anonymous"
    assert record.filters.sources == ("loan-policy.md",)
    assert record.answer == unlinked_markers(str(body.content))  # the text, not the links
    assert record.sources[0].version == "3"
    assert record.sources[0].cited
    assert "ui total" in dict(record.timings_ms)
    assert feedback is None


def test_without_an_audit_log_the_answer_message_has_no_id() -> None:
    body, *_ = answer_messages(None)
    assert not body.metadata


def test_a_thumb_on_the_answer_or_its_sources_finds_the_record(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.sqlite3")
    audit = ChatAudit(log)
    history = as_history(answer_messages(audit))
    record_id = history[1]["metadata"]["id"][len(RECORD_PREFIX) :]
    assert record_id_at(history, 1) == record_id
    assert record_id_at(history, 2) == record_id  # the sources message of the same answer
    assert record_id_at(history, 0) == ""  # the question itself
    assert record_id_at(history, 99) == ""
    from assistant.types import ANONYMOUS
    from assistant.web.feedback import owner_of

    # Asked without a login or session here: only that same asker may rate it (issue 27, D7).
    amina, me = ANONYMOUS, owner_of(ANONYMOUS, None)
    assert audit.rate(history, 1, True, user=amina, owner=me)[0] == record_id
    assert log.flush()
    assert log.store.records()[0][1].rating == "up"  # type: ignore[union-attr]
    audit.rate(history, 1, "", user=amina, owner=me)  # clicked off again
    assert log.flush()
    assert log.store.records()[0][1] is None
    audit.rate(history, 2, False, user=amina, owner=me)
    audit.explain(
        record_id, " the fee is wrong ", "No fee on emergency loans.", user=amina, owner=me
    )
    assert log.flush()
    feedback = log.store.records()[0][1]
    log.close()
    assert feedback is not None
    assert (feedback.rating, feedback.reason, feedback.correction, feedback.user) == (
        "down",
        "the fee is wrong",
        "No fee on emergency loans.",
        ANONYMOUS.name,
    )


def test_the_exported_conversation_keeps_every_citation() -> None:
    second = loan_hit(
        rank=2,
        source="fees-and-charges.md",
        title="Schedule of Fees and Charges",
        heading_path=("Schedule of Fees and Charges", "Fee Table"),
        anchor="fee-table",
        body="Loan processing fee: 1% of the loan amount.",
        effective_date="2026-01-01",
        page=4,
    )
    service = FakeService(
        deltas=("Interest is 12% [1]; ", "the fee is 1% [2]."), hits=(loan_hit(), second)
    )
    history = as_history(answer_messages(None, service))
    markdown = conversation_markdown(history, base_url="http://chat.example:7860/", title="Kept")
    page = conversation_html(history, base_url="http://chat.example:7860/", title="Kept")
    for text in (markdown, page):
        assert QUESTION in text
        assert "Interest is 12% [1]; the fee is 1% [2]." in text
        assert "Loan Policy" in text
        assert "Schedule of Fees and Charges" in text
        assert "page 4" in text
        assert "effective 2026-01-01" in text
        # Each link lands on the cited passage in the viewer.
        assert "http://chat.example:7860/doc/loan-policy.md?passage=Emergency%20Loans" in text
        assert "http://chat.example:7860/doc/fees-and-charges.md?passage=Loan%20processing" in text
        assert "prompt tokens" not in text  # the trace is not part of the conversation
    assert "Emergency Loans &gt; Interest" in page
    assert re.search(
        r'<a href="http://chat\.example:7860/doc/loan-policy\.md\?passage=[^"]*#cited">'
        "open section</a>",
        page,
    )
    assert "<script" not in page
