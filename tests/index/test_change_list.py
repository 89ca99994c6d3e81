"""What changed: the change list after adding, editing and removing documents; the webhook."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from assistant.cli.search import main
from assistant.config import AuditSettings, Settings, StoreSettings
from assistant.index.ingest import ingest
from assistant.types import Answer, ChangeKind, Citation, DocumentChange
from assistant.web.changes import ChangeFeed, recent_changes_markdown
from assistant.web.format import sources_markdown
from tests.conftest import FakeEmbedder
from tests.support.ui_fakes import loan_hit

LEAVE = """---
title: Leave Policy
version: "1"
effective_date: 2026-01-01
---
# Leave Policy

## Annual Leave

Staff get 21 working days of annual leave each year.

## Sick Leave

Staff get 14 days of paid sick leave with a doctor's note.
"""
TRAVEL = "# Travel Policy\n\n## Per Diem\n\nThe per diem is KES 4,000 a night.\n"
GIFTS = "# Gifts Policy\n\n## Limits\n\nNo gift above KES 5,000 may be accepted.\n"


def settings_for(index: Path, webhook: str = "") -> Settings:
    return Settings(store=StoreSettings(path=index), audit=AuditSettings(webhook=webhook))


def run(docs: Path, index: Path, webhook: str = "") -> tuple[DocumentChange, ...]:
    return ingest([docs], settings=settings_for(index, webhook), embedder=FakeEmbedder()).changes


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text(LEAVE)
    (docs / "travel.md").write_text(TRAVEL)
    return docs


def test_the_first_ingest_lists_every_document_as_added_with_its_sections(
    corpus: Path, tmp_path: Path
) -> None:
    changes = run(corpus, tmp_path / "index")
    assert [(c.source, c.change) for c in changes] == [
        ("leave.md", "added"),
        ("travel.md", "added"),
    ]
    leave = changes[0]
    assert leave.sections_added == (
        "Leave Policy",
        "Leave Policy > Annual Leave",
        "Leave Policy > Sick Leave",
    )
    assert (leave.new_version, leave.new_effective_date) == ("1", "2026-01-01")


def test_edits_additions_and_removals_are_listed_by_section(corpus: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    run(corpus, index)
    edited = (
        LEAVE.replace('version: "1"', 'version: "2"')
        .replace("2026-01-01", "2026-07-01")
        .replace("21 working days", "24 working days")
        + "\n## Parental Leave\n\nParents get 90 days.\n"
    )
    (corpus / "leave.md").write_text(edited)
    (corpus / "gifts.md").write_text(GIFTS)
    (corpus / "travel.md").unlink()
    changes = {c.source: c for c in run(corpus, index)}
    assert set(changes) == {"leave.md", "gifts.md", "travel.md"}
    leave = changes["leave.md"]
    assert leave.change == "edited"
    assert leave.sections_edited == ("Leave Policy > Annual Leave",)
    assert leave.sections_added == ("Leave Policy > Parental Leave",)
    assert leave.sections_removed == ()
    assert (leave.old_version, leave.new_version) == ("1", "2")
    assert (leave.old_effective_date, leave.new_effective_date) == ("2026-01-01", "2026-07-01")
    assert changes["gifts.md"].change == "added"
    travel = changes["travel.md"]
    assert travel.change == "removed"
    assert travel.sections_removed == ("Travel Policy", "Travel Policy > Per Diem")


def test_an_ingest_that_changes_nothing_lists_nothing(corpus: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    run(corpus, index)
    assert run(corpus, index) == ()
    rebuilt = ingest([corpus], settings=settings_for(index), embedder=FakeEmbedder(), rebuild=True)
    assert rebuilt.changes == ()  # re-chunked, same sections: no change


def test_a_removed_section_is_listed(corpus: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    run(corpus, index)
    cut = LEAVE.split("## Sick Leave")[0]
    (corpus / "leave.md").write_text(cut)
    (change,) = run(corpus, index)
    assert change.sections_removed == ("Leave Policy > Sick Leave",)
    assert change.sections_edited == ()


def test_the_changes_command_lists_them_as_text_and_json(corpus: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    run(corpus, index)
    (corpus / "leave.md").write_text(LEAVE.replace("14 days", "10 days"))
    run(corpus, index)
    out = io.StringIO()
    assert main(["changes", "--index", str(index), "--json"], environ={}, stdout=out) == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(x["source"], x["change"]) for x in lines][-1] == ("leave.md", "edited")
    assert lines[-1]["sections_edited"] == ["Leave Policy > Sick Leave"]
    text = io.StringIO()
    assert main(["changes", "--index", str(index)], environ={}, stdout=text) == 0
    first = text.getvalue().splitlines()[0]
    assert "edited" in first
    assert "Leave Policy (leave.md)" in first
    assert "~ Leave Policy > Sick Leave" in text.getvalue()
    later = io.StringIO()
    assert (
        main(["changes", "--index", str(index), "--since", "2999-01-01"], environ={}, stdout=later)
        == 0
    )
    assert later.getvalue().strip() == "No changes recorded."


class _Hook(BaseHTTPRequestHandler):
    bodies: ClassVar[list[dict[str, object]]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        type(self).bodies.append(json.loads(self.rfile.read(length)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        del format, args


@pytest.fixture
def hook() -> Iterator[tuple[str, list[dict[str, object]]]]:
    _Hook.bodies = []
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/changes", _Hook.bodies
    finally:
        server.shutdown()
        server.server_close()


def test_the_webhook_gets_the_change_list_only_when_something_changed(
    corpus: Path, tmp_path: Path, hook: tuple[str, list[dict[str, object]]]
) -> None:
    url, bodies = hook
    index = tmp_path / "index"
    run(corpus, index, webhook=url)
    assert len(bodies) == 1
    changes = bodies[0]["changes"]
    assert isinstance(changes, list)
    assert [c["source"] for c in changes] == ["leave.md", "travel.md"]
    run(corpus, index, webhook=url)
    assert len(bodies) == 1  # nothing changed, nothing posted


def test_a_failing_webhook_is_a_warning_and_the_ingest_succeeds(
    corpus: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="assistant.index.ingest"):
        changes = run(corpus, tmp_path / "index", webhook="http://127.0.0.1:9/nobody-listens")
    assert len(changes) == 2
    assert "change webhook" in caplog.text
    assert "ingest itself succeeded" in caplog.text


def test_a_citation_of_a_recently_changed_section_says_updated_on(tmp_path: Path) -> None:
    index = tmp_path / "index"
    index.mkdir()
    _write_changes(index, _first_ingest("2025-12-01"), _interest_edit("2026-11-20"))
    feed = ChangeFeed(index, days=400, today=lambda: dt.date(2026, 12, 1))
    hit = loan_hit()  # its own date, 2026-01-01, is after the first ingest
    answer = Answer("rate?", "12% [1].", (hit,), (Citation(1, hit),))
    assert "updated on 2026-11-20" in sources_markdown(answer, updated=feed.updated_on)
    stale = ChangeFeed(index, days=5, today=lambda: dt.date(2026, 12, 1))
    assert "updated on" not in sources_markdown(answer, updated=stale.updated_on)
    assert "Loan Policy" in recent_changes_markdown(feed.recent(), days=30)
    assert "Interest" in recent_changes_markdown(feed.recent(), days=30)


INTEREST = "Loan Policy > Loan Products > Emergency Loans > Interest"


def _first_ingest(day: str) -> DocumentChange:
    return _interest(f"{day}T09:00:00+00:00", "added")


def _interest_edit(day: str) -> DocumentChange:
    return _interest(f"{day}T10:00:00+00:00", "edited")


def _interest(time: str, kind: ChangeKind) -> DocumentChange:
    added = kind == "added"
    return DocumentChange(
        time=time,
        source="loan-policy.md",
        title="Loan Policy",
        change=kind,
        sections_added=(INTEREST,) if added else (),
        sections_edited=() if added else (INTEREST,),
    )


def _write_changes(index: Path, *changes: DocumentChange) -> None:
    lines = [json.dumps(asdict(c)) for c in changes]
    (index / "changes.jsonl").write_text("\n".join(lines) + "\n")


def test_a_first_ingest_is_indexed_not_updated_and_not_listed_as_added(tmp_path: Path) -> None:
    index = tmp_path / "index"
    index.mkdir()
    _write_changes(index, _first_ingest("2026-11-30"))
    feed = ChangeFeed(index, days=30, today=lambda: dt.date(2026, 12, 1))
    hit = loan_hit()
    answer = Answer("rate?", "12% [1].", (hit,), (Citation(1, hit),))
    assert "updated on" not in sources_markdown(answer, updated=feed.updated_on)
    panel = recent_changes_markdown(feed.recent(), days=30, first=feed.first_ingest())
    assert "added" not in panel
    assert "No policy changed in the last 30 days." in panel
    assert "1 document indexed on 2026-11-30" in panel


def test_a_later_edit_says_updated_only_when_the_documents_own_date_agrees(
    tmp_path: Path,
) -> None:
    index = tmp_path / "index"
    index.mkdir()
    _write_changes(index, _first_ingest("2026-11-01"), _interest_edit("2026-11-20"))
    feed = ChangeFeed(index, days=60, today=lambda: dt.date(2026, 12, 1))
    for own, shown in (("2026-11-20", True), ("2025-09-10", False), ("", True)):
        hit = loan_hit(effective_date=own)
        answer = Answer("rate?", "12% [1].", (hit,), (Citation(1, hit),))
        text = sources_markdown(answer, updated=feed.updated_on)
        assert ("updated on 2026-11-20" in text) is shown, own
    panel = recent_changes_markdown(feed.recent(), days=60, first=feed.first_ingest())
    assert "Loan Policy: edited" in panel
    assert "1 document indexed on 2026-11-01" in panel
